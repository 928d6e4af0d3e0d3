import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import pg from 'pg'
import { HarnessError } from '../../errors/harness-error.js'
import type { SessionEvent } from '../../session/events.js'
import type { SessionHeader } from '../../session/session.js'
import { checkFlushDelay } from '../group-commit.js'
import { headerRecord, parseHeaderRecord } from '../session-file.js'
import { checkSeed, checkSessionId } from '../stored-log.js'
import type { SessionList, SessionListOptions, SessionStore, StoredSession } from '../types.js'
import { answerApproval, askApproval, forcedResume, pendingApprovals, requestForcedResume, sessionStates, takeApprovalAnswer, withdrawApproval, type ApprovalQuestion, type SessionState, type StoredApproval, type StoredVerdict } from './approvals.js'
import { decodeInboxRow, insertInboxRow, type InboxInput, type InboxRow } from './inbox-input.js'
import { NotificationHub } from './notifications.js'
import { PostgresWriter, type BatchCommit, type SessionStatus, type WriterBackend } from './postgres-writer.js'
import { encodeRows, followEvents, loadEvents, readEventsAfter, type FollowOptions } from './stored-events.js'
import { migrateSchema, storeTables, type StoreTables } from './schema.js'
import { listSessions } from './session-listing.js'
import { claimOneRow, claimSessionRows, claimUnlessContinuations, renewLeaseRows, waitingContinuations, type ClaimKind, type ClaimedSessionRow } from './claim-queries.js'
import { flushStatement } from './flush-statement.js'
import { Readiness, withStoreErrors, writeFailure } from './pg-errors.js'
import { PostgresCheckpointBlobs } from './checkpoint-blobs.js'

/** Options of {@link PostgresStore}. Give `connectionString` or `pool`. */
export interface PostgresStoreOptions {
  /** `postgres://user@host:port/db`: the store opens (and on close ends) its own pool. */
  readonly connectionString?: string
  /** A pool you manage (the store never ends it). */
  readonly pool?: pg.Pool
  /** PostgreSQL schema holding the tables (default `ledgerloop`; created on first use). */
  readonly schema?: string
  /** How long a lease lasts without renewal, in database time (default 30 s; renewed every third of it). */
  readonly leaseMs?: number
  /** Who this store is in `sessions.owner` (default `<host>:<pid>:<random>`). Must be unique per live process. */
  readonly ownerId?: string
  /** Timer flush after the first buffered append, 0..50 ms (default 20). */
  readonly flushDelayMs?: number
  /** Store runs of ≥3 chunk events as one packed row (default true). Reading never depends on it. */
  readonly packChunks?: boolean
  /** Plugin event types to accept on load without `ignorable`. */
  readonly knownTypes?: Iterable<string>
  /**
   * Connections of the pool the store opens from `connectionString` (default 10; one is held for LISTEN).
   * Raise it with a worker's concurrency: each session being flushed needs one for a moment.
   */
  readonly poolSize?: number
}

/**
 * Called when a writer of this store is fenced off (its session was taken over by a newer epoch); `during` says
 * whether a flush was refused or a lease renewal found out first.
 */
export type LeaseLostListener = (sessionId: string, error: HarnessError, during: 'flush' | 'renewal') => void

/** One session a worker claimed: open it (through `harness.resumeAgent`) before the claim's lease runs out. */
export interface SessionClaim {
  readonly id: string
  readonly epoch: number
  /** Its owner went away mid-turn (or a forced resume waits): opening it continues a crashed turn. */
  readonly continuation: boolean
}

/** What a worker's claim found: the sessions it claimed, and whether a crash continuation waits (then none). */
export interface ClaimedWork {
  readonly claims: SessionClaim[]
  /** Claimable sessions wait for a crash continuation: nothing else was claimed (see `claimSessions`' `kind`). */
  readonly continuationsWaiting: boolean
}

/**
 * Sessions in PostgreSQL (15+, through `pg`, an optional peer dependency; import from `ledgerloop/postgres`),
 * shared by many processes on many machines. `sessions` holds each header and its lease (`owner`, `epoch`,
 * `lease_until` in database time), `events` one row per stored record (an event, or a packed chunk run as in
 * the JSONL store) keyed by `(session_id, seq)`, `inbox` input for sessions someone else owns.
 *
 * One writer per session through the lease: `open` claims it (`FOR UPDATE SKIP LOCKED`; `SESSION_LOCKED` while
 * another owner's lease runs), the store renews its leases every third of `leaseMs`, closing a writer releases.
 * Fencing: every flush is one statement that first checks the writer's epoch, so a writer whose expired lease
 * was taken over gets `LEASE_LOST` and writes nothing more; the primary key refuses a duplicate seq besides.
 * @example
 * ```ts
 * import { PostgresStore } from 'ledgerloop/postgres'
 * const store = new PostgresStore({ connectionString: 'postgres://app@db.internal/agents' })
 * const harness = createHarness({ store, adapters: [deepseekAdapter()] })
 * ```
 */
export class PostgresStore implements SessionStore {
  /** This store's name in `sessions.owner`. */
  readonly ownerId: string
  /** How long a lease lasts without renewal (ms). */
  readonly leaseMs: number
  /** @internal */
  readonly tables: StoreTables
  readonly #pool: pg.Pool
  readonly #ownsPool: boolean
  readonly #pack: boolean
  readonly #delayMs: number
  readonly #knownTypes: readonly string[] | undefined
  readonly #writers = new Map<string, PostgresWriter>()
  /** Claimed, not yet opened: the row as the claim left it (nobody else writes it while the lease is ours). */
  readonly #claims = new Map<string, ClaimedSessionRow>()
  readonly #leaseLost = new Set<LeaseLostListener>()
  readonly #hub: NotificationHub
  readonly #ready: Readiness
  readonly #backend: WriterBackend
  /** The flush statement (see {@link flushStatement}), without and with the inbox rows it consumes. */
  readonly #flushSql: string
  readonly #flushInboxSql: string
  #renewal: NodeJS.Timeout | undefined
  #closed = false
  readonly checkpointBlobs = new PostgresCheckpointBlobs(() => ({ pool: this.#pool, tables: this.tables, ready: this.#ready }))

  /** @param options - `connectionString` or `pool` is required */
  constructor(options: PostgresStoreOptions) {
    if (options?.pool === undefined && (typeof options?.connectionString !== 'string' || options.connectionString === '')) {
      throw new HarnessError('PostgresStore needs a connectionString or a pool', 'INVALID_CONFIG')
    }
    this.tables = storeTables(options.schema ?? 'ledgerloop')
    this.leaseMs = options.leaseMs ?? 30_000
    if (!Number.isSafeInteger(this.leaseMs) || this.leaseMs < 300) throw new HarnessError('leaseMs must be an integer ≥ 300', 'INVALID_CONFIG')
    this.#delayMs = options.flushDelayMs ?? 20
    checkFlushDelay(this.#delayMs)
    this.#pack = options.packChunks ?? true
    this.#knownTypes = options.knownTypes === undefined ? undefined : [...options.knownTypes]
    this.ownerId = options.ownerId ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
    this.#ownsPool = options.pool === undefined
    this.#pool = withStoreErrors(options.pool ?? new pg.Pool({ connectionString: options.connectionString, max: options.poolSize ?? 10 }))
    // An idle pooled connection that dies (server restart) must not crash the process: the next query reconnects.
    if (this.#ownsPool) this.#pool.on('error', () => undefined)
    this.#flushSql = flushStatement(this.tables, false)
    this.#flushInboxSql = flushStatement(this.tables, true)
    this.#hub = new NotificationHub(this.#pool, [this.tables.inboxChannel, this.tables.eventsChannel, this.tables.approvalsChannel])
    this.#ready = new Readiness(() => migrateSchema(this.#pool, this.tables))
    this.#backend = {
      flushDelayMs: this.#delayMs,
      commitBatch: (commit) => this.#commitBatch(commit),
      release: (id, epoch, status) => this.#release(id, epoch, status),
      deleteInboxRows: (id, epoch, ids) => this.#deleteInboxRows(id, epoch, ids),
      untrack: (writer) => {
        if (this.#writers.get(writer.id) === writer) this.#writers.delete(writer.id)
      },
      leaseLost: (writer, error, during) => {
        for (const listener of [...this.#leaseLost]) listener(writer.id, error, during)
      },
    }
  }

  /** Resolves once the schema exists and is current (every method waits for it; call it to fail fast). */
  ready(): Promise<void> {
    return Promise.resolve(this.#ready)
  }

  async create(header: SessionHeader, seed: readonly SessionEvent[] = []): Promise<PostgresWriter> {
    checkSessionId(header.id)
    checkSeed(header.id, seed)
    const epoch = await this.#insertSession(header, seed, true)
    return this.#track(new PostgresWriter(this.#backend, header.id, epoch, seed.length, false))
  }

  /**
   * Creates a session that no one owns yet (for input sent through the inbox: a worker claims it when input
   * arrives), optionally with a seed log (a fork's inherited events). `SESSION_EXISTS` when taken.
   */
  async createDetached(header: SessionHeader, seed: readonly SessionEvent[] = []): Promise<void> {
    checkSessionId(header.id)
    checkSeed(header.id, seed)
    await this.#insertSession(header, seed, false)
  }

  async open(id: string): Promise<StoredSession & { readonly writer: PostgresWriter }> {
    checkSessionId(id)
    await this.#ready
    const claimed = this.#claims.get(id)
    this.#claims.delete(id)
    // A claim already read the row: opening it reads the log only. A claim whose lease ran out meanwhile is
    // fenced by its first flush (and a renewal that missed it dropped it from #claims: then this claims anew).
    const row = claimed ?? (await this.#claim(id))
    const writer = this.#track(new PostgresWriter(this.#backend, id, row.epoch, row.head_seq, row.titled))
    try {
      const header = parseHeaderRecord(row.header, id, this.#where(id, 'header'))
      const events = await loadEvents(this.#pool, this.tables, header, row.head_seq, (seq) => this.#where(id, `row seq ${seq}`), this.#knownTypes)
      return { header, events, writer }
    } catch (error) {
      await writer.close()
      throw error
    }
  }

  async read(id: string): Promise<StoredSession> {
    checkSessionId(id)
    await this.#ready
    const found = await this.#pool.query<{ header: string; head_seq: number }>(`SELECT header, head_seq FROM ${this.tables.sessions} WHERE id = $1`, [id])
    const row = found.rows[0]
    if (row === undefined) throw this.#notFound(id)
    const header = parseHeaderRecord(row.header, id, this.#where(id, 'header'))
    const events = await loadEvents(this.#pool, this.tables, header, row.head_seq, (seq) => this.#where(id, `row seq ${seq}`), this.#knownTypes)
    return { header, events }
  }

  async has(id: string): Promise<boolean> {
    checkSessionId(id)
    await this.#ready
    return (await this.#pool.query(`SELECT 1 FROM ${this.tables.sessions} WHERE id = $1`, [id])).rows.length > 0
  }

  /**
   * Sessions newest first from the `sessions` table (its `updated_at` index), one page when `limit`/`offset`
   * are given; `search` matches the stored title (the first prompt, clipped to 80 characters) or an id prefix.
   */
  async list(options: SessionListOptions = {}): Promise<SessionList> {
    await this.#ready
    return listSessions(this.#pool, this.tables, options, (id) => this.#where(id, 'header'))
  }

  /**
   * Sends input to a session whoever owns it (or no one): one `inbox` row plus a NOTIFY that wakes the owner,
   * in one statement. The owner moves it into its log in order (an `agent/inbox/*` event) and deletes the row
   * in the same transaction. Returns the row id. `SESSION_NOT_FOUND` for an unknown session. With a submission
   * `key` (followup, steer) already waiting in the inbox or in the log, nothing is queued and it resolves
   * `undefined`: a client's retry never sends a prompt twice (the owner's `followup(…, { key })` is the backstop).
   * @example
   * ```ts
   * await store.send(sessionId, { kind: 'followup', message: 'and now the tests' })
   * await store.send(sessionId, { kind: 'followup', message: 'and now the tests', key: 'req-81f2' }) // once
   * await store.send(sessionId, { kind: 'cancel' })
   * ```
   */
  async send(sessionId: string, input: InboxInput): Promise<string | undefined> {
    checkSessionId(sessionId)
    await this.#ready
    const sent = await insertInboxRow(this.#pool, this.tables, sessionId, input).catch((e: unknown) => Promise.reject((e as { code?: string }).code === '23503' ? this.#notFound(sessionId) : e))
    // Nothing inserted: a duplicate key, or (the insert's foreign key never ran) no such session.
    if (sent === undefined && !(await this.has(sessionId))) throw this.#notFound(sessionId)
    return sent
  }

  /**
   * Input waiting in a session's inbox, oldest first (the owner reads it; see {@link PostgresWriter.moveInboxRows}).
   */
  async pendingInput(sessionId: string): Promise<InboxRow[]> {
    await this.#ready
    const found = await this.#pool.query<{ id: string; kind: string; message: string | null; key: string | null }>(
      // Ordered by the bigint, not by its text (which is what `ORDER BY id` would pick: "10" < "9").
      `SELECT i.id::text AS id, i.kind, i.message, i.key FROM ${this.tables.inbox} i WHERE i.session_id = $1 ORDER BY i.id`,
      [sessionId],
    )
    return found.rows.map(decodeInboxRow)
  }

  /** Events after seq `after` (all with -1), oldest first, at most `limit` (default 1000): for followers. */
  async readEvents(sessionId: string, options: { after?: number; limit?: number } = {}): Promise<SessionEvent[]> {
    checkSessionId(sessionId)
    await this.#ready
    return readEventsAfter(this.#pool, this.tables, sessionId, options.after ?? -1, options.limit ?? 1000)
  }

  /**
   * Follows a session's log live: yields every event after `after`, in seq order, as owners commit them
   * (LISTEN on the events channel, with polling every `pollMs` as the fallback) until `signal` aborts.
   * @example
   * ```ts
   * for await (const event of store.follow(id, { signal })) if (event.type === 'turn/end') break
   * ```
   */
  follow(sessionId: string, options: FollowOptions = {}): AsyncIterable<SessionEvent> {
    checkSessionId(sessionId)
    return followEvents(
      { hub: this.#hub, channel: this.tables.eventsChannel, read: (after, limit) => this.readEvents(sessionId, { after, limit }) },
      sessionId,
      options,
    )
  }

  /**
   * Calls `listener` for every commit NOTIFY: the session id and its new committed length (a hint that events
   * arrived; read them with {@link readEvents}, and poll as well). Returns the unsubscriber.
   */
  onCommit(listener: (sessionId: string, headSeq: number) => void): () => void {
    return this.#hub.subscribe(this.tables.eventsChannel, (payload) => {
      const space = payload.lastIndexOf(' ')
      listener(payload.slice(0, space), Number(payload.slice(space + 1)))
    })
  }

  /**
   * Calls `listener` with the session id of every inbox NOTIFY (a hint that input arrived; poll as well).
   * Returns the unsubscriber.
   */
  onInput(listener: (sessionId: string) => void): () => void {
    return this.#hub.subscribe(this.tables.inboxChannel, listener)
  }

  /** Resolves once notifications are being received (rejects while the database is unreachable). */
  listening(): Promise<void> {
    return this.#hub.ready()
  }

  /**
   * Stores a permission question about tool call `callId` of a session this store holds open, under the
   * writer's lease epoch, for anyone to answer with {@link answerApproval} (`serve` does). A question of an
   * epoch that lost its lease is void: never listed, never answerable.
   * @throws HarnessError `SESSION_CLOSED` when this store has no open writer of the session, `LEASE_LOST` when fenced
   */
  async askApproval(sessionId: string, callId: string, question: ApprovalQuestion): Promise<void> {
    await askApproval(this.#pool, this.tables, sessionId, this.#ownEpoch(sessionId), callId, question)
  }

  /** The answer to this store's own question about `callId` (the row is removed), or undefined while none was given. */
  async takeApprovalAnswer(sessionId: string, callId: string): Promise<StoredVerdict | undefined> {
    return takeApprovalAnswer(this.#pool, this.tables, sessionId, this.#ownEpoch(sessionId), callId)
  }

  /** Withdraws this store's own question about `callId` (its turn was cancelled or the session is released). */
  async withdrawApproval(sessionId: string, callId: string): Promise<void> {
    const writer = this.#writers.get(sessionId)
    if (writer !== undefined) await withdrawApproval(this.#pool, this.tables, sessionId, writer.epoch, callId)
  }

  /** Unanswered questions of the session's live owner, oldest first (any process may read them). */
  async pendingApprovals(sessionId: string): Promise<StoredApproval[]> {
    checkSessionId(sessionId)
    await this.#ready
    return pendingApprovals(this.#pool, this.tables, sessionId)
  }

  /**
   * Answers a question of the session's live owner, from any process; false when no such question waits (never
   * asked, already answered, withdrawn, or its asker lost the lease). The asker is woken by a NOTIFY.
   */
  async answerApproval(sessionId: string, callId: string, verdict: StoredVerdict): Promise<boolean> {
    checkSessionId(sessionId)
    await this.#ready
    return answerApproval(this.#pool, this.tables, sessionId, callId, verdict)
  }

  /** Calls `listener` with the session id whenever a question is asked, answered or withdrawn. Returns the unsubscriber. */
  onApprovals(listener: (sessionId: string) => void): () => void {
    return this.#hub.subscribe(this.tables.approvalsChannel, listener)
  }

  /** Sessions (all when `ids` is undefined) a live lease holds or that are not idle; the rest are idle, unowned. */
  async sessionStates(ids?: readonly string[]): Promise<SessionState[]> {
    await this.#ready
    return sessionStates(this.#pool, this.tables, ids)
  }

  /**
   * "Resume anyway" on a fleet: `request` hands a quarantined, unowned session to the next worker to resume with
   * `force` (false when it is not one); `check` tells a worker it was asked; `clear` takes the request back.
   */
  async forcedResume(id: string, step: 'request' | 'check' | 'clear'): Promise<boolean> {
    await this.#ready
    // A claim read it: a forced resume is asked only of a session nobody owns, so it cannot change under a claim.
    const claimed = step === 'check' ? this.#claims.get(id) : undefined
    if (claimed !== undefined) return claimed.force_resume
    return step === 'request' ? requestForcedResume(this.#pool, this.tables, id) : forcedResume(this.#pool, this.tables, id, step === 'clear')
  }

  /** Calls `listener` whenever one of this store's writers is fenced off. Returns the unsubscriber. */
  onLeaseLost(listener: LeaseLostListener): () => void {
    this.#leaseLost.add(listener)
    return () => void this.#leaseLost.delete(listener)
  }

  /** The open writer of a session in this store, if any. */
  writerOf(sessionId: string): PostgresWriter | undefined {
    return this.#writers.get(sessionId)
  }

  /**
   * Claims up to `limit` sessions that need an owner: input waiting with no live owner, an expired lease (its
   * owner died or stalled: the session needs repair and may hold queued work), or a release marked `pending`.
   * One statement with `FOR UPDATE SKIP LOCKED`, so concurrent workers never claim the same session. Each
   * claim's lease is renewed with this store's writers; open it with `open` (or `harness.resumeAgent`).
   * `exclude` skips sessions the caller does not want now (e.g. ones that just failed to open). `kind`
   * (default `any`): `continuations` claims only sessions whose owner went away mid-turn (or that wait for a
   * forced resume), `others` all but those; each claim says which it is (`continuation`).
   */
  async claimSessions(limit: number, options: { readonly exclude?: readonly string[]; readonly kind?: ClaimKind } = {}): Promise<SessionClaim[]> {
    if (!Number.isSafeInteger(limit) || limit <= 0) return []
    await this.#ready
    // Never a session this store still serves: a stalled owner's own expired lease is renewed or fenced, not re-claimed.
    const exclude = [...(options.exclude ?? []), ...this.#writers.keys(), ...this.#claims.keys()]
    const rows = await claimSessionRows(this.#pool, this.tables, { limit, ownerId: this.ownerId, leaseMs: this.leaseMs, exclude, kind: options.kind ?? 'any' })
    return this.#claimed(rows)
  }

  /**
   * A worker's claim in one round trip: up to `limit` sessions that need no crash continuation (0: none, only
   * the check), unless a claimable session waits for a crash continuation — then nothing is claimed and
   * `continuationsWaiting` says so (claim it with `claimSessions(1, { kind: 'continuations' })` once no turn of
   * yours runs). Equals `waitingContinuations` then `claimSessions(limit, { kind: 'others' })`, one statement.
   */
  async claimWork(limit: number, options: { readonly exclude?: readonly string[] } = {}): Promise<ClaimedWork> {
    await this.#ready
    const exclude = [...(options.exclude ?? []), ...this.#writers.keys(), ...this.#claims.keys()]
    const n = Number.isSafeInteger(limit) && limit > 0 ? limit : 0
    const found = await claimUnlessContinuations(this.#pool, this.tables, { limit: n, ownerId: this.ownerId, leaseMs: this.leaseMs, exclude })
    return { claims: this.#claimed(found.rows), continuationsWaiting: found.waiting > 0 }
  }

  /** How many claimable sessions (not served here, not in `exclude`) wait for a crash continuation. */
  async waitingContinuations(exclude: readonly string[] = []): Promise<number> {
    await this.#ready
    return waitingContinuations(this.#pool, this.tables, [...exclude, ...this.#writers.keys(), ...this.#claims.keys()])
  }

  /** Gives back a claim that was not opened (e.g. its log failed to load), marking it `status`. */
  async releaseClaim(sessionId: string, status?: SessionStatus): Promise<void> {
    const claimed = this.#claims.get(sessionId)
    if (claimed === undefined) return
    this.#claims.delete(sessionId)
    await this.#release(sessionId, claimed.epoch, status)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#renewal !== undefined) clearInterval(this.#renewal)
    const results = await Promise.allSettled([...this.#writers.values()].map((w) => w.close()))
    await Promise.allSettled([...this.#claims.keys()].map((id) => this.releaseClaim(id)))
    await this.#hub.close()
    if (this.#ownsPool) await this.#pool.end()
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
  }

  #track(writer: PostgresWriter): PostgresWriter {
    this.#writers.set(writer.id, writer)
    this.#armRenewal()
    return writer
  }

  async #insertSession(header: SessionHeader, seed: readonly SessionEvent[], owned: boolean): Promise<number> {
    if (this.#closed) throw new HarnessError('the store is closed', 'STORE_CLOSED')
    await this.#ready
    const rows = encodeRows(seed, this.#pack)
    const t = this.tables
    const inserted = await this.#pool.query<{ epoch: number }>(
      `WITH s AS (
         INSERT INTO ${t.sessions} (id, header, created_at, owner, epoch, lease_until, head_seq)
         VALUES ($1, $2, $3, $4, $5, CASE WHEN $4::text IS NULL THEN NULL ELSE now() + $6 * interval '1 millisecond' END, $7)
         ON CONFLICT (id) DO NOTHING
         RETURNING id, epoch),
       e AS (
         INSERT INTO ${t.events} (session_id, seq, type, data)
         SELECT s.id, r.seq, r.type, r.data FROM s, unnest($8::int[], $9::text[], $10::text[]) AS r(seq, type, data))
       SELECT epoch FROM s`,
      [header.id, headerRecord(header), header.createdAt, owned ? this.ownerId : null, owned ? 1 : 0, this.leaseMs, seed.length, rows.seqs, rows.types, rows.data],
    )
    const row = inserted.rows[0]
    if (row === undefined) throw new HarnessError(`session '${header.id}' already exists in ${this.#describe()}`, 'SESSION_EXISTS')
    return row.epoch
  }

  #claimed(rows: readonly ClaimedSessionRow[]): SessionClaim[] {
    for (const row of rows) this.#claims.set(row.id, row)
    if (rows.length > 0) this.#armRenewal()
    return rows.map((r) => ({ id: r.id, epoch: r.epoch, continuation: r.continuation }))
  }

  async #claim(id: string): Promise<ClaimedSessionRow> {
    const row = await claimOneRow(this.#pool, this.tables, id, this.ownerId, this.leaseMs)
    if (row !== undefined) return row
    const holder = await this.#pool.query<{ owner: string | null; left_ms: number | null }>(
      `SELECT owner, (extract(epoch FROM lease_until - now()) * 1000)::int AS left_ms FROM ${this.tables.sessions} WHERE id = $1`,
      [id],
    )
    const current = holder.rows[0]
    if (current === undefined) throw this.#notFound(id)
    const who = current.owner === null ? 'another writer (it is being claimed right now)' : `${current.owner} (lease ends in ${current.left_ms ?? 0} ms)`
    throw new HarnessError(`session '${id}' is open in another writer: ${who} in ${this.#describe()}`, 'SESSION_LOCKED')
  }

  async #commitBatch(commit: BatchCommit): Promise<void> {
    const rows = encodeRows(commit.batch, this.#pack)
    const first = (commit.batch[0] as SessionEvent).seq
    const head = first + commit.batch.length
    const t = this.tables
    const inbox = commit.inboxIds.length > 0
    const values: unknown[] = [commit.id, commit.epoch, head, this.leaseMs, commit.status ?? null, commit.title ?? null, first, rows.seqs, rows.types, rows.data, t.eventsChannel]
    if (inbox) values.push(commit.inboxIds)
    let done: pg.QueryResult
    try {
      // A named statement: each pooled connection parses and plans it once, not on every flush (the CTE's
      // planning cost as much as its execution). Names carry the schema, so stores sharing a pool never collide.
      done = await this.#pool.query({ name: `${inbox ? 'll_flush_inbox' : 'll_flush'}_${t.schema}`, text: inbox ? this.#flushInboxSql : this.#flushSql, values })
    } catch (error) {
      // The second fence: someone else already wrote one of these seqs.
      if ((error as { code?: string }).code === '23505') throw this.#leaseLostError(commit.id, commit.epoch, error)
      throw writeFailure(commit.id, error)
    }
    if (done.rowCount === 1) return
    const found = await this.#pool.query<{ epoch: number; head_seq: number }>(`SELECT epoch, head_seq FROM ${t.sessions} WHERE id = $1`, [commit.id])
    const row = found.rows[0]
    if (row === undefined) throw this.#notFound(commit.id)
    if (row.epoch !== commit.epoch) throw this.#leaseLostError(commit.id, commit.epoch)
    throw new HarnessError(`session '${commit.id}' in ${this.#describe()} continues at seq ${row.head_seq}, not ${first}`, 'SESSION_CORRUPT')
  }

  async #release(id: string, epoch: number, status: SessionStatus | undefined): Promise<void> {
    await this.#pool.query(
      `UPDATE ${this.tables.sessions} SET owner = NULL, lease_until = NULL, status = COALESCE($3, status) WHERE id = $1 AND epoch = $2`,
      [id, epoch, status ?? null],
    )
  }

  async #deleteInboxRows(id: string, epoch: number, ids: readonly string[]): Promise<void> {
    const t = this.tables
    const done = await this.#pool.query(
      `WITH f AS (SELECT id FROM ${t.sessions} WHERE id = $1 AND epoch = $2 FOR UPDATE)
       DELETE FROM ${t.inbox} WHERE session_id = $1 AND id = ANY($3::bigint[]) AND EXISTS (SELECT 1 FROM f) RETURNING id`,
      [id, epoch, ids],
    )
    if (done.rowCount === 0 && ids.length > 0) {
      const owned = await this.#pool.query(`SELECT 1 FROM ${t.sessions} WHERE id = $1 AND epoch = $2`, [id, epoch])
      if (owned.rows.length === 0) throw this.#leaseLostError(id, epoch)
    }
  }

  /** Renews every lease this store holds in one statement; a lease found taken over fences its writer. */
  async #renew(): Promise<void> {
    const held = [...this.#writers.values()].filter((w) => w.fenced === undefined)
    const claims = [...this.#claims.entries()]
    if (held.length + claims.length === 0) {
      if (this.#renewal !== undefined) clearInterval(this.#renewal)
      this.#renewal = undefined
      return
    }
    const ids = [...held.map((w) => w.id), ...claims.map(([id]) => id)]
    const epochs = [...held.map((w) => w.epoch), ...claims.map(([, row]) => row.epoch)]
    const alive = await renewLeaseRows(this.#pool, this.tables, ids, epochs, this.leaseMs)
    for (const writer of held) if (!alive.has(writer.id) && this.#writers.get(writer.id) === writer) writer.leaseMissed(this.#leaseLostError(writer.id, writer.epoch))
    for (const [id, row] of claims) if (!alive.has(id) && this.#claims.get(id) === row) this.#claims.delete(id)
  }

  #armRenewal(): void {
    if (this.#renewal !== undefined || this.#closed) return
    this.#renewal = setInterval(() => {
      // A failed renewal (database briefly unreachable) is retried on the next tick; fencing keeps it safe.
      this.#renew().catch(() => undefined)
    }, Math.max(50, Math.floor(this.leaseMs / 3)))
    this.#renewal.unref()
  }

  #ownEpoch(id: string): number {
    const writer = this.#writers.get(id)
    if (writer === undefined) throw new HarnessError(`session '${id}' is not open in this store (${this.ownerId})`, 'SESSION_CLOSED')
    if (writer.fenced !== undefined) throw writer.fenced
    return writer.epoch
  }

  #leaseLostError(id: string, epoch: number, cause?: unknown): HarnessError {
    return new HarnessError(
      `session '${id}' was taken over by another owner after lease epoch ${epoch} of ${this.ownerId} ran out; nothing more was written`,
      'LEASE_LOST',
      cause === undefined ? undefined : { cause },
    )
  }

  #notFound(id: string): HarnessError {
    return new HarnessError(`no session '${id}' in ${this.#describe()}`, 'SESSION_NOT_FOUND')
  }

  #where(id: string, part: string): string {
    return `${this.#describe()} (session '${id}', ${part})`
  }

  // Never the connection string: it may carry a password.
  #describe(): string {
    return `PostgreSQL schema "${this.tables.schema}"`
  }
}
