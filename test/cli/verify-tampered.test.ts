import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

describe('ledgerloop verify on hand-edited logs', () => {
  const home = tempHome()
  const env = cliEnv(home)
  let lines: string[] = []

  beforeAll(async () => {
    const script = join(home, 'two-steps.json')
    writeFileSync(script, JSON.stringify([{ toolCalls: [{ name: 'list', arguments: {} }] }, { text: ['All ', 'done ', 'here.'] }]))
    const run = await runCli(['run', '--script', script, 'look around'], { env })
    expect(run.code).toBe(0)
    const [file] = sessionFiles(home)
    lines = readFileSync(join(home, 'sessions', file as string), 'utf8').trimEnd().split('\n')
  }, 30_000)

  // Each copy in a folder of its own under the session's file name: a header naming another id than the file
  // is itself a defect (issue 22).
  const write = (name: string, content: string[]): string => {
    const id = (JSON.parse(content[0] as string) as { id: string }).id
    mkdirSync(join(home, name), { recursive: true })
    const path = join(home, name, `${id}.jsonl`)
    writeFileSync(path, `${content.join('\n')}\n`)
    return path
  }
  const seqOf = (line: string): number => (JSON.parse(line) as { seq: number }).seq

  it('accepts the untouched file, given by path', async () => {
    const run = await runCli(['verify', write('intact.jsonl', lines)], { env })
    expect(run.stdout).toMatch(/^ok /)
    expect(run.code).toBe(0)
  })

  it('names the seq of a changed assistant message', async () => {
    const at = lines.findIndex((l) => l.includes('"type":"assistant/message"') && l.includes('All done here.'))
    expect(at).toBeGreaterThan(0)
    const seq = seqOf(lines[at] as string)
    const edited = [...lines]
    edited[at] = (lines[at] as string).replace('All done here.', 'All done, nothing to see.')
    const run = await runCli(['verify', write('changed.jsonl', edited)], { env })
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(`seq ${seq} (assistant/message): content differs from what its`)
  })

  it('names the seq of a removed step/end', async () => {
    const at = lines.findIndex((l) => l.includes('"type":"step/end"'))
    const seq = seqOf(lines[at] as string)
    const edited = lines.filter((_, i) => i !== at)
    const run = await runCli(['verify', write('removed.jsonl', edited)], { env })
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(`seq ${seq} is missing`)
    // The grammar names the event that found the step still open.
    expect(run.stdout).toMatch(new RegExp(`seq ${seq + 1} \\(step/start\\): step 1 is still open`))
  })

  it('a changed tool result breaks the next request\'s reconstruction, named by its seq', async () => {
    const at = lines.findIndex((l) => l.includes('"type":"tool/result"'))
    const edited = [...lines]
    // Point the result at a call that was never made: the next request's history no longer pairs up.
    edited[at] = (lines[at] as string).replaceAll('call_1_1', 'call_9_9')
    const run = await runCli(['verify', write('result.jsonl', edited)], { env })
    expect(run.code).toBe(1)
    expect(run.stdout).toMatch(new RegExp(`seq ${seqOf(lines[at] as string)} \\(tool/result\\)`))
    expect(run.stdout).toMatch(/seq \d+ \(request of turn 1 step 2\): /)
  })
})
