// SqliteStore's fast fork (SessionStore.copyPrefix): one BEGIN IMMEDIATE transaction that finds the fork point
// from the rows' leading `{"type":…,"seq":…`, inserts the child's session row, copies the parent's rows of seqs
// 0..at with INSERT … SELECT (their lines never leave SQLite) and inserts the child's session/end-seed row. The
// rows are the parent's committed transactions as its writers made them (each commit checked its lease and
// next seq), and their searchable texts are copied as stored (content_text rows, never extracted again); a
// point that is not a row of its own, lies past `next_seq` or inside a turn is declined, and forkSession reads
// the parent event by event as before. A crash rolls the transaction back: no child at all.
import type Database from 'better-sqlite3'
import { HarnessError } from '../../errors/harness-error.js'
import type { ForkChild, ForkPoint } from '../../session/fork-point.js'
import type { SessionEvent } from '../../session/events.js'
import type { SessionHeader } from '../../session/session.js'
import { firstSeqOf, packChunkRuns } from '../chunk-runs.js'
import { LEADER_CHARS, readLeader } from '../record-leader.js'
import { SessionDigest } from '../session-digest.js'
import { headerRecord, parseHeaderRecord } from '../session-file.js'
import { copyContentRows, indexEvents, prepareContentInsert } from './content-index.js'

/** What {@link copySqlitePrefix} needs of its store. */
export interface SqliteForkContext {
  readonly db: Database.Database
  /** The database file (for errors). */
  readonly path: string
  /** Whether the store packs chunk runs (for the child's own tail rows). */
  readonly pack: boolean
}

// The lines a listing digest reads (GLOB: case-sensitive, unlike LIKE): what create's digest of every seed
// event takes from them, the same columns.
const DIGESTED = `(line GLOB '{"type":"user/message"*' OR line GLOB '{"type":"turn/end"*' OR line GLOB '{"type":"session/quarantine*')`
const TURN_MARK = `(line GLOB '{"type":"turn/start"*' OR line GLOB '{"type":"turn/end"*')`

/**
 * Forks `parentId` at `at` (default: its last seq) inside one transaction, when the point is a turn boundary
 * held by a row of its own. Call it through the store's error guard (SQLite errors become store errors).
 * @returns the child's id, or undefined when declined (the transaction wrote nothing)
 * @throws HarnessError `SESSION_EXISTS` when the child's id is taken
 */
export function copySqlitePrefix(ctx: SqliteForkContext, parentId: string, at: number | undefined, child: (point: ForkPoint) => ForkChild): string | undefined {
  const { db } = ctx
  return db.transaction((): string | undefined => {
    const row = db.prepare('SELECT header, next_seq FROM sessions WHERE id = ?').get(parentId) as { header: string; next_seq: number } | undefined
    if (row === undefined) return undefined
    let parent: SessionHeader
    try {
      parent = parseHeaderRecord(row.header, parentId, `${ctx.path} (session '${parentId}' header)`)
    } catch {
      return undefined
    }
    const point = at ?? row.next_seq - 1
    if (!Number.isSafeInteger(point) || point < 0 || point >= row.next_seq) return undefined
    // The event at the point is a row of its own (not inside a packed run), and the next row starts right after it.
    const own = db.prepare('SELECT seq, substr(line, 1, ?) AS start FROM events WHERE session_id = ? AND seq <= ? ORDER BY seq DESC LIMIT 1').get(LEADER_CHARS, parentId, point) as
      | { seq: number; start: string }
      | undefined
    const leader = own === undefined ? undefined : readLeader(own.start)
    if (leader === undefined || leader.run || leader.seq !== point || own?.seq !== point) return undefined
    const next = db.prepare('SELECT min(seq) AS seq FROM events WHERE session_id = ? AND seq > ?').get(parentId, point) as { seq: number | null }
    if ((next.seq ?? row.next_seq) !== point + 1) return undefined
    const mark = db.prepare(`SELECT substr(line, 1, 20) AS start FROM events WHERE session_id = ? AND seq <= ? AND ${TURN_MARK} ORDER BY seq DESC LIMIT 1`).get(parentId, point) as { start: string } | undefined
    if (mark?.start.startsWith('{"type":"turn/start"') === true) return undefined
    const digest = digestRows(db, parentId, point)
    if (digest === undefined) return undefined
    const { header, tail } = child({ parent, at: point, lastType: leader.type })
    if (db.prepare('SELECT 1 FROM sessions WHERE id = ?').get(header.id) !== undefined) throw new HarnessError(`session '${header.id}' already exists in ${ctx.path}`, 'SESSION_EXISTS')
    digest.observe(tail)
    const now = Date.now()
    db.prepare(
      'INSERT INTO sessions (id, header, created_at, updated_at, next_seq, lease_owner, lease_expires, first_prompt, turns, last_reason, quarantine) VALUES (?, ?, ?, ?, ?, NULL, NULL, ?, ?, ?, ?)',
    ).run(header.id, headerRecord(header), header.createdAt, now, point + 1 + tail.length, digest.firstPrompt ?? null, digest.turns, digest.lastReason, digest.quarantine ?? null)
    db.prepare('INSERT INTO events (session_id, seq, line) SELECT ?, seq, line FROM events WHERE session_id = ? AND seq <= ?').run(header.id, parentId, point)
    copyContentRows(db, parentId, point, header.id)
    const insert = db.prepare('INSERT INTO events (session_id, seq, line) VALUES (?, ?, ?)')
    for (const record of ctx.pack ? packChunkRuns(tail) : tail) insert.run(header.id, firstSeqOf(record), JSON.stringify(record))
    indexEvents(prepareContentInsert(db), header.id, tail)
    return header.id
  }).immediate()
}

// The listing columns of the prefix from the only rows they depend on (first prompt, turn ends, quarantine
// marks); undefined when one of them does not parse (declined: the event-by-event read reports it).
function digestRows(db: Database.Database, id: string, point: number): SessionDigest | undefined {
  const digest = new SessionDigest()
  for (const [line] of db.prepare(`SELECT line FROM events WHERE session_id = ? AND seq <= ? AND ${DIGESTED} ORDER BY seq`).raw(true).iterate(id, point) as Iterable<[string]>) {
    let event: SessionEvent
    try {
      event = JSON.parse(line) as SessionEvent
    } catch {
      return undefined
    }
    digest.observe([event])
  }
  return digest
}
