import type { StreamChunk } from '../llm/types.js'
import type { EventLog } from './event-log.js'
import type { SessionEvent } from './events.js'

/**
 * The writer of one open session: appends are buffered (cheap, synchronous) and made durable by `flush()`
 * (group commit). Holding a writer means holding the session's single-writer lock.
 */
export interface SessionWriter {
  /** Buffers one committed event (seq must be the next one). Throws when the writer is closed. */
  append(event: SessionEvent): void
  /**
   * Optional compact form of `append` for a streamed chunk: the event
   * `{type:'assistant/chunk', seq, time, data:{turn, step, chunk}}` without the event object (`chunk` is
   * deep-frozen lossless JSON). A writer without it receives such chunks through `append`.
   */
  appendChunk?(seq: number, time: number, turn: number, step: number, chunk: StreamChunk): void
  /**
   * Optional compact form of `appendChunk` for a text or reasoning delta given as its parts (the chunk
   * `{type, index, text}`, exactly these keys). A writer without it receives such chunks through `appendChunk`.
   */
  appendText?(seq: number, time: number, turn: number, step: number, type: 'text-delta' | 'reasoning-delta', index: number, text: string): void
  /**
   * @internal Optional: the harness offers the open session's own compact log, which from now on receives
   * every event right after this writer took it (`append` / `appendChunk` / `appendText` are called first). A store that
   * keeps its sessions in memory may hold that log instead of a copy, and must stop sharing it when the
   * writer closes. Ignoring the offer is always correct.
   */
  shareLog?(log: EventLog): void
  /** Resolves once every event appended so far is durable (for file stores: written and fsynced). */
  flush(): Promise<void>
  /** Flushes, then releases the lock. Idempotent. */
  close(): Promise<void>
}
