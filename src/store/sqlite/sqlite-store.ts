import { closeSync, constants, lstatSync, mkdirSync, openSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import { HarnessError } from '../../errors/harness-error.js'
import type { EventLog } from '../../session/event-log.js'
import type { SessionEvent } from '../../session/events.js'
import type { SessionHeader } from '../../session/session.js'
import { firstSeqOf, packChunkRuns, type StorageRecord } from '../chunk-runs.js'
import { currentHolder, describeHolder, holderIsDead, parseHolder, type LockHolder } from '../file-lock.js'
import { checkPrivateFile } from '../file-permissions.js'
import { checkFlushDelay, SequencedCommit } from '../group-commit.js'
import { clipLine, lastQuarantineMark, quarantineFields, SessionDigest, TITLE_MAX } from '../session-digest.js'
import { migrateSchema, schemaState } from './sqlite-schema.js'
import { type ContentInsert, contentHitsQuery, contentMatchOf, indexEvents, prepareContentInsert } from './content-index.js'
import { grepNeedle, type ContentMatch } from '../content-search.js'
import { headerRecord, parseHeaderRecord, summaryLinks } from '../session-file.js'
import { LogLoader } from '../log-loader.js'
import { sessionList } from '../session-list.js'
import { checkSeed, checkSessionId, storedSession, validateStoredLog } from '../stored-log.js'
import type { ForkChild, ForkPoint, SessionList, SessionListOptions, SessionStore, SessionWriter, StoredSession } from '../types.js'
import { copySqlitePrefix } from './fork-copy.js'
import { SqliteCheckpointBlobs, type StagedBlobs } from './checkpoint-blobs.js'
import { loadFromCheckpoint, readRowsInto, rowName, SqliteCheckpointer, trackerOf } from './sqlite-resume.js'
import { ResumeFoldTracker } from '../../session/resume-fold.js'

/** Options of {@link SqliteStore}. */
export interface SqliteStoreOptions {
  /** Database file (created with mode 0600). */
  readonly path: string
  /** Store runs of ≥3 chunk events as one packed row (default true). Reading never depends on it. */
  readonly packChunks?: boolean
  /** Timer flush after the first buffered append, 0..50 ms (default 20). */
  readonly flushDelayMs?: number
  /** How long a writer's lease lasts without renewal (default 30 s; renewed every third of it). */
  readonly leaseMs?: number
  /**
   * How long to wait for another connection's write transaction (default 5 s); also how long opening waits for
   * a database another process is creating or switching to WAL (then `STORE_UNAVAILABLE`).
   */
  readonly busyTimeoutMs?: number
  /** Plugin event types to accept on load without `ignorable`. */
  readonly knownTypes?: Iterable<string>
}

/** One row of the listing query. */
interface ListingRow {
  readonly id: string
  readonly header: string
  readonly created_at: number
  readonly updated_at: number
  readonly first_prompt: string | null
  readonly turns: number
  readonly last_reason: string | null
  readonly quarantine: string | null
}

/** The write path's prepared statement and transaction, kept for the connection's life. */
interface WritePath {
  readonly insert: Database.Statement
  /** The batch's searchable texts go into the content index in the same transaction (content-index.ts). */
  readonly content: ContentInsert
  readonly commit: Database.Transaction<(id: string, holder: LockHolder, first: SessionEvent, batch: readonly SessionEvent[], alongside: (lastLine: string) => void) => void>
}

/**
 * Inserts the stored records of one batch, each as one row keyed by its first seq.
 * @returns the stored line of the last row (a resume checkpoint is tied to it)
 */
function insertRecords(insert: Database.Statement, id: string, records: readonly StorageRecord[]): string {
  let line = ''
  for (const record of records) {
    line = JSON.stringify(record)
    insert.run(id, firstSeqOf(record), line)
  }
  return line
}

interface SessionRow {
  readonly header: string
  readonly next_seq: number
  readonly lease_owner: string | null
  readonly lease_expires: number | null
}

/**
 * Sessions in one SQLite database (better-sqlite3, an optional peer dependency; import from
 * `ledgerloop/sqlite`). WAL with `synchronous=FULL`; `sessions` holds each header and the writer's lease,
 * `events` one row per stored record (an event, or a packed chunk run as in the JSONL store), keyed by its
 * first seq. Group commit as in {@link JsonlStore}: one `BEGIN IMMEDIATE` transaction per flush; the flush that
 * ends a turn also writes the session's resume checkpoint (`resume_checkpoints`, ./sqlite-resume.ts), so `open`
 * reads only the rows after it and the older ones when something asks for them. One writer per
 * session through the lease (`SESSION_LOCKED` for a second one; an expired lease, or one held by a dead process
 * on this host, is taken over). A damaged database is `SESSION_CORRUPT` naming the file, as is a session whose
 * `next_seq` disagrees with its rows; a write SQLite refuses (disk full, I/O error, read-only) is
 * `SESSION_WRITE_FAILED` with the SqliteError as `cause`.
 * @example
 * ```ts
 * import { SqliteStore } from 'ledgerloop/sqlite'
 * const harness = createHarness({ store: new SqliteStore({ path: 'sessions.db' }) })
 * ```
 */
export class SqliteStore implements SessionStore {
  /** The database file. */
  readonly path: string
  readonly #db: Database.Database
  readonly #pack: boolean
  readonly #delayMs: number
  readonly #leaseMs: number
  readonly #knownTypes: readonly string[] | undefined
  readonly #writers = new Set<SqliteWriter>()
  /** Prepared on the first write ({@link SqliteStore.#writePath}). */
  #write: WritePath | undefined
  /** File checkpoints of these sessions, in the `checkpoint_blobs` table. */
  readonly checkpointBlobs: SqliteCheckpointBlobs

  /** @param options - `path` is required */
  constructor(options: SqliteStoreOptions) {
    if (typeof options?.path !== 'string' || options.path === '') throw new HarnessError('SqliteStore needs a path', 'INVALID_CONFIG')
    this.path = options.path
    this.#pack = options.packChunks ?? true
    this.#delayMs = options.flushDelayMs ?? 20
    checkFlushDelay(this.#delayMs)
    this.#leaseMs = options.leaseMs ?? 30_000
    if (!Number.isSafeInteger(this.#leaseMs) || this.#leaseMs < 100) throw new HarnessError('leaseMs must be an integer ≥ 100', 'INVALID_CONFIG')
    this.#knownTypes = options.knownTypes === undefined ? undefined : [...options.knownTypes]
    // Like JsonlStore's directory: a missing parent is created, private to this user.
    mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 })
    createPrivateFile(this.path)
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000
    // The timeout option sets busy_timeout when the connection opens: before the journal-mode switch below.
    this.#db = new Database(this.path, { timeout: busyTimeoutMs })
    try {
      this.#configure(Date.now() + busyTimeoutMs)
    } catch (error) {
      this.#db.close()
      if (error instanceof Database.SqliteError && BUSY.test(error.code)) {
        throw new HarnessError(`${this.path} stayed locked by another connection for more than ${busyTimeoutMs} ms while opening it: ${error.message}`, 'STORE_UNAVAILABLE', { cause: error })
      }
      throw storeError(error, this.path, 'opening it', true)
    }
    this.checkpointBlobs = new SqliteCheckpointBlobs(this.#db, (doing, writing, work) => this.#guard(doing, writing, work))
  }

  // Several processes may open one new file at once (two CLI commands, a server and a worker). Everything that
  // writes the schema runs in one BEGIN IMMEDIATE transaction that looks at the schema again inside it, so the
  // second opener waits for the first one's lock and then finds the work done; checked outside a lock, both saw
  // no listing columns and the second ALTER TABLE failed with "duplicate column name". An up-to-date database,
  // the usual case, is only read.
  #configure(deadline: number): void {
    const db = this.#db
    switchToWal(db, deadline)
    // FULL: a commit returns only after the WAL is fsynced (the durability the flush promises).
    setPragma(db, 'synchronous', 2)
    setPragma(db, 'foreign_keys', 1)
    // One read transaction: the mark, the version and the tables seen in a single snapshot, never half of
    // another opener's schema transaction.
    if (whileBusy(deadline, () => db.transaction(() => schemaState(db, this.path))()) === 'current') return
    whileBusy(deadline, () => db.transaction(() => migrateSchema(db, schemaState(db, this.path))).immediate())
  }

  async create(header: SessionHeader, seed: readonly SessionEvent[] = []): Promise<SessionWriter> {
    checkSessionId(header.id)
    checkSeed(header.id, seed)
    const holder = currentHolder()
    const now = Date.now()
    const digest = new SessionDigest()
    digest.observe(seed)
    this.#guard(`creating session '${header.id}'`, true, () =>
      this.#db
        .transaction(() => {
          if (this.#row(header.id) !== undefined) throw new HarnessError(`session '${header.id}' already exists in ${this.path}`, 'SESSION_EXISTS')
          this.#db
            .prepare(
              'INSERT INTO sessions (id, header, created_at, updated_at, next_seq, lease_owner, lease_expires, first_prompt, turns, last_reason, quarantine) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
            )
            .run(header.id, headerRecord(header), header.createdAt, now, seed.length, JSON.stringify(holder), now + this.#leaseMs, digest.firstPrompt ?? null, digest.turns, digest.lastReason, digest.quarantine ?? null)
          this.#insert(header.id, seed)
        })
        .immediate(),
    )
    const tracker = new ResumeFoldTracker(header.seedLength ?? 0)
    for (const event of seed) tracker.observe(event)
    const writer = new SqliteWriter(this, header.id, seed.length, holder)
    writer.checkpointWith(new SqliteCheckpointer(this.#db, header.id, headerRecord(header), tracker))
    return this.#track(writer)
  }

  async open(id: string): Promise<StoredSession & { readonly writer: SessionWriter }> {
    checkSessionId(id)
    const holder = currentHolder()
    this.#guard(`taking the lease of session '${id}'`, true, () =>
      this.#db
        .transaction(() => {
          const row = this.#row(id)
          if (row === undefined) throw notFound(id, this.path)
          const current = row.lease_owner === null ? undefined : parseHolder(row.lease_owner)
          const expired = row.lease_expires === null || row.lease_expires <= Date.now()
          if (current !== undefined && !expired && !holderIsDead(current)) {
            throw new HarnessError(`session '${id}' is open in another writer: ${describeHolder(current)} holds its lease in ${this.path}`, 'SESSION_LOCKED')
          }
          this.#db.prepare('UPDATE sessions SET lease_owner = ?, lease_expires = ? WHERE id = ?').run(JSON.stringify(holder), Date.now() + this.#leaseMs, id)
        })
        .immediate(),
    )
    const writer = this.#track(new SqliteWriter(this, id, 0, holder))
    try {
      // A resume checkpoint that matches the rows: only the rows after it are read (docs/stores.md).
      const { stored, tracker, headerText, fromCheckpoint } = this.#guard(`reading session '${id}'`, false, () => this.#loadRows(id, true))
      const log = stored.log as EventLog
      writer.continueAt(log.length)
      const checkpointer = new SqliteCheckpointer(this.#db, id, headerText, tracker ?? trackerOf(log, stored.header.seedLength ?? 0))
      if (!fromCheckpoint) checkpointer.checkpointLoaded()
      writer.checkpointWith(checkpointer)
      return Object.assign(stored, { writer })
    } catch (error) {
      await writer.close()
      throw error
    }
  }

  /** Forks by copying the parent's rows in one transaction, or declines (see {@link SessionStore.copyPrefix}, ./fork-copy.ts). */
  async copyPrefix(parentId: string, at: number | undefined, child: (point: ForkPoint) => ForkChild): Promise<string | undefined> {
    checkSessionId(parentId)
    return this.#guard(`forking session '${parentId}'`, true, () => copySqlitePrefix({ db: this.#db, path: this.path, pack: this.#pack }, parentId, at, child))
  }

  async read(id: string): Promise<StoredSession> {
    checkSessionId(id)
    return this.#load(id)
  }

  async has(id: string): Promise<boolean> {
    checkSessionId(id)
    return this.#guard(`looking up session '${id}'`, false, () => this.#row(id)) !== undefined
  }

  /**
   * Sessions newest first from the `sessions` table (its `updated_at` index): a page costs the same however
   * many sessions the database holds; `search` scans the first-prompt column, never the events.
   */
  async list(options: SessionListOptions = {}): Promise<SessionList> {
    const search = (options.search ?? '').toLowerCase()
    const grep = grepNeedle(options.grep)
    let where = search === '' ? '' : 'WHERE (instr(lower(coalesce(first_prompt, \'\')), @search) > 0 OR substr(lower(sessions.id), 1, length(@search)) = @search)'
    const hits = grep === undefined ? undefined : contentHitsQuery(grep)
    // `grep`: only sessions the content index has a match for, each with its earliest matching row.
    if (hits !== undefined) where = `JOIN (${hits.sql}) hits ON hits.id = sessions.id ${where}`
    const params = { ...(search === '' ? {} : { search }), ...hits?.params }
    const limit = options.limit === undefined ? -1 : Math.max(0, options.limit)
    const offset = Math.max(0, options.offset ?? 0)
    // With `grep` the page and its total come from one evaluation of the content query (a window count): the
    // query is what costs, and a second one for `total` doubled it. Without it the count is an index count.
    const first = hits === undefined ? '' : ', hits.first AS first, count(*) OVER () AS matched'
    const { rows, total } = this.#guard('listing sessions', false, () => {
      const rows = this.#db
        .prepare(`SELECT sessions.id AS id, header, created_at, updated_at, first_prompt, turns, last_reason, quarantine${first} FROM sessions ${where} ORDER BY updated_at DESC, sessions.id LIMIT @limit OFFSET @offset`)
        .all({ ...params, limit, offset }) as (ListingRow & { first?: number; matched?: number; match?: ContentMatch })[]
      const counted = hits === undefined ? undefined : rows[0]?.matched
      const total = counted ?? (hits !== undefined && offset === 0 && limit !== 0 ? 0 : (this.#db.prepare(`SELECT count(*) AS n FROM sessions ${where}`).get(params) as { n: number }).n)
      return { rows: grep === undefined ? rows : rows.map((r) => ({ ...r, match: contentMatchOf(this.#db, r.first as number, grep) })), total }
    })
    return sessionList(
      rows.map((r) => {
        const base = {
          id: r.id,
          createdAt: r.created_at,
          updatedAt: r.updated_at,
          ...(r.first_prompt !== null ? { title: clipLine(r.first_prompt, TITLE_MAX), firstPrompt: r.first_prompt } : {}),
          turns: r.turns,
          lastReason: r.last_reason,
          ...quarantineFields(r.quarantine),
          ...(r.match !== undefined ? { match: r.match } : {}),
        }
        try {
          const header = parseHeaderRecord(r.header, r.id, `${this.path} (session '${r.id}')`)
          return { ...base, ...summaryLinks(header) }
        } catch (error) {
          return { ...base, problem: (error as Error).message }
        }
      }),
      total,
    )
  }

  async close(): Promise<void> {
    const results = await Promise.allSettled([...this.#writers].map((w) => w.close()))
    if (this.#db.open) this.#guard('closing it', false, () => this.#db.close())
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
  }

  /**
   * @internal One flush: a single BEGIN IMMEDIATE transaction that checks the lease and the next seq; a batch
   * that ends a turn writes the session's resume checkpoint in it too (`checkpointer`).
   */
  commitBatch(id: string, holder: LockHolder, batch: readonly SessionEvent[], checkpointer?: SqliteCheckpointer): void {
    const first = batch[0] as SessionEvent
    // Checkpoint blobs staged for the next commit ride this one (checkpoint-blobs.ts).
    let staged: StagedBlobs | undefined
    try {
      this.#commit(id, holder, first, batch, (lastLine) => {
        staged = this.checkpointBlobs.insertStaged()
        checkpointer?.committing(batch, lastLine)
      })
    } catch (error) {
      ;(staged as StagedBlobs | undefined)?.rolledBack()
      checkpointer?.rolledBack()
      // The transaction rolled back: nothing of the batch is stored, and the next flush retries it.
      throw storeError(error, this.path, `writing session '${id}'`, true)
    }
    ;(staged as StagedBlobs | undefined)?.committed()
  }

  #commit(id: string, holder: LockHolder, first: SessionEvent, batch: readonly SessionEvent[], alongside: (lastLine: string) => void): void {
    const write = this.#writePath()
    write.commit.immediate(id, holder, first, batch, alongside)
  }

  /**
   * The flush's statements and transaction, prepared once per connection: compiling them again for every flush
   * cost more CPU than the inserts themselves (better-sqlite3 does not cache `prepare`).
   */
  #writePath(): WritePath {
    if (this.#write !== undefined) return this.#write
    const db = this.#db
    const insert = db.prepare('INSERT INTO events (session_id, seq, line) VALUES (?, ?, ?)')
    const content = prepareContentInsert(db)
    const lease = db.prepare('SELECT next_seq, lease_owner FROM sessions WHERE id = ?')
    const advance = db.prepare(
      'UPDATE sessions SET next_seq = ?, updated_at = ?, lease_expires = ?, first_prompt = coalesce(first_prompt, ?), turns = turns + ?, last_reason = coalesce(?, last_reason), quarantine = CASE WHEN ? THEN ? ELSE quarantine END WHERE id = ?',
    )
    const commit = db.transaction((id: string, holder: LockHolder, first: SessionEvent, batch: readonly SessionEvent[], alongside: (lastLine: string) => void) => {
      const row = lease.get(id) as Pick<SessionRow, 'next_seq' | 'lease_owner'> | undefined
      if (row === undefined) throw notFound(id, this.path)
      if (parseHolder(row.lease_owner ?? '')?.token !== holder.token) {
        throw new HarnessError(`session '${id}' lost its lease in ${this.path} (another writer took it over); nothing was written`, 'SESSION_LOCKED')
      }
      if (row.next_seq !== first.seq) throw new HarnessError(`session '${id}' in ${this.path} continues at seq ${row.next_seq}, not ${first.seq}`, 'SESSION_CORRUPT')
      const lastLine = insertRecords(insert, id, this.#pack ? packChunkRuns(batch) : batch)
      indexEvents(content, id, batch)
      const now = Date.now()
      // The listing columns follow the batch: its first prompt (kept only if the session has none), turn ends.
      const digest = new SessionDigest()
      digest.observe(batch)
      // A quarantine mark sets the column (a lift clears it); without one it stays as it was.
      const mark = lastQuarantineMark(batch)
      advance.run(first.seq + batch.length, now, now + this.#leaseMs, digest.firstPrompt ?? null, digest.turns, digest.lastReason, mark !== undefined ? 1 : 0, mark?.reason ?? null, id)
      alongside(lastLine)
    })
    this.#write = { insert, content, commit }
    return this.#write
  }

  /** @internal Extends a live writer's lease (runs on a timer between flushes). */
  renewLease(id: string, holder: LockHolder): void {
    if (!this.#db.open) return
    this.#guard(`renewing the lease of session '${id}'`, true, () =>
      this.#db.prepare('UPDATE sessions SET lease_expires = ? WHERE id = ? AND lease_owner = ?').run(Date.now() + this.#leaseMs, id, JSON.stringify(holder)),
    )
  }

  /** @internal Gives a lease up, if it is still ours. */
  releaseLease(id: string, holder: LockHolder): void {
    if (!this.#db.open) return
    this.#guard(`releasing the lease of session '${id}'`, true, () =>
      this.#db.prepare('UPDATE sessions SET lease_owner = NULL, lease_expires = NULL WHERE id = ? AND lease_owner = ?').run(id, JSON.stringify(holder)),
    )
  }

  /** @internal */
  get flushDelayMs(): number {
    return this.#delayMs
  }

  /** @internal */
  get leaseMs(): number {
    return this.#leaseMs
  }

  /** @internal */
  untrack(writer: SqliteWriter): void {
    this.#writers.delete(writer)
  }

  /** Runs `work` on the database with SQLite's failures turned into the store's errors ({@link storeError}). */
  #guard<T>(doing: string, writing: boolean, work: () => T): T {
    try {
      return work()
    } catch (error) {
      throw storeError(error, this.path, doing, writing)
    }
  }

  #track(writer: SqliteWriter): SqliteWriter {
    this.#writers.add(writer)
    return writer
  }

  #row(id: string): SessionRow | undefined {
    return this.#db.prepare('SELECT header, next_seq, lease_owner, lease_expires FROM sessions WHERE id = ?').get(id) as SessionRow | undefined
  }

  #insert(id: string, events: readonly SessionEvent[]): void {
    if (events.length === 0) return
    const write = this.#writePath()
    insertRecords(write.insert, id, this.#pack ? packChunkRuns(events) : events)
    indexEvents(write.content, id, events)
  }

  #load(id: string): StoredSession {
    return this.#guard(`reading session '${id}'`, false, () => this.#loadRows(id, false)).stored
  }

  /**
   * Reads a session's row and events in one read transaction (one snapshot), so that the row's next_seq and the
   * rows can be compared even while another connection commits. With `fromCheckpoint`, a resume checkpoint that
   * matches the rows stands for the rows before it (read only when something asks for them).
   */
  #loadRows(id: string, fromCheckpoint: boolean): { stored: StoredSession; headerText: string; tracker?: ResumeFoldTracker; fromCheckpoint: boolean } {
    const rows = { db: this.#db, path: this.path, knownTypes: this.#knownTypes }
    const { row, header, resumed, loader, rowStarts } = this.#db.transaction(() => {
      const row = this.#row(id)
      if (row === undefined) throw notFound(id, this.path)
      const header = parseHeaderRecord(row.header, id, `${this.path} (session '${id}' header)`)
      const resumed = fromCheckpoint ? loadFromCheckpoint(rows, id, header, row.header) : undefined
      const loader = new LogLoader()
      const rowStarts: number[] = []
      // Packed rows and chunk rows decode straight into compact runs.
      if (resumed === undefined) readRowsInto(this.#db, this.path, id, 0, Number.MAX_SAFE_INTEGER, loader, rowStarts)
      return { row, header, resumed, loader, rowStarts }
    })()
    const length = resumed?.length ?? loader.length
    // Every commit moves next_seq with the rows it inserts. A counter that disagrees with them would make every
    // later flush of this session fail ("continues at seq …"), so the session is refused here, before a writer
    // gets it and before a turn starts: neither the counter nor the rows can be trusted to say which is right.
    if (row.next_seq !== length) {
      throw new HarnessError(
        `${this.path} (session '${id}'): the session row says the next seq is ${row.next_seq}, but its events hold ${length === 0 ? 'no seq' : `seqs 0..${length - 1}`} (${length} events); the counter and the log disagree`,
        'SESSION_CORRUPT',
      )
    }
    if (resumed !== undefined) return { stored: storedSession(header, resumed.log), headerText: row.header, tracker: resumed.tracker, fromCheckpoint: true }
    const log = loader.finish()
    const locate = (seq: number): string => rowName(this.path, id, rowStarts.filter((s) => s <= seq).pop() ?? 0)
    return { stored: storedSession(header, validateStoredLog(header, log, locate, this.#knownTypes)), headerText: row.header, fromCheckpoint: false }
  }
}

/** The writer of one session in a {@link SqliteStore}. */
class SqliteWriter implements SessionWriter {
  readonly #store: SqliteStore
  readonly #id: string
  readonly #holder: LockHolder
  readonly #commit: SequencedCommit
  readonly #renewal: NodeJS.Timeout
  #closing: Promise<void> | undefined
  /** Writes the session's resume checkpoint at turn ends (set once the log is loaded). */
  #checkpointer: SqliteCheckpointer | undefined

  constructor(store: SqliteStore, id: string, nextSeq: number, holder: LockHolder) {
    this.#store = store
    this.#id = id
    this.#holder = holder
    this.#commit = new SequencedCommit(id, nextSeq, async (batch) => store.commitBatch(id, holder, batch, this.#checkpointer), store.flushDelayMs)
    this.#renewal = setInterval(() => {
      try {
        store.renewLease(id, holder)
      } catch {
        // A busy database delays a renewal; the next flush renews too, and checks ownership.
      }
    }, Math.floor(store.leaseMs / 3))
    this.#renewal.unref()
  }

  /** @internal Sets the next seq once the log is loaded. */
  continueAt(seq: number): void {
    this.#commit.continueAt(seq)
  }

  /** @internal Follows the committed log with `checkpointer` from now on. */
  checkpointWith(checkpointer: SqliteCheckpointer): void {
    this.#checkpointer = checkpointer
  }

  append(event: SessionEvent): void {
    this.#commit.append(event)
  }

  flush(): Promise<void> {
    return this.#commit.flush()
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#renewal)
      try {
        await this.#commit.stop()
      } finally {
        this.#store.releaseLease(this.#id, this.#holder)
        this.#store.untrack(this)
      }
    })()
    return this.#closing
  }
}

/** SQLite's "another connection holds the lock" codes (better-sqlite3 reports extended codes). */
const BUSY = /^SQLITE_(BUSY|LOCKED)/

/** Sleeps without yielding: the constructor that waits is synchronous, like better-sqlite3's own busy wait. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/**
 * Runs `step` again while SQLite answers SQLITE_BUSY / SQLITE_LOCKED, until `deadline`. The busy handler
 * (busy_timeout) covers most waits, but not all: SQLite returns SQLITE_BUSY at once where waiting could
 * deadlock, or while another connection is changing the journal mode or recovering the WAL.
 */
function whileBusy<T>(deadline: number, step: () => T): T {
  for (let attempt = 0; ; attempt++) {
    try {
      return step()
    } catch (error) {
      if (!(error instanceof Database.SqliteError) || !BUSY.test(error.code) || Date.now() >= deadline) throw error
    }
    // Short at first, with jitter so that openers that collided do not collide again in step.
    pause(Math.min(2 ** attempt, 50) + Math.floor(Math.random() * 5))
  }
}

// Switching a new file to WAL needs it to itself. Under contention the pragma either fails with SQLITE_BUSY or
// succeeds without switching (it answers the mode it left in place), so both are retried until the deadline.
function switchToWal(db: Database.Database, deadline: number): void {
  for (let attempt = 0; ; attempt++) {
    const mode = String(whileBusy(deadline, () => db.pragma('journal_mode = wal', { simple: true }))).toLowerCase()
    if (mode === 'wal') return
    if (Date.now() >= deadline) throw new HarnessError(`could not set PRAGMA journal_mode = wal (it is ${mode})`, 'INVALID_CONFIG')
    pause(Math.min(2 ** attempt, 50) + Math.floor(Math.random() * 5))
  }
}

function setPragma(db: Database.Database, name: string, value: string | number): void {
  db.pragma(`${name} = ${value}`)
  const actual = db.pragma(name, { simple: true }) as string | number
  if (String(actual).toLowerCase() !== String(value)) {
    throw new HarnessError(`could not set PRAGMA ${name} = ${value} (it is ${String(actual)})`, 'INVALID_CONFIG')
  }
}

// Created by us with mode 0600 before SQLite opens it (SQLite gives its -wal/-shm files the same mode); an
// existing file must already be private.
function createPrivateFile(path: string): void {
  try {
    closeSync(openSync(path, constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    checkPrivateFile(path, lstatSync(path))
  }
}

/** Failures of a write that leave the database as it was: the disk, the file or the lock would not let it happen. */
const WRITE_FAILURES = /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|PERM|BUSY|LOCKED|NOMEM)/

/**
 * The store's error for what better-sqlite3 threw while `doing` something: a damaged file (SQLITE_CORRUPT…,
 * SQLITE_NOTADB) is `SESSION_CORRUPT` naming the file, whatever the operation; a write refused by the disk, the
 * file system or another connection's lock is `SESSION_WRITE_FAILED`, as in the JSONL store. The SqliteError is
 * kept as the cause. Anything else (our own HarnessErrors thrown inside a transaction among them) is returned
 * as it is.
 */
function storeError(error: unknown, path: string, doing: string, writing: boolean): unknown {
  if (!(error instanceof Database.SqliteError)) return error
  if (/^SQLITE_(CORRUPT|NOTADB)/.test(error.code)) {
    return new HarnessError(`SQLite database ${path} is damaged (${doing}): ${error.message} [${error.code}]`, 'SESSION_CORRUPT', { cause: error })
  }
  if (writing && WRITE_FAILURES.test(error.code)) {
    return new HarnessError(`could not write to SQLite database ${path} (${doing}): ${error.message} [${error.code}]`, 'SESSION_WRITE_FAILED', { cause: error })
  }
  return error
}

function notFound(id: string, path: string): HarnessError {
  return new HarnessError(`no session '${id}' in ${path}`, 'SESSION_NOT_FOUND')
}
