import { cpSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, REPO, runCli, sessionFiles, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

const DEMO = join(REPO, 'examples/scripts/demo.json')

/**
 * Issue 22, items 6–8: what `sessions`, `inspect`, `verify` and `run -c` do with a damaged JSONL log. Every
 * case starts from a copy of one home holding a two-turn demo session, damages its file, and checks that the
 * commands agree and that nothing was written to the damaged file.
 */
describe('damaged JSONL logs: one judgement for inspect, verify and run -c', () => {
  let base = ''
  let id = ''
  let original = Buffer.alloc(0)

  beforeAll(async () => {
    base = tempHome()
    mkdirSync(join(base, 'work'))
    const env = cliEnv(base)
    expect((await runCli(['run', '--script', DEMO, '--root', join(base, 'work'), '--yes', 'Take notes'], { env })).code).toBe(0)
    expect((await runCli(['run', '-c', '--script', DEMO, '--root', join(base, 'work'), '--yes', 'More notes'], { env })).code).toBe(0)
    const [file] = sessionFiles(base)
    id = (file as string).replace('.jsonl', '')
    original = readFileSync(join(base, 'sessions', file as string))
  }, 60_000)

  /** A copy of the base home whose session file is `damage(original)`; returns the home and the file. */
  const damaged = (damage: (bytes: Buffer) => Buffer): { home: string; file: string; env: NodeJS.ProcessEnv } => {
    const home = tempHome()
    cpSync(base, home, { recursive: true })
    const file = join(home, 'sessions', `${id}.jsonl`)
    writeFileSync(file, damage(original), { mode: 0o600 })
    return { home, file, env: cliEnv(home) }
  }
  const lines = (bytes: Buffer): string[] => bytes.toString('utf8').split('\n')
  const joined = (text: string[]): Buffer => Buffer.from(text.join('\n'), 'utf8')
  const cont = (env: NodeJS.ProcessEnv, home: string) => runCli(['run', '-c', '--script', DEMO, '--root', join(home, 'work'), '--yes', 'and more'], { env })

  /** inspect, verify and run -c all refuse with the same first problem; the file is left byte for byte. */
  async function refusedByAll(damage: (bytes: Buffer) => Buffer, where: RegExp): Promise<void> {
    const { home, file, env } = damaged(damage)
    const before = readFileSync(file)
    const inspect = await runCli(['inspect', id], { env })
    expect(inspect.code, inspect.stderr).toBe(1)
    expect(inspect.stderr).toMatch(/\(SESSION_CORRUPT\)\n$/)
    const problem = inspect.stderr.replace(/^ledgerloop: /, '').replace(/ \(SESSION_CORRUPT\)\n$/, '')
    expect(problem).toMatch(where)
    const verify = await runCli(['verify', id], { env })
    expect(verify.code).toBe(1)
    expect(verify.stdout).toContain(`  ${problem}\n`)
    const run = await cont(env, home)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(`${problem} (SESSION_CORRUPT)`)
    expect(run.stdout).not.toContain('resumed')
    const sessions = await runCli(['sessions'], { env })
    expect(sessions.stdout).toContain(`(unreadable: ${problem})`)
    expect(readFileSync(file).equals(before)).toBe(true)
  }

  it('an empty line in the middle: inspect, verify and run -c refuse it, naming the line', async () => {
    await refusedByAll((bytes) => {
      const text = lines(bytes)
      text.splice(40, 0, '')
      return joined(text)
    }, new RegExp(`${id}\\.jsonl:41: line 41 is empty, and valid records follow it: the file is corrupt$`))
  }, 60_000)

  it('a header naming another session than the file: all three refuse it', async () => {
    await refusedByAll((bytes) => {
      const text = lines(bytes)
      text[0] = (text[0] as string).replace(id, '00000000-0000-4000-8000-000000000000')
      return joined(text)
    }, /\.jsonl:1: the header names session "00000000-0000-4000-8000-000000000000", expected '/)
  }, 60_000)

  it("a valid-JSON edit (a chunk's turn changed): all three refuse it, and run -c appends nothing", async () => {
    await refusedByAll((bytes) => {
      const text = lines(bytes)
      const at = text.findIndex((l) => l.includes('"type":"assistant/chunk"') && l.includes('reasoning-delta'))
      text[at] = (text[at] as string).replace('"turn":1', '"turn":2')
      return joined(text)
    }, /\.jsonl:\d+: seq \d+ \(assistant\/chunk\): names turn 2 step 1 but turn 1 step 1 is open$/)
  }, 60_000)

  const contentEdited = /\.jsonl: the file is not what its writer committed: its first \d+ bytes \(lines 1-\d+\) differ from what was committed \(the session index .* recorded their SHA-256\)\. .*`ledgerloop sessions --reindex` \(the index then records what the file holds\)$/
  it("a valid-JSON edit of content only (an assistant/message's text): all three refuse it, and run -c appends nothing", async () => {
    await refusedByAll((bytes) => {
      const text = lines(bytes)
      const at = text.findIndex((l) => l.includes('"type":"assistant/message"') && l.includes('"type":"text","text":"'))
      text[at] = (text[at] as string).replace('"type":"text","text":"', '"type":"text","text":"EDITED ')
      return joined(text)
    }, contentEdited)
  }, 60_000)

  it("a valid-JSON edit of a tool result's text: all three refuse it, and run -c appends nothing", async () => {
    await refusedByAll((bytes) => {
      const text = lines(bytes)
      const at = text.findIndex((l) => l.startsWith('{"type":"tool/result"') && l.includes('"text":"'))
      expect(at).toBeGreaterThan(0)
      text[at] = (text[at] as string).replace('"text":"', '"text":"EDITED ')
      return joined(text)
    }, contentEdited)
  }, 60_000)

  it('a torn last line is still repaired: verify says so and passes, run -c cuts it off and continues', async () => {
    const { home, env } = damaged((bytes) => Buffer.concat([bytes, Buffer.from('{"type":"turn/st')]))
    const verify = await runCli(['verify', id], { env })
    expect(verify.code).toBe(0)
    expect(verify.stdout).toMatch(/repaired on resume: .*\.jsonl:\d+: line \d+ has no newline \(a write cut short\): loading cuts off these 16 bytes/)
    const run = await cont(env, home)
    expect(run.code).toBe(0)
    expect(run.stderr).toContain('cut off an incomplete write at its end')
  }, 60_000)
})

describe('run -c and chat -c on a newest session that cannot be read', () => {
  // Two sessions: an older healthy one, and the newest one, which gets the damage.
  async function twoSessions(): Promise<{ home: string; env: NodeJS.ProcessEnv; older: string; newest: string }> {
    const home = tempHome()
    mkdirSync(join(home, 'work'))
    const env = cliEnv(home)
    const script = join(home, 's.json')
    writeFileSync(script, JSON.stringify([{ text: 'one' }, { text: 'two' }, { text: 'three' }]))
    expect((await runCli(['run', '--script', script, '--root', join(home, 'work'), 'older'], { env })).code).toBe(0)
    const [older] = sessionFiles(home) as [string]
    expect((await runCli(['run', '--script', script, '--root', join(home, 'work'), 'newest'], { env })).code).toBe(0)
    const newest = sessionFiles(home).find((f) => f !== older) as string
    // The older one's file is older for the listing too, whatever the clock's resolution.
    const past = new Date(Date.now() - 60_000)
    utimesSync(join(home, 'sessions', older), past, past)
    return { home, env, older: join(home, 'sessions', older), newest: join(home, 'sessions', newest) }
  }

  const headers: [string, (header: string) => string, string, RegExp][] = [
    ['another format version', (h) => h.replace('"version":1', '"version":2'), 'SESSION_VERSION', /:1: session format version 2 is not supported/],
    ['a garbage header', () => 'garbage!!', 'SESSION_CORRUPT', /:1: the header line is not JSON/],
    ['a byte-order mark', (h) => `\ufeff${h}`, 'SESSION_CORRUPT', /:1: the file starts with a byte-order mark/],
  ]
  for (const [what, damage, code, message] of headers) {
    it(`${what}: run -c refuses, naming the file and ${code}, and the older session is not continued instead`, async () => {
      const { home, env, older, newest } = await twoSessions()
      const text = readFileSync(newest, 'utf8').split('\n')
      text[0] = damage(text[0] as string)
      writeFileSync(newest, text.join('\n'), { mode: 0o600 })
      const [olderBefore, newestBefore] = [readFileSync(older), readFileSync(newest)]
      const run = await runCli(['run', '-c', '--script', join(home, 's.json'), 'and more'], { env })
      expect(run.code).toBe(1)
      expect(run.stderr).toContain(`--continue: the most recent session`)
      expect(run.stderr).toContain(newest)
      expect(run.stderr).toMatch(message)
      expect(run.stderr).toMatch(new RegExp(`\\(${code}\\)\\n$`))
      expect(run.stderr).not.toContain('there is no session to continue yet')
      expect(readFileSync(older).equals(olderBefore)).toBe(true)
      expect(readFileSync(newest).equals(newestBefore)).toBe(true)
    }, 60_000)
  }

  it('an empty file: run -c and chat -c refuse it with SESSION_CORRUPT naming the file', async () => {
    const { home, env, older, newest } = await twoSessions()
    writeFileSync(newest, '', { mode: 0o600 })
    const olderBefore = readFileSync(older)
    for (const command of ['run', 'chat']) {
      const run = await runCli([command, '-c', '--script', join(home, 's.json'), ...(command === 'run' ? ['and more'] : [])], { env, input: 'and more\n/exit\n' })
      expect(run.code, command).toBe(1)
      expect(run.stderr, command).toContain(`${newest}:1: the file is empty (no header line) (SESSION_CORRUPT)`)
      expect(readFileSync(older).equals(olderBefore), command).toBe(true)
      expect(readFileSync(newest).length, command).toBe(0)
    }
  }, 60_000)
})

describe('a log cut in the middle is not taken for a torn tail', () => {
  it('run -c refuses it, saying how much committed data is missing, and leaves the file alone; reindexing accepts the loss', async () => {
    const home = tempHome()
    mkdirSync(join(home, 'work'))
    const env = cliEnv(home)
    expect((await runCli(['run', '--script', DEMO, '--root', join(home, 'work'), '--yes', 'Take notes'], { env })).code).toBe(0)
    expect((await runCli(['run', '-c', '--script', DEMO, '--root', join(home, 'work'), '--yes', 'More notes'], { env })).code).toBe(0)
    const [name] = sessionFiles(home) as [string]
    const file = join(home, 'sessions', name)
    const whole = readFileSync(file)
    // Cut inside turn 1's last line, 18 bytes into it: it looks exactly like a torn last write.
    const text = whole.toString('utf8').split('\n')
    const cutAt = Buffer.byteLength(text.slice(0, 73).join('\n') + '\n') + 18
    writeFileSync(file, whole.subarray(0, cutAt), { mode: 0o600 })
    const cut = readFileSync(file)

    // A listing first: it must not replace the index's account of what was committed with the cut file's.
    const sessions = await runCli(['sessions'], { env })
    expect(sessions.stdout).toContain('committed data is missing')
    const run = await runCli(['run', '-c', '--script', DEMO, '--root', join(home, 'work'), '--yes', 'again'], { env })
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/committed data is missing: 2 ended turns, \d+ bytes \(the session index .* recorded \d+ bytes and 2 ended turns as committed/)
    expect(run.stderr).toContain('This is not an incomplete last write')
    expect(run.stderr).toContain('ledgerloop sessions --reindex')
    expect(run.stderr).toMatch(/\(SESSION_CORRUPT\)\n$/)
    expect(run.stderr).not.toContain('cut off an incomplete write')
    expect(readFileSync(file).equals(cut)).toBe(true)
    const verify = await runCli(['verify', name.replace('.jsonl', '')], { env })
    expect(verify.code).toBe(1)
    expect(verify.stdout).toContain('committed data is missing: 2 ended turns')
    const inspect = await runCli(['inspect', name.replace('.jsonl', '')], { env })
    expect(inspect.code).toBe(1)
    expect(readFileSync(file).equals(cut)).toBe(true)

    // Accepting the loss: the index records what the file holds, and the session continues from there.
    expect((await runCli(['sessions', '--reindex'], { env })).code).toBe(0)
    const accepted = await runCli(['run', '-c', '--script', DEMO, '--root', join(home, 'work'), '--yes', 'again'], { env })
    expect(accepted.code).toBe(0)
    expect(accepted.stderr).toContain('cut off an incomplete write at its end (line 74, 18 bytes')
  }, 90_000)
})
