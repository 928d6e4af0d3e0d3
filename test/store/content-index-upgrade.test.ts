// Issue 30, target 6: the SQLite content index arrives with schema version 3 (since version 5 the store writes
// its texts, not a trigger on `events`). Databases of versions 1, 2 and 4 are migrated on open and their stored
// sessions become searchable; the migration is idempotent (a lost draft failed with "table content_fts already
// exists" on upgrade), so running it again, or over leftovers of an earlier attempt, ends in the same state.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, expect, it } from 'vitest'
import { createHarness, scriptedAdapter } from '../../src/index.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { migrateSchema, schemaState, SQLITE_SCHEMA_VERSION } from '../../src/store/sqlite/sqlite-schema.js'

let root: string
let path: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'll-content-upgrade-'))
  path = join(root, 'sessions.db')
})
afterEach(() => rmSync(root, { recursive: true, force: true }))

async function writeOld(): Promise<void> {
  const store = new SqliteStore({ path })
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: ['the Okapi ', 'answer'] }) })] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm', sessionId: 'old' })
  await agent.run('a prompt about Tapirs')
  await harness.close()
}

// Back to version 2: no content index (tables and triggers gone), user_version 2.
function downgradeToV2(db: Database.Database): void {
  db.exec(`DROP TRIGGER IF EXISTS events_content_insert; DROP TRIGGER events_content_delete; DROP TABLE content_fts; DROP TABLE content_text; PRAGMA user_version = 2`)
}

function contentRows(): number {
  const db = new Database(path, { readonly: true })
  try {
    return (db.prepare('SELECT count(*) AS n FROM content_text').get() as { n: number }).n
  } finally {
    db.close()
  }
}

async function expectSearchable(): Promise<void> {
  const store = new SqliteStore({ path })
  try {
    expect((await store.list({ grep: 'tapirs' })).map((r) => [r.id, r.match?.part])).toEqual([['old', 'prompt']])
    expect((await store.list({ grep: 'okapi answer' })).map((r) => [r.id, r.match?.part, r.match?.snippet])).toEqual([['old', 'answer', 'the Okapi answer']])
  } finally {
    await store.close()
  }
  const db = new Database(path, { readonly: true })
  expect(db.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION)
  db.close()
}

it('a version-2 database is migrated to the current version on open and its stored prompts and answers are found', async () => {
  await writeOld()
  const db = new Database(path)
  downgradeToV2(db)
  db.close()
  await expectSearchable()
  expect(contentRows()).toBe(2)
})

it('a version-2 database holding a leftover content_fts table of an earlier attempt migrates all the same', async () => {
  await writeOld()
  const db = new Database(path)
  downgradeToV2(db)
  db.exec("CREATE VIRTUAL TABLE content_fts USING fts5(body, session_id UNINDEXED, tokenize = 'trigram'); INSERT INTO content_fts VALUES ('stale draft row', 'old')")
  db.close()
  await expectSearchable()
  expect(contentRows()).toBe(2)
})

it('a version-1 database (before the quarantine column) is migrated through to the current version', async () => {
  await writeOld()
  const db = new Database(path)
  downgradeToV2(db)
  db.exec('ALTER TABLE sessions DROP COLUMN quarantine; PRAGMA user_version = 1')
  db.close()
  await expectSearchable()
})

it('running the migration again on a current database changes nothing and fails nothing', async () => {
  await writeOld()
  const db = new Database(path)
  // The current state redone from version 2 twice in a row, as two openers racing would if unguarded.
  for (let i = 0; i < 2; i++) db.transaction(() => migrateSchema(db, 'version-2'))()
  expect(schemaState(db, path)).toBe('current')
  db.close()
  expect(contentRows()).toBe(2)
  await expectSearchable()
})

it('sessions written after the upgrade are indexed by the store as they commit', async () => {
  await writeOld()
  const db = new Database(path)
  downgradeToV2(db)
  db.close()
  const store = new SqliteStore({ path })
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: ['fresh'] }) })] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm', sessionId: 'new' })
  await agent.run('about Dugongs')
  expect((await store.list({ grep: 'dugong' })).map((r) => r.id)).toEqual(['new'])
  await harness.close()
})

it('a version-4 database loses the trigger that extracted texts in SQL, and every text written after is stored once, by the store', async () => {
  await writeOld()
  const db = new Database(path)
  // A stand-in for version 4's extraction trigger: were it left in place, each new event would add a row it made.
  db.exec(`CREATE TRIGGER events_content_insert AFTER INSERT ON events BEGIN
      INSERT INTO content_text (session_id, seq, part, body) VALUES (NEW.session_id, NEW.seq, 'answer', 'made by the old trigger');
    END; PRAGMA user_version = 4`)
  db.close()
  const store = new SqliteStore({ path })
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: ['fresh Manatee answer'] }) })] })
  const agent = await harness.resumeAgent('old')
  await agent.run('about Dugongs')
  await harness.close()
  const check = new Database(path, { readonly: true })
  try {
    expect(check.pragma('user_version', { simple: true })).toBe(SQLITE_SCHEMA_VERSION)
    expect(check.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name = 'events_content_insert'").get()).toEqual({ n: 0 })
    expect(check.prepare("SELECT part, body FROM content_text WHERE session_id = 'old' ORDER BY seq").all()).toEqual([
      { part: 'prompt', body: 'a prompt about Tapirs' },
      { part: 'answer', body: 'the Okapi answer' },
      { part: 'prompt', body: 'about Dugongs' },
      { part: 'answer', body: 'fresh Manatee answer' },
    ])
  } finally {
    check.close()
  }
  await expectSearchable()
})
