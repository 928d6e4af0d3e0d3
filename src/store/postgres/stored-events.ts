import type pg from 'pg'
import { HarnessError } from '../../errors/harness-error.js'
import { deepFreeze } from '../../json/lossless.js'
import type { SessionEvent } from '../../session/events.js'
import type { SessionHeader } from '../../session/session.js'
import { decodeRecord, firstSeqOf, MAX_CHUNK_RUN, packChunkRuns, type StorageRecord } from '../chunk-runs.js'
import { validateStoredLog } from '../stored-log.js'
import type { NotificationHub } from './notifications.js'
import type { StoreTables } from './schema.js'

/** Rows of one multi-row insert, as the three arrays `unnest` takes. */
export interface EncodedRows {
  readonly seqs: number[]
  readonly types: string[]
  readonly data: string[]
}

/** Serialises events into `events` rows (packing chunk runs as the JSONL store does), each exactly once. */
export function encodeRows(events: readonly SessionEvent[], pack: boolean): EncodedRows {
  const records: readonly StorageRecord[] = pack ? packChunkRuns(events) : events
  const rows: EncodedRows = { seqs: [], types: [], data: [] }
  for (const record of records) {
    rows.seqs.push(firstSeqOf(record))
    rows.types.push(record.type)
    rows.data.push(JSON.stringify(record))
  }
  return rows
}

/**
 * Loads a whole log (records before `head`, the committed length) and validates it as the harness will adopt it.
 * @throws HarnessError `SESSION_CORRUPT` naming the row of the first defect
 */
export async function loadEvents(
  pool: pg.Pool,
  t: StoreTables,
  header: SessionHeader,
  head: number,
  where: (seq: number) => string,
  knownTypes: readonly string[] | undefined,
): Promise<SessionEvent[]> {
  const found = await pool.query<{ seq: number; data: string }>(`SELECT seq, data FROM ${t.events} WHERE session_id = $1 AND seq < $2 ORDER BY seq`, [header.id, head])
  const events: SessionEvent[] = []
  const rowStarts: number[] = []
  for (const row of found.rows) {
    const decoded = decodeRow(row, where)
    if (row.seq !== events.length || (decoded[0] as SessionEvent).seq !== row.seq) {
      throw new HarnessError(`${where(row.seq)}: seq ${(decoded[0] as SessionEvent).seq} where ${events.length} was expected`, 'SESSION_CORRUPT')
    }
    rowStarts.push(row.seq)
    for (const event of decoded) events.push(deepFreeze(event))
  }
  if (events.length !== head) throw new HarnessError(`${where(events.length)}: the log ends at seq ${events.length - 1}, its session row says ${head - 1}`, 'SESSION_CORRUPT')
  const locate = (seq: number): string => where(rowStarts.filter((s) => s <= seq).pop() ?? 0)
  validateStoredLog(header, events, locate, knownTypes)
  return events
}

/**
 * Committed events of a session after seq `after`, oldest first, at most `limit`. Reads from a little before
 * `after` because a packed run is keyed by its first seq.
 * @throws HarnessError `SESSION_NOT_FOUND`, `SESSION_CORRUPT`
 */
export async function readEventsAfter(pool: pg.Pool, t: StoreTables, id: string, after: number, limit: number): Promise<SessionEvent[]> {
  const found = await pool.query<{ seq: number | null; data: string | null }>(
    `SELECT e.seq, e.data FROM ${t.sessions} s
     LEFT JOIN LATERAL (
       SELECT seq, data FROM ${t.events} WHERE session_id = s.id AND seq > $2::int - $3::int AND seq < s.head_seq ORDER BY seq LIMIT $4
     ) e ON true
     WHERE s.id = $1`,
    [id, after, MAX_CHUNK_RUN, limit + 1],
  )
  if (found.rows.length === 0) throw new HarnessError(`no session '${id}' in PostgreSQL schema "${t.schema}"`, 'SESSION_NOT_FOUND')
  const events: SessionEvent[] = []
  for (const row of found.rows) {
    if (row.seq === null || row.data === null) continue
    for (const event of decodeRow({ seq: row.seq, data: row.data }, (seq) => `session '${id}', row seq ${seq}`)) {
      if (event.seq > after && events.length < limit) events.push(deepFreeze(event))
    }
  }
  return events
}

function decodeRow(row: { seq: number; data: string }, where: (seq: number) => string): SessionEvent[] {
  try {
    return decodeRecord(JSON.parse(row.data))
  } catch (error) {
    throw new HarnessError(`${where(row.seq)}: ${(error as Error).message}`, 'SESSION_CORRUPT')
  }
}

/** Options of `PostgresStore.follow`. */
export interface FollowOptions {
  /** Yield events after this seq (default -1: the whole log). */
  readonly after?: number
  /** Stops following (the iteration ends quietly). */
  readonly signal?: AbortSignal
  /** Longest wait without a notification before reading again (default 1000 ms). */
  readonly pollMs?: number
}

/** What {@link followEvents} reads from. */
export interface FollowSource {
  readonly hub: NotificationHub
  readonly channel: string
  read(after: number, limit: number): Promise<SessionEvent[]>
}

const FOLLOW_PAGE = 1000

/**
 * Yields a session's events in seq order as they are committed: reads by seq, then waits for a NOTIFY naming
 * the session (or `pollMs`) and reads again. Subscribes before the first read, so nothing committed in between
 * is missed.
 */
export async function* followEvents(source: FollowSource, id: string, options: FollowOptions): AsyncGenerator<SessionEvent> {
  const signal = options.signal
  const pollMs = options.pollMs ?? 1000
  let after = options.after ?? -1
  const state = { pinged: false }
  const stopped = (): boolean => signal?.aborted === true
  let wake: (() => void) | undefined
  const unsubscribe = source.hub.subscribe(source.channel, (payload) => {
    if (payload.slice(0, payload.lastIndexOf(' ')) !== id) return
    state.pinged = true
    wake?.()
  })
  const onAbort = (): void => wake?.()
  signal?.addEventListener('abort', onAbort)
  try {
    await source.hub.ready().catch(() => undefined)
    while (!stopped()) {
      state.pinged = false
      const events = await source.read(after, FOLLOW_PAGE)
      for (const event of events) {
        after = event.seq
        yield event
        if (stopped()) return
      }
      if (events.length === FOLLOW_PAGE || state.pinged) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
        if (state.pinged || stopped()) wake()
      })
      wake = undefined
    }
  } finally {
    unsubscribe()
    signal?.removeEventListener('abort', onAbort)
  }
}
