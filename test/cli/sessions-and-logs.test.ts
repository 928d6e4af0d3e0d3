import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/session/events.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { cliEnv, ensureBuilt, finished, REPO, runCli, sessionFiles, startCli, tempHome, waitForOutput } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

const DEMO = join(REPO, 'examples/scripts/demo.json')
const RECOVERY = join(REPO, 'examples/scripts/recovery.json')

async function readSession(home: string, id: string): Promise<SessionEvent[]> {
  return (await new JsonlStore({ dir: join(home, 'sessions') }).read(id)).events
}

function ids(home: string): string[] {
  return sessionFiles(home).map((f) => f.replace('.jsonl', ''))
}

/** Starts a run whose model hangs, and resolves once its request is out (the session is live and locked). */
async function liveSession(home: string): Promise<{ child: ReturnType<typeof startCli>; id: string }> {
  const script = join(home, 'hang.json')
  writeFileSync(script, JSON.stringify([{ hang: true }]))
  const child = startCli(['run', '--script', script, '--root', home, '--json', 'hold on'], { env: cliEnv(home) })
  await waitForOutput(child, '"type":"request/context"')
  return { child, id: ids(home)[0] as string }
}

describe('ISSUE-11 defect 10: repairs are announced', () => {
  it('run --session on a log with a torn tail and an interrupted turn says so in one line each on stderr, and continues the turn', async () => {
    const home = tempHome()
    const { child, id } = await liveSession(home)
    // The events reach the file by group commit shortly after they reach stdout: kill only once they are on disk.
    const file = join(home, 'sessions', `${id}.jsonl`)
    for (let i = 0; i < 200 && !readFileSync(file, 'utf8').includes('"request/context"'); i++) await new Promise((r) => setTimeout(r, 25))
    child.kill('SIGKILL')
    await finished(child)
    appendFileSync(join(home, 'sessions', `${id}.jsonl`), '{"type":"turn/e')
    const ok = join(home, 'ok.json')
    writeFileSync(ok, JSON.stringify([{ text: 'carried on' }, { text: 'back again' }]))
    const run = await runCli(['run', '--script', ok, '--session', id.slice(0, 8), 'continue'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    const lines = run.stderr.trim().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[0]).toMatch(new RegExp(`^ledgerloop: repaired session ${id}: cut off an incomplete write at its end \\(line \\d+, 15 bytes`))
    expect(lines[1]).toBe('ledgerloop: turn 1 was interrupted (the process stopped mid-turn); continuing it as turn 2')
    expect(run.stdout).toContain('carried on')
    expect(run.stdout).toContain('back again')
  }, 60_000)
})

describe('ISSUE-11 defect 11: live sessions', () => {
  it('verify and fork on a session another process holds say it is in use, by which pid and host', async () => {
    const home = tempHome()
    const { child, id } = await liveSession(home)
    try {
      const verify = await runCli(['verify', id], { env: cliEnv(home) })
      expect(verify.code).toBe(1)
      expect(verify.stderr).toContain(`session '${id}' is in use by process ${String(child.pid)} on `)
      expect(verify.stdout).not.toContain('problem')
      const fork = await runCli(['fork', id.slice(0, 6)], { env: cliEnv(home) })
      expect(fork.code).toBe(1)
      expect(fork.stderr).toContain(`is in use by process ${String(child.pid)}`)
      expect(ids(home)).toEqual([id])
    } finally {
      child.kill('SIGINT')
      await finished(child)
    }
    const after = await runCli(['verify', id], { env: cliEnv(home) })
    expect(after.code).toBe(0)
  }, 60_000)
})

describe('ISSUE-11 defect 8: who decided', () => {
  it('--yes is logged as by: flag, the scratch folder auto-approval as by: auto, and inspect shows both', async () => {
    const home = tempHome()
    const root = join(home, 'work')
    mkdirSync(root)
    const withYes = await runCli(['run', '--script', DEMO, '--root', root, '--yes', 'Take notes'], { env: cliEnv(home) })
    expect(withYes.code).toBe(0)
    const [yesId] = ids(home)
    const yesDecision = (await readSession(home, yesId as string)).find((e) => e.type === 'permission/decision' && (e.data as { tool: string }).tool === 'write_file')
    expect(yesDecision?.data).toMatchObject({ decision: 'allow', by: 'flag', answer: 'yes' })
    const inspectYes = await runCli(['inspect', (yesId as string).slice(0, 8)], { env: cliEnv(home) })
    expect(inspectYes.stdout).toMatch(/tool write_file notes\.md · .* \(allow by flag\)/)

    const scratch = await runCli(['run', '--script', DEMO, 'Take notes'], { env: cliEnv(home) })
    expect(scratch.code).toBe(0)
    const autoId = ids(home).find((i) => i !== yesId) as string
    const autoDecision = (await readSession(home, autoId)).find((e) => e.type === 'permission/decision' && (e.data as { tool: string }).tool === 'write_file')
    expect(autoDecision?.data).toMatchObject({ decision: 'allow', by: 'auto' })
    // Defect 12: the scratch folder of a scripted demo is removed when the run ends.
    const folder = /tools in (\S+) \(scratch folder/.exec(scratch.stdout)?.[1] as string
    expect(folder).toMatch(/ledgerloop-demo-/)
    expect(existsSync(folder)).toBe(false)
  }, 90_000)
})

describe('ISSUE-11 defect 9: inspect separates retry waits from attempts', () => {
  it("a retried request shows its own duration and the wait before it apart", async () => {
    const home = tempHome()
    const root = join(home, 'work')
    mkdirSync(root)
    const run = await runCli(['run', '--script', RECOVERY, '--root', root, '--yes', 'Set the config'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    const [id] = ids(home)
    const events = await readSession(home, id as string)
    const retry = events.find((e) => e.type === 'llm/retry') as SessionEvent
    const delayMs = (retry.data as { delayMs: number }).delayMs
    const shown = await runCli(['inspect', id as string, '--json'], { env: cliEnv(home) })
    const tree = JSON.parse(shown.stdout) as { turns: { steps: { requests: { firstSeq: number; lastSeq: number; durationMs: number; retryWaitMs?: number }[] }[] }[] }
    const requests = tree.turns.flatMap((t) => t.steps.flatMap((s) => s.requests))
    const retried = requests.find((r) => r.retryWaitMs !== undefined)
    expect(retried?.retryWaitMs).toBe(delayMs)
    const lastChunk = events[retried?.lastSeq as number] as SessionEvent
    // The attempt starts when the wait is over: wait + attempt = from the retry event to the last chunk.
    expect((retried?.durationMs as number) + delayMs).toBe(lastChunk.time - retry.time)
    const text = await runCli(['inspect', id as string], { env: cliEnv(home) })
    expect(text.stdout).toMatch(/\(waited \d+ ms to retry\) request scripted\/scripted · \d+ ms · tool-calls/)
  }, 60_000)
})

describe('ISSUE-11 defect 12 (config) and read-only commands', () => {
  it('config --json keeps status and path apart; config validates provider names; a broken config file does not block sessions, inspect or verify', async () => {
    const home = tempHome()
    const shown = JSON.parse((await runCli(['config', '--json'], { env: cliEnv(home) })).stdout) as { configFile: string; configFileStatus: string }
    expect(shown.configFile).toBe(join(home, 'config.json'))
    expect(shown.configFileStatus).toBe('not present')
    const unknown = await runCli(['config'], { env: cliEnv(home, { LEDGERLOOP_PROVIDER: 'deepsek' }) })
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("unknown provider 'deepsek' (from LEDGERLOOP_PROVIDER)")

    const root = join(home, 'work')
    mkdirSync(root)
    expect((await runCli(['run', '--script', DEMO, '--root', root, '--yes', 'Take notes'], { env: cliEnv(home) })).code).toBe(0)
    writeFileSync(join(home, 'config.json'), '{ "provider": ')
    const [id] = ids(home)
    for (const args of [['sessions'], ['inspect', id as string], ['verify', id as string]]) {
      const out = await runCli(args, { env: cliEnv(home) })
      expect(out.code, args.join(' ')).toBe(0)
      expect(out.stderr).toContain('warning: ignoring the config file')
    }
    // A command that would act on the config still refuses it.
    expect((await runCli(['run', '--script', DEMO, 'x'], { env: cliEnv(home) })).code).toBe(2)
  }, 90_000)
})

describe('session ids by prefix, --continue, --store', () => {
  it('a unique prefix works everywhere, an ambiguous one lists the candidates, -c resumes the newest', async () => {
    const home = tempHome()
    const script = join(home, 's.json')
    writeFileSync(script, JSON.stringify([{ text: 'one' }, { text: 'two' }, { text: 'three' }]))
    for (let i = 0; i < 2; i++) expect((await runCli(['run', '--script', script, '--root', home, `prompt ${i}`], { env: cliEnv(home) })).code).toBe(0)
    const [first] = ids(home) as [string]
    const sessions = JSON.parse((await runCli(['sessions', '--json'], { env: cliEnv(home) })).stdout) as { id: string; title: string }[]
    const newest = sessions[0]?.id as string
    expect(sessions.map((s) => s.title)).toEqual(['prompt 1', 'prompt 0'])
    const cont = await runCli(['run', '--script', script, '-c', 'and more'], { env: cliEnv(home) })
    expect(cont.code).toBe(0)
    expect(cont.stdout).toContain(`resumed ${newest}`)
    expect((await readSession(home, newest)).filter((e) => e.type === 'turn/end')).toHaveLength(2)

    for (const command of ['inspect', 'verify', 'replay']) {
      const out = await runCli([command, first.slice(0, 5)], { env: cliEnv(home) })
      expect(out.code, command).toBe(0)
    }
    // A twin of the first session whose id shares its first four characters makes that prefix ambiguous.
    const twin = `${first.slice(0, 4)}0000-0000-4000-8000-000000000000`
    const text = readFileSync(join(home, 'sessions', `${first}.jsonl`), 'utf8')
    writeFileSync(join(home, 'sessions', `${twin}.jsonl`), text.split(first).join(twin), { mode: 0o600 })
    const ambiguous = await runCli(['inspect', first.slice(0, 4)], { env: cliEnv(home) })
    expect(ambiguous.code).toBe(2)
    expect(ambiguous.stderr).toContain(`'${first.slice(0, 4)}' matches 2 sessions; type more of the id:`)
    expect(ambiguous.stderr).toContain(first)
    expect(ambiguous.stderr).toContain(twin)
    expect((await runCli(['verify', twin.slice(0, 6)], { env: cliEnv(home) })).code).toBe(0)
    const none = await runCli(['inspect', 'zzzz'], { env: cliEnv(home) })
    expect(none.code).toBe(2)
    expect(none.stderr).toContain("no session 'zzzz'")
  }, 90_000)

  it('--store sqlite:PATH keeps sessions in SQLite for run, sessions, inspect, verify and fork; an unreachable postgres:// store is a clear error without its password', async () => {
    const home = tempHome()
    const db = join(home, 'sessions.db')
    const store = `sqlite:${db}`
    const run = await runCli(['run', '--script', DEMO, '--root', home, '--yes', '--store', store, 'Take notes'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    expect(existsSync(db)).toBe(true)
    expect(sessionFiles(home)).toEqual([])
    const listed = JSON.parse((await runCli(['sessions', '--json', '--store', store], { env: cliEnv(home) })).stdout) as { id: string; turns: number }[]
    expect(listed).toHaveLength(1)
    const id = listed[0]?.id as string
    expect((await runCli(['inspect', id.slice(0, 6), '--store', store], { env: cliEnv(home) })).stdout).toContain(`session ${id}`)
    const verify = await runCli(['verify', id, '--store', store, '--json'], { env: cliEnv(home) })
    expect(JSON.parse(verify.stdout)).toMatchObject({ ok: true, problems: [] })
    const fork = await runCli(['fork', id, '--store', store], { env: cliEnv(home, { LEDGERLOOP_STORE: 'ignored-by-the-flag' }) })
    expect(fork.code).toBe(0)
    const viaEnv = JSON.parse((await runCli(['sessions', '--json'], { env: cliEnv(home, { LEDGERLOOP_STORE: store }) })).stdout) as unknown[]
    expect(viaEnv).toHaveLength(2)
    const pg = await runCli(['sessions', '--store', 'postgres://agent:s3cret-pw@127.0.0.1:1/nowhere'], { env: cliEnv(home) })
    expect(pg.code).toBe(1)
    expect(pg.stderr).toContain('STORE_UNAVAILABLE')
    expect(pg.stderr).not.toContain('s3cret-pw')
  }, 90_000)
})
