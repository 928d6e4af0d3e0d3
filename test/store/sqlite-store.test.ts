import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createHarness, scriptedAdapter, Session, type SessionEvent } from '../../src/index.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { bundleSqliteChild } from '../support/child-process-kit.js'
import { echoTool } from '../support/loop-fixture.js'

let root: string
let path: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'll-sqlite-'))
  path = join(root, 'sessions.db')
})
afterEach(() => {
  rmSync(root, { recursive: true, force: true })
})

const title = (seq: number): SessionEvent => ({ type: 'session/title', seq, time: seq, data: { title: String(seq) } })

function setLease(owner: object | null, expires: number): void {
  const db = new Database(path)
  db.prepare('UPDATE sessions SET lease_owner = ?, lease_expires = ?').run(owner === null ? null : JSON.stringify(owner), expires)
  db.close()
}

describe('SqliteStore', () => {
  it('creates a missing parent folder (0700) for its database', async () => {
    const nested = join(root, 'a', 'b', 'sessions.db')
    const store = new SqliteStore({ path: nested })
    await store.close()
    expect(statSync(join(root, 'a', 'b')).mode & 0o777).toBe(0o700)
    expect(statSync(nested).mode & 0o777).toBe(0o600)
  })

  it('uses WAL in a 0600 file (synchronous=FULL is set and read back on its own connection)', async () => {
    const store = new SqliteStore({ path })
    await store.close()
    expect(statSync(path).mode & 0o777).toBe(0o600)
    const db = new Database(path)
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal')
    db.close()
  })

  it('takes over the lease of a dead holder, and an expired lease; a live one gives SESSION_LOCKED', async () => {
    const store = new SqliteStore({ path })
    await (await store.create(new Session({ id: 's' }).header)).close()
    const dead = spawnSync(process.execPath, ['-e', '']).pid as number
    setLease({ pid: dead, hostname: hostname(), startedAt: 0, token: 'x' }, Date.now() + 60_000)
    await (await store.open('s')).writer.close()
    setLease({ pid: 1234, hostname: 'elsewhere.example', startedAt: 0, token: 'y' }, Date.now() + 60_000)
    await expect(store.open('s')).rejects.toMatchObject({ code: 'SESSION_LOCKED', message: expect.stringContaining('process 1234 on elsewhere.example') })
    setLease({ pid: 1234, hostname: 'elsewhere.example', startedAt: 0, token: 'y' }, Date.now() - 1)
    await (await store.open('s')).writer.close()
    await store.close()
  })

  it('a writer whose lease was taken over writes nothing and fails with SESSION_LOCKED', async () => {
    const store = new SqliteStore({ path })
    const writer = await store.create(new Session({ id: 's' }).header)
    writer.append(title(0))
    await writer.flush()
    setLease({ pid: 1234, hostname: 'elsewhere.example', startedAt: 0, token: 'thief' }, Date.now() + 60_000)
    writer.append(title(1))
    await expect(writer.flush()).rejects.toMatchObject({ code: 'SESSION_LOCKED' })
    expect((await store.read('s')).events).toHaveLength(1)
    await writer.close().catch(() => {})
    await store.close()
  })

  it('refuses a database that others can read, or that is not a ledgerloop store', () => {
    const db = new Database(path)
    db.exec('CREATE TABLE other (x)')
    db.close()
    chmodSync(path, 0o644)
    expect(() => new SqliteStore({ path })).toThrow(expect.objectContaining({ code: 'SESSION_PERMISSIONS' }))
    chmodSync(path, 0o600)
    expect(() => new SqliteStore({ path })).toThrow(expect.objectContaining({ code: 'SESSION_VERSION' }))
  })
})

it('a database written before the listing columns gets them, filled from its stored prompts and turn ends', async () => {
  const { createHarness, scriptedAdapter } = await import('../../src/index.js')
  const store = new SqliteStore({ path })
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: ['ok'] }) })] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm', sessionId: 'old' })
  agent.followup('an old   prompt')
  await agent.whenIdle()
  agent.followup('a second one')
  await agent.whenIdle()
  await harness.close()
  // Back to the columns of the first release.
  const db = new Database(path)
  db.exec('DROP INDEX sessions_by_update; ALTER TABLE sessions DROP COLUMN first_prompt; ALTER TABLE sessions DROP COLUMN turns; ALTER TABLE sessions DROP COLUMN last_reason; ALTER TABLE sessions DROP COLUMN quarantine; PRAGMA user_version = 1')
  db.close()
  const reopened = new SqliteStore({ path })
  expect(await reopened.list({ search: 'OLD' })).toEqual([expect.objectContaining({ id: 'old', title: 'an old prompt', firstPrompt: 'an old prompt', turns: 2, lastReason: 'completed' })])
  await reopened.close()
})

/** A child process that answers one line per database path it is sent (see sqlite-opener-child.ts). */
interface Opener {
  readonly process: ChildProcess
  next(): Promise<string>
}

function startOpener(script: string, name: string): Opener {
  const child = spawn(process.execPath, [script, name], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines: string[] = []
  const waiting: ((line: string) => void)[] = []
  let partial = ''
  child.stdout?.setEncoding('utf8').on('data', (text: string) => {
    const parts = (partial + text).split('\n')
    partial = parts.pop() as string
    for (const line of parts) (waiting.shift() ?? ((l: string) => lines.push(l)))(line)
  })
  child.once('exit', (code) => {
    for (const resolve of waiting.splice(0)) resolve(`EXIT ${code}`)
  })
  return { process: child, next: () => new Promise((resolve) => (lines.length > 0 ? resolve(lines.shift() as string) : waiting.push(resolve))) }
}

// Issue 22 item 3: processes that open one new database at the same moment all race to create the schema, add
// the listing columns and switch to WAL. Long-lived children are sent each round's fresh path together, so
// their opens overlap as closely as separate processes can.
it('4 processes opening, listing, writing and closing one new database at once, 20 rounds: none fails', async () => {
  const here = dirname(fileURLToPath(import.meta.url))
  const script = await bundleSqliteChild(join(here, 'sqlite-opener-child.ts'), root)
  const openers = Array.from({ length: 4 }, (_, i) => startOpener(script, `c${i}`))
  try {
    expect(await Promise.all(openers.map((o) => o.next()))).toEqual(['READY', 'READY', 'READY', 'READY'])
    const failures: string[] = []
    for (let round = 0; round < 20; round++) {
      const db = join(root, `round-${round}.db`)
      const answers = openers.map((o) => o.next())
      for (const o of openers) o.process.stdin?.write(`${db}\n`)
      for (const [i, answer] of (await Promise.all(answers)).entries()) if (answer !== 'ok') failures.push(`round ${round}, child ${i}: ${answer}`)
    }
    expect(failures).toEqual([])
    // Every round's database holds the four sessions, in the current schema.
    const last = new SqliteStore({ path: join(root, 'round-19.db') })
    expect((await last.list()).map((s) => s.id).sort()).toEqual(['c0', 'c1', 'c2', 'c3'])
    await last.close()
  } finally {
    for (const o of openers) o.process.kill('SIGKILL')
  }
}, 120_000)

/** A model that calls echo once, then answers; `requests` counts what it was asked. */
function echoOnce(requests = { n: 0 }): ReturnType<typeof scriptedAdapter> {
  return scriptedAdapter({
    script: (request) => {
      requests.n++
      return request.messages.at(-1)?.content[0]?.type === 'tool-result' ? { text: ['echoed ', 'and ', 'done'] } : { toolCalls: [{ name: 'echo', arguments: { text: 'x'.repeat(20_000) } }] }
    },
  })
}

// Issue 22 item 5: a sessions.next_seq that disagrees with the rows made every flush of a resumed session fail
// ("continues at seq 200, not 145") while verify said ok.
describe('a session whose next_seq disagrees with its rows', () => {
  for (const shift of [55, -3]) {
    it(`(next_seq ${shift > 0 ? '+' : ''}${shift}) is refused by read and by resume, before a turn starts or the model is called`, async () => {
      const store = new SqliteStore({ path })
      const harness = createHarness({ store, adapters: [echoOnce()], tools: [echoTool()] })
      const agent = await harness.createAgent({ provider: 'scripted', model: 'm', sessionId: 's' })
      agent.followup('first')
      await agent.whenIdle()
      await harness.close()
      const events = (await new SqliteStore({ path }).read('s')).events.length
      const db = new Database(path)
      db.prepare('UPDATE sessions SET next_seq = next_seq + ?').run(shift)
      const rows = db.prepare('SELECT count(*) AS n FROM events').get()
      db.close()

      const reader = new SqliteStore({ path })
      const message = new RegExp(`${path} \\(session 's'\\): the session row says the next seq is ${events + shift}, but its events hold seqs 0\\.\\.${events - 1} \\(${events} events\\)`)
      await expect(reader.read('s')).rejects.toMatchObject({ code: 'SESSION_CORRUPT', message: expect.stringMatching(message) })
      await reader.close()

      const requests = { n: 0 }
      const again = createHarness({ store: new SqliteStore({ path }), adapters: [echoOnce(requests)], tools: [echoTool()] })
      const logged: string[] = []
      again.hooks.on('session/event', ({ event }) => void logged.push(event.type))
      await expect(again.resumeAgent('s', { provider: 'scripted', model: 'm' })).rejects.toMatchObject({ code: 'SESSION_CORRUPT', message: expect.stringMatching(message) })
      expect(logged).toEqual([]) // no turn/start, nothing at all
      expect(requests.n).toBe(0)
      await again.close()
      // Refusing wrote nothing, and gave the lease back: a repaired counter makes the session usable again.
      const fix = new Database(path)
      expect(fix.prepare('SELECT count(*) AS n FROM events').get()).toEqual(rows)
      expect(fix.prepare('SELECT lease_owner FROM sessions').get()).toEqual({ lease_owner: null })
      fix.prepare('UPDATE sessions SET next_seq = ?').run(events)
      fix.close()
      const fixed = new SqliteStore({ path })
      expect((await fixed.read('s')).events).toHaveLength(events)
      await fixed.close()
    })
  }
})

// Issue 22 item 10: a full disk ended the turn UNKNOWN with a raw "SqliteError [SQLITE_FULL]". max_page_count is
// a setting of one connection, so the test sets it on the store's own connection (found through a spy on the
// pragma calls the store makes while it opens): SQLite then answers SQLITE_FULL as it would on a full disk.
it('a write refused with SQLITE_FULL ends the turn error with SESSION_WRITE_FAILED, runs no tool body, and the session resumes later', async () => {
  const spy = vi.spyOn(Database.prototype, 'pragma')
  const store = new SqliteStore({ path })
  const connection = spy.mock.contexts[0] as Database.Database
  spy.mockRestore()
  const calls: unknown[] = []
  const harness = createHarness({ store, adapters: [echoOnce()], tools: [echoTool(calls)], onListenerError: () => {} })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm', sessionId: 'full' })
  connection.pragma(`max_page_count = ${connection.pragma('page_count', { simple: true }) as number}`)
  agent.followup('fill the disk')
  await agent.whenIdle()
  const end = agent.session.events.at(-1)
  expect(end?.type).toBe('turn/end')
  expect(end?.data).toMatchObject({ reason: { kind: 'error', error: { code: 'SESSION_WRITE_FAILED', message: expect.stringContaining('SQLITE_FULL') } } })
  expect((end?.data as { reason: { error: { message: string } } }).reason.error.message).toContain(path)
  expect(calls).toEqual([]) // the flush before the tool body failed: the body never ran
  await harness.close().catch(() => {})
  // The failed batches rolled back: what is stored loads, its counter agrees, and a resume completes a turn.
  const later = createHarness({ store: new SqliteStore({ path }), adapters: [echoOnce()], tools: [echoTool(calls)] })
  const resumed = await later.resumeAgent('full', { provider: 'scripted', model: 'm' })
  resumed.followup('again, with room')
  await resumed.whenIdle()
  expect(resumed.session.events.at(-1)?.data).toMatchObject({ reason: { kind: 'completed' } })
  expect(calls).toHaveLength(1)
  await later.close()
})
