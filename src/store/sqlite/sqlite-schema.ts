// The SQLite store's schema and its migrations: what a database holds, and how an older one is brought up to
// this build's version. Kept apart from the store so the append path and the schema's history do not share a file.
import type Database from 'better-sqlite3'
import { HarnessError } from '../../errors/harness-error.js'
import type { SessionEvent } from '../../session/events.js'
import { lastQuarantineMark, SessionDigest } from '../session-digest.js'
import { createContentIndex, dropContentExtractionTrigger } from './content-index.js'
import { RESUME_TABLE } from './sqlite-resume.js'

/** "LLOP": marks a database as a ledgerloop session store. */
const APPLICATION_ID = 0x4c4c4f50

/**
 * The schema version this build writes. 1: sessions and events (the listing columns were added in place);
 * 2: the `quarantine` listing column (an older build would write quarantines without keeping it, so it
 * refuses a version-2 database instead); 3: the content index (`content_text`, its FTS5 table `content_fts`
 * and the triggers that fill them from `events`; see sqlite/content-index.ts); 4: the `resume_checkpoints`
 * table (sqlite/sqlite-resume.ts); 5: the store writes `content_text` itself, in the flush's transaction, and
 * the trigger that extracted it from `events` in SQL is gone (an older build would write events without their
 * texts, so it refuses a version-5 database). Databases of versions 1 to 4 are migrated on open.
 */
export const SQLITE_SCHEMA_VERSION = 5

const SCHEMA = `
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  header TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  next_seq INTEGER NOT NULL,
  lease_owner TEXT,
  lease_expires INTEGER
) STRICT;
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  line TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) STRICT, WITHOUT ROWID;
`

/** What a database holds: nothing yet, version 1 without the listing columns, version 1 with them, versions 2 to 4, or the current schema. */
export type SchemaState = 'empty' | 'without-listing' | 'version-1' | 'version-2' | 'version-3' | 'version-4' | 'current'

/**
 * Reads the schema state of `db` (call inside a read transaction, so it is one snapshot).
 * @param path - names the file in errors
 * @throws HarnessError `SESSION_VERSION` for a database of something else, or of a newer build
 */
export function schemaState(db: Database.Database, path: string): SchemaState {
  const appId = db.pragma('application_id', { simple: true }) as number
  const version = db.pragma('user_version', { simple: true }) as number
  if (appId === 0 && version === 0) {
    const tables = db.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE type = 'table'").get() as { n: number }
    if (tables.n > 0) throw new HarnessError(`${path} is a database of something else (it has tables but no ledgerloop mark)`, 'SESSION_VERSION')
    return 'empty'
  }
  if (appId !== APPLICATION_ID) throw new HarnessError(`${path} is not a ledgerloop session database (application_id ${appId})`, 'SESSION_VERSION')
  if (version !== 1 && version !== 2 && version !== 3 && version !== 4 && version !== SQLITE_SCHEMA_VERSION) {
    throw new HarnessError(`${path} has session schema version ${version}; this build of ledgerloop reads version ${SQLITE_SCHEMA_VERSION}`, 'SESSION_VERSION')
  }
  if (version === SQLITE_SCHEMA_VERSION) return 'current'
  if (version === 4) return 'version-4'
  if (version === 3) return 'version-3'
  if (version === 2) return 'version-2'
  const columns = (db.prepare('PRAGMA table_info(sessions)').all() as { name: string }[]).map((c) => c.name)
  return columns.includes('first_prompt') ? 'version-1' : 'without-listing'
}

/**
 * Creates the schema, or migrates it from `state` up to {@link SQLITE_SCHEMA_VERSION}. Runs inside the
 * store's locked (BEGIN IMMEDIATE) transaction, which looked at the state again inside it.
 */
export function migrateSchema(db: Database.Database, state: SchemaState): void {
  if (state === 'current') return
  if (state === 'empty') {
    db.exec(SCHEMA)
    db.pragma(`application_id = ${APPLICATION_ID}`)
  }
  if (state === 'empty' || state === 'without-listing') addListingColumns(db)
  if (state !== 'version-2' && state !== 'version-3' && state !== 'version-4') addQuarantineColumn(db)
  if (state !== 'version-3' && state !== 'version-4') createContentIndex(db)
  // Version 4: resume checkpoints. A migrated session has none; its first open reads every row and writes one.
  db.exec(RESUME_TABLE)
  // Version 5: the content index's texts come from the store, not from a trigger on `events`.
  dropContentExtractionTrigger(db)
  db.pragma(`user_version = ${SQLITE_SCHEMA_VERSION}`)
}

// The listing columns (first prompt, turns, last reason) and the index behind `list`'s ORDER BY. Added in
// place (additive) and filled once from the stored lines of existing sessions: only user-message and turn-end
// lines are read, found by their stored prefix.
function addListingColumns(db: Database.Database): void {
  db.exec(`
    ALTER TABLE sessions ADD COLUMN first_prompt TEXT;
    ALTER TABLE sessions ADD COLUMN turns INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE sessions ADD COLUMN last_reason TEXT;
    CREATE INDEX IF NOT EXISTS sessions_by_update ON sessions (updated_at DESC, id);
  `)
  const lines = db.prepare(`SELECT line FROM events WHERE session_id = ? AND (line LIKE '{"type":"user/message"%' OR line LIKE '{"type":"turn/end"%') ORDER BY seq`)
  const update = db.prepare('UPDATE sessions SET first_prompt = ?, turns = ?, last_reason = ? WHERE id = ?')
  for (const { id } of db.prepare('SELECT id FROM sessions').all() as { id: string }[]) {
    const digest = new SessionDigest()
    for (const { line } of lines.all(id) as { line: string }[]) {
      try {
        digest.observe([JSON.parse(line) as SessionEvent])
      } catch {
        // a damaged row: read() reports it; the listing goes without
      }
    }
    update.run(digest.firstPrompt ?? null, digest.turns, digest.lastReason, id)
  }
}

// The quarantine listing column (the reason of the quarantine in force, NULL without one), filled once from
// the stored quarantine marks of existing sessions: only those lines are read, found by their stored prefix.
function addQuarantineColumn(db: Database.Database): void {
  db.exec('ALTER TABLE sessions ADD COLUMN quarantine TEXT')
  const marked = `line LIKE '{"type":"session/quarantine%'`
  const marks = db.prepare(`SELECT line FROM events WHERE session_id = ? AND ${marked} ORDER BY seq`)
  const update = db.prepare('UPDATE sessions SET quarantine = ? WHERE id = ?')
  for (const { id } of db.prepare(`SELECT DISTINCT session_id AS id FROM events WHERE ${marked}`).all() as { id: string }[]) {
    const events: SessionEvent[] = []
    for (const { line } of marks.all(id) as { line: string }[]) {
      try {
        events.push(JSON.parse(line) as SessionEvent)
      } catch {
        // a damaged row: read() reports it
      }
    }
    update.run(lastQuarantineMark(events)?.reason ?? null, id)
  }
}
