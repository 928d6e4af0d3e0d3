import { readFileSync, writeFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, JsonlStore, scriptedAdapter, type SessionStore } from '../../src/index.js'
import { cutOffMidTurn } from '../support/cut-off-turn.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { SQLITE_SCHEMA_VERSION } from '../../src/store/sqlite/sqlite-schema.js'
import { PostgresStore } from '../../src/store/postgres.js'
import { STORE_KINDS, useStoreKit, type StoreKit } from './store-kits.js'

// Issue 24, point 4: `store.list()` says which sessions are quarantined (`status: 'quarantined'` with the
// logged reason), on every store, from the log's quarantine marks; a forced resume lifts it.

/** Cuts a session off and resumes it with `quarantineAfter: 1`, which quarantines it. */
async function quarantine(kit: StoreKit, id: string): Promise<void> {
  await cutOffMidTurn(kit.store, id)
  const later = createHarness({ store: kit.another(), adapters: [scriptedAdapter({ script: [] })] })
  await expect(later.resumeAgent(id, { quarantineAfter: 1 })).rejects.toMatchObject({ code: 'SESSION_QUARANTINED' })
  await later.close()
}

async function rowOf(store: SessionStore, id: string): Promise<Record<string, unknown> | undefined> {
  return (await store.list()).find((s) => s.id === id) as Record<string, unknown> | undefined
}

describe.each(STORE_KINDS)('DURABLE-QUARANTINE in the listing: $name', (kind) => {
  const currentKit = useStoreKit(kind)

  it("lists a quarantined session with status 'quarantined' and its reason; a forced resume clears it", async () => {
    const kit = currentKit()
    await quarantine(kit, 'poisoned')
    const healthy = await kit.another().create({ version: 1, id: 'healthy', createdAt: Date.now(), cwd: '/w' })
    await healthy.close()
    const listed = await rowOf(kit.another(), 'poisoned')
    expect(listed).toMatchObject({ status: 'quarantined', quarantineReason: expect.stringMatching(/interrupted 1 times? in a row \(turns 1\)/) })
    expect(await rowOf(kit.another(), 'healthy')).not.toHaveProperty('status')
    // The search and a page carry it too (the same rows).
    expect((await kit.another().list({ search: 'poi', limit: 1 }))[0]).toMatchObject({ id: 'poisoned', status: 'quarantined' })
    // JSONL: a session index rebuilt from the logs finds it by reading the log's quarantine marks.
    const jsonl = kit.another()
    if (jsonl instanceof JsonlStore) expect((await jsonl.reindex()).find((s) => s.id === 'poisoned')).toMatchObject({ status: 'quarantined' })

    const harness = createHarness({ store: kit.another(), adapters: [scriptedAdapter({ script: [{ text: 'finished now' }] })] })
    const agent = await harness.resumeAgent('poisoned', { force: true, provider: 'scripted', model: 'm1' })
    await agent.whenIdle()
    // Lifted while the agent still holds the session, and after it let go.
    expect(await rowOf(kit.another(), 'poisoned')).not.toHaveProperty('status')
    await harness.close()
    const after = await rowOf(kit.another(), 'poisoned')
    expect(after).not.toHaveProperty('status')
    expect(after).not.toHaveProperty('quarantineReason')
    const rebuilt = kit.another()
    if (rebuilt instanceof JsonlStore) expect((await rebuilt.reindex()).find((s) => s.id === 'poisoned')).not.toHaveProperty('status')
  })
})

describe('listings written before the quarantine state was kept are upgraded', () => {
  const kits = Object.fromEntries(STORE_KINDS.map((k) => [k.name, k]))
  let kit: StoreKit | undefined
  afterEach(async () => {
    await kit?.cleanup()
    kit = undefined
  })

  it('JSONL: a version-1 session index is rebuilt from the logs (with a note), keeping its content witnesses', async () => {
    kit = (kits.JsonlStore as (typeof STORE_KINDS)[number]).make()
    await quarantine(kit, 'poisoned')
    const store = kit.another() as JsonlStore
    await store.list()
    // Back to the index format of the last release: version 1, entries without the quarantine fields.
    const path = store.indexPath
    const lines = readFileSync(path, 'utf8').split('\n')
    const header = JSON.parse(lines[0] as string) as Record<string, unknown>
    const body = lines
      .slice(1)
      .filter((l) => l !== '')
      .map((l) => {
        const { status: _s, quarantineReason: _q, ...rest } = JSON.parse(l) as Record<string, unknown>
        return JSON.stringify(rest) + '\n'
      })
      .join('')
    const witnessed = body.includes('"content":')
    writeFileSync(path, JSON.stringify({ ...header, version: 1, snapshotBytes: Buffer.byteLength(body) }) + '\n' + body)
    expect(witnessed).toBe(true)

    const listed = await kit.another().list()
    expect(listed.indexNote).toMatch(/written by an older version/)
    expect(listed.find((s) => s.id === 'poisoned')).toMatchObject({ status: 'quarantined', quarantineReason: expect.stringMatching(/interrupted/) })
    const rebuilt = readFileSync(path, 'utf8')
    expect(JSON.parse(rebuilt.split('\n')[0] as string)).toMatchObject({ version: 2 })
    expect(rebuilt).toContain('"content":')
    // Read as current from now on.
    expect((await kit.another().list()).indexNote).toBeUndefined()
  })

  it('SQLite: a version-1 database gets the quarantine column, filled from its stored quarantine marks', async () => {
    kit = (kits.SqliteStore as (typeof STORE_KINDS)[number]).make()
    await quarantine(kit, 'poisoned')
    const path = (kit.store as SqliteStore).path
    // Every instance is closed by now (the crashed one and the harness's): the file can be rewritten.
    const db = new Database(path)
    db.exec('ALTER TABLE sessions DROP COLUMN quarantine; PRAGMA user_version = 1')
    db.close()
    const reopened = new SqliteStore({ path })
    try {
      expect(await rowOf(reopened, 'poisoned')).toMatchObject({ status: 'quarantined', quarantineReason: expect.stringMatching(/interrupted/) })
    } finally {
      await reopened.close()
    }
    const check = new Database(path)
    expect(check.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION)
    check.close()
  })

  it('PostgreSQL: a "resume anyway" asked of an unowned session leaves it quarantined until a writer lifts it', async () => {
    const pg = kits.PostgresStore as (typeof STORE_KINDS)[number]
    await pg.setup?.()
    try {
      kit = pg.make()
      await quarantine(kit, 'poisoned')
      const store = kit.another() as PostgresStore
      expect(await store.forcedResume('poisoned', 'request')).toBe(true)
      expect(await rowOf(store, 'poisoned')).toMatchObject({ status: 'quarantined' })
      const harness = createHarness({ store: kit.another(), adapters: [scriptedAdapter({ script: [{ text: 'finished now' }] })] })
      const agent = await harness.resumeAgent('poisoned', { force: true, provider: 'scripted', model: 'm1' })
      await agent.whenIdle()
      await harness.close()
      expect(await rowOf(kit.another(), 'poisoned')).not.toHaveProperty('status')
    } finally {
      await kit?.cleanup()
      kit = undefined
      await pg.teardown?.()
    }
  })
})
