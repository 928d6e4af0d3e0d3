// Resume checkpoints of the SQLite store (docs/stores.md, "Resume checkpoints"): one row per session in the
// `resume_checkpoints` table (schema version 4), written in the transaction of the flush that ends a turn, read by
// `open` so that only the rows after it are read. The rows stay the only truth: a checkpoint that does not match
// them is ignored, and deleting it only makes the next open read every row.
import Database from 'better-sqlite3'
import { HarnessError } from '../../errors/harness-error.js'
import { EventLog } from '../../session/event-log.js'
import type { SessionEvent } from '../../session/events.js'
import { foldOfCheckpoint, lazyPrefixOf, resumeFoldOf, ResumeFoldTracker, type ResumeFoldState } from '../../session/resume-fold.js'
import { Session, type SessionHeader } from '../../session/session.js'
import type { VerifiedLog } from '../../session/verified-log.js'
import { LogLoader } from '../log-loader.js'
import { encodeCheckpoint, foldText, frozenFoldOf, lineDigest, parseCheckpoint, RESUME_CHECKPOINT_VERSION, type ResumeCheckpoint } from '../resume-checkpoint.js'
import type { DigestFields } from '../session-digest.js'
import { validateStoredLog } from '../stored-log.js'

/**
 * The checkpoint table: the checkpoint's text as `encodeCheckpoint` writes it (its own SHA-256 on the first line),
 * so a row damaged anywhere is found before anything in it is used. Gone with its session.
 */
export const RESUME_TABLE = `CREATE TABLE IF NOT EXISTS resume_checkpoints (
  session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
  checkpoint TEXT NOT NULL
) STRICT`

/** Rows one query of a load reads. */
const PAGE_ROWS = 1000

/** What reads a session's rows: the store's connection, and where its rows are named in errors. */
export interface SqliteRows {
  readonly db: Database.Database
  /** The database file (errors name it; the prefix is read from it again after the store closed). */
  readonly path: string
  readonly knownTypes: readonly string[] | undefined
}

/**
 * Reads the rows of session `id` with `from ≤ seq < to` into `loader`, a page at a time as [seq, line] arrays (a
 * native call per page rather than per row, and no row objects); each row must start at the loader's next seq.
 * Call inside a read transaction. `starts` gets each row's first seq (to name the row of a bad event).
 * @throws HarnessError `SESSION_CORRUPT` naming the row of a bad line or a gap
 */
export function readRowsInto(db: Database.Database, path: string, id: string, from: number, to: number, loader: LogLoader, starts: number[]): void {
  const page = db.prepare('SELECT seq, line FROM events WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq LIMIT ?').raw(true)
  for (let next = from; ; ) {
    const rows = page.all(id, next, to, PAGE_ROWS) as [number, string][]
    for (const [seq, line] of rows) {
      const expected = loader.length
      let first: number
      try {
        first = loader.addLine(line) ?? loader.add(JSON.parse(line))
      } catch (error) {
        throw new HarnessError(`${rowName(path, id, seq)}: ${(error as Error).message}`, 'SESSION_CORRUPT')
      }
      if (seq !== expected || first !== seq) throw new HarnessError(`${rowName(path, id, seq)}: seq ${first} where ${expected} was expected`, 'SESSION_CORRUPT')
      starts.push(seq)
    }
    if (rows.length < PAGE_ROWS) return
    next = (rows[rows.length - 1] as [number, string])[0] + 1
  }
}

/** How errors name a stored row. */
export function rowName(path: string, id: string, seq: number): string {
  return `${path} (session '${id}', row seq ${seq})`
}

/** A session read from its checkpoint: the whole log (prefix unread, tail read and checked) and the fold of all of it. */
export interface CheckpointLoad {
  readonly log: VerifiedLog
  /** Events in the log (the prefix's and the tail's). */
  readonly length: number
  readonly tracker: ResumeFoldTracker
}

/**
 * Reads session `id` from its checkpoint, inside the caller's read transaction: the checkpoint must parse, name
 * this session, match the stored header (by digest) and its anchor row (seq, length and digest of the stored
 * line of the turn end it was cut at); the rows after the anchor are read and checked as a full load checks them.
 * Anything that does not hold gives undefined (never an error: the caller reads every row, which then names any
 * real defect precisely).
 * @param headerText - the session row's stored header
 */
export function loadFromCheckpoint(rows: SqliteRows, id: string, header: SessionHeader, headerText: string): CheckpointLoad | undefined {
  const { db, path, knownTypes } = rows
  try {
    const stored = db.prepare('SELECT checkpoint FROM resume_checkpoints WHERE session_id = ?').pluck().get(id) as string | undefined
    const checkpoint = stored === undefined ? undefined : parseCheckpoint(stored, id)
    if (checkpoint === undefined || checkpoint.header !== lineDigest(headerText)) return undefined
    const { at, lineBytes, sha256 } = checkpoint.anchor
    // The anchor is the row of the fold's last event (a turn end: never part of a packed run, so the row is its own).
    if (at !== checkpoint.fold.length - 1) return undefined
    const anchor = db.prepare('SELECT line FROM events WHERE session_id = ? AND seq = ?').pluck().get(id, at) as string | undefined
    if (anchor === undefined || Buffer.byteLength(anchor, 'utf8') !== lineBytes || lineDigest(anchor) !== sha256) return undefined
    const fold = frozenFoldOf(checkpoint.fold)
    const prefix = lazyPrefixOf(fold, () => loadPrefix(rows, id, fold, header))
    const loader = new LogLoader(prefix)
    readRowsInto(db, path, id, fold.length, Number.MAX_SAFE_INTEGER, loader, [])
    const log = loader.finish()
    // The Session's checks over the tail only, starting from the checkpoint's fold (the prefix stays unread). A
    // tail they refuse is read again with every row, which names the defect and its row.
    const start = foldOfCheckpoint(fold, EventLog.withPrefix(prefix))
    const resumed = Session.verify({ id, header, log, start, ...(knownTypes !== undefined ? { knownTypes } : {}) })
    const tracker = new ResumeFoldTracker(header.seedLength ?? 0, fold)
    for (const record of log.tailRecords) {
      if ('type' in record) tracker.observe(record)
      else tracker.skip(record.count)
    }
    return { log: resumed, length: loader.length, tracker }
  } catch {
    // A checkpoint that does not fit its rows is not trusted: the whole log is read instead.
    return undefined
  }
}

/**
 * Reads the prefix a checkpoint stands for, when something asks for an event in it: its rows, checked as a full
 * load checks them, and folded again: they must give the checkpoint's fold. After the store closed, the file is
 * read through a read-only connection of its own.
 * @throws HarnessError `SESSION_CORRUPT` when they do not (the checkpoint was trusted for rows it did not summarise)
 */
function loadPrefix(rows: SqliteRows, id: string, fold: ResumeFoldState, header: SessionHeader): EventLog {
  const { path, knownTypes } = rows
  const db = rows.db.open ? rows.db : new Database(path, { readonly: true, fileMustExist: true })
  try {
    const loader = new LogLoader()
    const starts: number[] = []
    db.transaction(() => readRowsInto(db, path, id, 0, fold.length, loader, starts))()
    const log = loader.finish()
    const locate = (seq: number): string => rowName(path, id, starts.filter((s) => s <= seq).pop() ?? 0)
    const verified = loader.length === fold.length ? validateStoredLog(header, log, locate, knownTypes) : undefined
    const again = verified === undefined ? undefined : resumeFoldOf(verified, header.seedLength ?? 0)
    if (again === undefined || foldText(again) !== foldText(fold)) {
      throw new HarnessError(
        `${path} (session '${id}'): its first ${fold.length} events no longer fold to what its resume checkpoint recorded; delete the session's row of resume_checkpoints and open it again`,
        'SESSION_CORRUPT',
      )
    }
    return verified as EventLog
  } finally {
    if (db !== rows.db) db.close()
  }
}

/** The fold of a log loaded whole, for the writer's next checkpoint. */
export function trackerOf(log: EventLog, seedLength: number): ResumeFoldTracker {
  const tracker = new ResumeFoldTracker(seedLength)
  log.forEachEvent(0, (event) => tracker.observe(event))
  tracker.skip(log.length - tracker.length)
  return tracker
}

/**
 * What a writer keeps to write checkpoints: the fold of what it committed, fed every batch inside the flush's
 * transaction; the batch that ends a turn writes the checkpoint of that boundary in the same transaction.
 * @internal
 */
export class SqliteCheckpointer {
  readonly #db: Database.Database
  readonly #id: string
  readonly #headerDigest: string
  readonly #tracker: ResumeFoldTracker
  #upsert: Database.Statement | undefined
  /** False after a flush rolled back or a checkpoint could not be written: the writer goes on without them. */
  #enabled = true

  /** @param headerText - the session's stored header (the checkpoint is tied to its digest) */
  constructor(db: Database.Database, id: string, headerText: string, tracker: ResumeFoldTracker) {
    this.#db = db
    this.#id = id
    this.#headerDigest = lineDigest(headerText)
    this.#tracker = tracker
  }

  /**
   * Follows a batch inside the transaction that stores it, and when it ends a turn writes the checkpoint there.
   * @param lastLine - the stored line of the batch's last row
   */
  committing(batch: readonly SessionEvent[], lastLine: string): void {
    if (!this.#enabled) return
    for (const event of batch) this.#tracker.observe(event)
    const last = batch[batch.length - 1]
    if (last?.type === 'turn/end') this.#write(last.seq, lastLine)
  }

  /** The flush's transaction rolled back: the fold ran ahead of the rows, so no more checkpoints from this writer. */
  rolledBack(): void {
    this.#enabled = false
  }

  /**
   * Writes the checkpoint of a log loaded whole that ends at a turn boundary (written before checkpoints, or
   * whose checkpoint did not match), so the next open reads only what follows.
   */
  checkpointLoaded(): void {
    if (!this.#enabled || !this.#tracker.atBoundary) return
    const seq = this.#tracker.length - 1
    try {
      this.#db.transaction(() => {
        const line = this.#db.prepare('SELECT line FROM events WHERE session_id = ? AND seq = ?').pluck().get(this.#id, seq) as string | undefined
        if (line !== undefined) this.#write(seq, line)
      }).immediate()
    } catch {
      // No checkpoint this time (a busy database): the next turn end writes one.
    }
  }

  #write(seq: number, line: string): void {
    const fold = this.#tracker.state()
    if (fold === undefined || fold.length !== seq + 1) return
    try {
      const listed = this.#db.prepare('SELECT first_prompt, turns, last_reason, quarantine FROM sessions WHERE id = ?').get(this.#id) as
        | { first_prompt: string | null; turns: number; last_reason: string | null; quarantine: string | null }
        | undefined
      if (listed === undefined) return
      const checkpoint: ResumeCheckpoint = {
        ledgerloop: 'resume',
        version: RESUME_CHECKPOINT_VERSION,
        id: this.#id,
        header: this.#headerDigest,
        anchor: { at: seq, lineBytes: Buffer.byteLength(line, 'utf8'), sha256: lineDigest(line) },
        digest: {
          ...(listed.first_prompt !== null ? { firstPrompt: listed.first_prompt } : {}),
          turns: listed.turns,
          lastReason: listed.last_reason as DigestFields['lastReason'],
          ...(listed.quarantine !== null ? { quarantine: listed.quarantine } : {}),
        },
        fold,
      }
      this.#upsert ??= this.#db.prepare('INSERT INTO resume_checkpoints (session_id, checkpoint) VALUES (?, ?) ON CONFLICT (session_id) DO UPDATE SET checkpoint = excluded.checkpoint')
      // A savepoint of its own: a checkpoint that cannot be written costs the next resume speed, never the flush.
      this.#db.transaction(() => this.#upsert?.run(this.#id, encodeCheckpoint(checkpoint)))()
    } catch {
      this.#enabled = false
    }
  }
}
