import type { StreamChunk } from '../llm/types.js'
import type { EventLog } from './event-log.js'
import type { SessionEvent } from './events.js'

/**
 * The event `{type:'assistant/chunk', seq, time, data:{turn, step, chunk}}` as its parts, with no event object:
 * how a streamed chunk reaches a writer that takes compact records. `chunk` is deep-frozen lossless JSON.
 */
export interface ChunkRecord {
  readonly kind: 'chunk'
  readonly seq: number
  readonly time: number
  readonly turn: number
  readonly step: number
  readonly chunk: StreamChunk
}

/**
 * A {@link ChunkRecord} whose chunk is a text or reasoning delta `{type, index, text}` (exactly these keys),
 * given as its parts: no chunk object either, so a store can pack the bare text.
 */
export interface TextRecord {
  readonly kind: 'text'
  readonly seq: number
  readonly time: number
  readonly turn: number
  readonly step: number
  readonly type: 'text-delta' | 'reasoning-delta'
  readonly index: number
  readonly text: string
}

/** What a writer is handed: a committed event, or (to a writer that takes them) a streamed chunk as its parts. */
export type SessionRecord = SessionEvent | ChunkRecord | TextRecord

/**
 * The writer of one open session: appends are buffered (cheap, synchronous) and made durable by `flush()`
 * (group commit). Holding a writer means holding the session's single-writer lock. `R` is what `append`
 * takes: events only (the default), or every {@link SessionRecord} for a writer that sets `compactRecords`.
 */
export interface SessionWriter<R extends SessionRecord = SessionEvent> {
  /**
   * Buffers one committed record; its seq must be the next one. Throws when the writer is closed. A compact
   * record ({@link ChunkRecord}, {@link TextRecord}, told apart by `kind`) is only valid during the call: the
   * caller reuses the object for the next chunk, so a writer copies what it keeps.
   */
  append(record: R): void
  /**
   * Set (true) by a writer whose `append` takes compact records too: the loop's streamed chunks then reach it as
   * {@link ChunkRecord} / {@link TextRecord} with no event object built. A writer without it gets every
   * record as a {@link SessionEvent}.
   */
  readonly compactRecords?: boolean
  /**
   * Optional: the harness offers the open session's own compact log once, when it wires the session to this
   * writer. From then on the log receives every record right after this writer's `append` took it. A store
   * that keeps its sessions in memory may hold that log instead of a copy, and must stop sharing it when the
   * writer closes. Ignoring the offer is always correct.
   */
  shareLog?(log: EventLog): void
  /** Resolves once every event appended so far is durable (for file stores: written and fsynced). */
  flush(): Promise<void>
  /** Flushes, then releases the lock. Idempotent. */
  close(): Promise<void>
}

/** A writer that takes compact records (see `SessionWriter.compactRecords`). */
export type CompactSessionWriter = SessionWriter<SessionRecord> & { readonly compactRecords: true }

/** Whether `writer` takes compact records in `append` (it says so with `compactRecords`). */
export function takesCompactRecords(writer: SessionWriter): writer is SessionWriter & CompactSessionWriter {
  return writer.compactRecords === true
}
