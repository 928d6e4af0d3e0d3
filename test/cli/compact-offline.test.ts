import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, REPO, runCli, sessionFiles, tempHome } from './cli-process.js'
import { startDeepseek } from './deepseek-server.js'

beforeAll(() => ensureBuilt(), 120_000)

function onlyId(home: string): string {
  return (sessionFiles(home)[0] as string).replace('.jsonl', '')
}

function logLines(home: string, id: string): string[] {
  return readFileSync(join(home, 'sessions', `${id}.jsonl`), 'utf8').trim().split('\n')
}

describe('ISSUE-28 item 11: compact --script works offline', () => {
  it('compacts a DeepSeek session with a scripted summary, no key, nothing sent; --provider scripted is accepted too', async () => {
    const home = tempHome()
    // Long answers, so a short summary is smaller than the history it replaces.
    const long = (word: string) => ({ text: [`${word} `.repeat(300)] })
    const server = await startDeepseek([long('one'), long('two'), long('three')])
    try {
      for (const prompt of ['first question', 'second question', 'third question']) {
        const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', home, ...(prompt === 'first question' ? [] : ['-c']), prompt], {
          env: cliEnv(home, { DEEPSEEK_API_KEY: 'sk-test-compact' }),
        })
        expect(run.code, run.stderr).toBe(0)
      }
    } finally {
      await server.close()
    }
    const id = onlyId(home)
    const script = join(home, 'summary.json')
    writeFileSync(script, JSON.stringify([{ text: 'The user asked two questions; both were answered.' }]))
    // No DEEPSEEK_API_KEY and the server is gone: only the script can answer.
    const compacted = await runCli(['compact', id.slice(0, 8), '--script', script, '--keep', '1', '--json'], { env: cliEnv(home) })
    expect(compacted.code, compacted.stdout + compacted.stderr).toBe(0)
    expect(JSON.parse(compacted.stdout)).toMatchObject({ id, outcome: 'summarized' })
    const again = await runCli(['compact', id.slice(0, 8), '--provider', 'scripted', '--script', script, '--keep', '1'], { env: cliEnv(home) })
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain('nothing to compact')
    expect((await runCli(['verify', id], { env: cliEnv(home) })).code).toBe(0)
  }, 60_000)

  it('a setup failure is a usage error that writes nothing into the session', async () => {
    const home = tempHome()
    const script = join(home, 'chat.json')
    writeFileSync(script, JSON.stringify([{ text: 'a' }]))
    expect((await runCli(['run', '--script', script, '--root', home, 'hello'], { env: cliEnv(home) })).code).toBe(0)
    const id = onlyId(home)
    const before = logLines(home, id)
    const missing = await runCli(['compact', id, '--script', join(home, 'no-such-script.json')], { env: cliEnv(home) })
    expect(missing.code).toBe(2)
    const keyless = await runCli(['compact', id, '--provider', 'deepseek'], { env: cliEnv(home) })
    expect(keyless.code).toBe(2)
    expect(keyless.stderr).toContain('DEEPSEEK_API_KEY')
    expect(logLines(home, id)).toEqual(before)
  }, 60_000)

  it('the demo session compacts although its scratch tool root was removed when the demo ended', async () => {
    const home = tempHome()
    const demo = await runCli(['run', '--script', join(REPO, 'examples/scripts/demo.json'), 'Take notes'], { env: cliEnv(home) })
    expect(demo.code).toBe(0)
    const script = join(home, 'summary.json')
    writeFileSync(script, JSON.stringify([{ text: 'Notes were written, read back and listed.' }]))
    const compacted = await runCli(['compact', onlyId(home), '--script', script, '--keep', '1'], { env: cliEnv(home) })
    expect(compacted.code, compacted.stderr).toBe(0)
    expect(compacted.stdout).toContain('compacted: older history replaced by a summary')
    expect((await runCli(['replay', onlyId(home)], { env: cliEnv(home) })).code).toBe(0)
  }, 60_000)
})
