import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { Session, type SessionEvent } from '../../src/index.js'
import { SqliteStore } from '../../src/store/sqlite.js'

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
  db.exec('DROP INDEX sessions_by_update; ALTER TABLE sessions DROP COLUMN first_prompt; ALTER TABLE sessions DROP COLUMN turns; ALTER TABLE sessions DROP COLUMN last_reason')
  db.close()
  const reopened = new SqliteStore({ path })
  expect(await reopened.list({ search: 'OLD' })).toEqual([expect.objectContaining({ id: 'old', title: 'an old prompt', firstPrompt: 'an old prompt', turns: 2, lastReason: 'completed' })])
  await reopened.close()
})
