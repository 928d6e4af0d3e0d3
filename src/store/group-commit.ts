import { HarnessError } from '../errors/harness-error.js'
import type { SessionEvent } from '../session/events.js'

/**
 * Makes one batch durable: ONE write of every line plus ONE fsync (or one SQL transaction). Must resolve only
 * once the batch is on disk, and on failure must leave storage as it was before the call (so a retry writes
 * the same batch again without a gap or a duplicate).
 */
export type BatchSink = (batch: readonly SessionEvent[]) => Promise<void>

/** The longest a buffered append waits for the timer flush: the ceiling docs/stores.md documents (`flushDelayMs`, at most 50). */
export const MAX_FLUSH_DELAY_MS = 50

/** The longest interval of a store in interval mode (`fsync: 'interval'`): what a crash may lose is bounded by it. */
export const MAX_FLUSH_INTERVAL_MS = 10_000

/**
 * Checks a timer flush delay option.
 * @param max - the largest delay allowed (default {@link MAX_FLUSH_DELAY_MS})
 * @param name - the option's name, for the message
 * @throws HarnessError `INVALID_CONFIG` outside 0..max
 */
export function checkFlushDelay(delayMs: number, max: number = MAX_FLUSH_DELAY_MS, name = 'flushDelayMs'): void {
  if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0 || delayMs > max) {
    throw new HarnessError(`${name} must be 0..${max} ms, got ${String(delayMs)}`, 'INVALID_CONFIG')
  }
}

interface Deferred {
  readonly promise: Promise<void>
  resolve(): void
  reject(error: unknown): void
}

function deferred(): Deferred {
  let resolve!: () => void
  let reject!: (error: unknown) => void
  const promise = new Promise<void>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/**
 * Group commit for one session writer. `append` only buffers (the loop calls it synchronously for every
 * committed event); a flush hands everything buffered to the sink as one batch. Flushes happen when a caller
 * awaits {@link flush} (before tool bodies, at turn/end) and on a short unref'd timer after the first buffered
 * append, so nothing waits long and a streaming step costs one fsync per timer tick, never one per chunk.
 * Only one batch is in flight; a flush requested meanwhile waits for the next batch, which then carries
 * everything appended up to that point (concurrent flushes coalesce into it).
 */
export class GroupCommit {
  readonly #sink: BatchSink
  readonly #delayMs: number
  #buffer: SessionEvent[] = []
  #writing = false
  /** Waiters for the batch in flight. */
  #current: Deferred | undefined
  /** Waiters for events still in the buffer. */
  #next: Deferred | undefined
  #timer: NodeJS.Timeout | undefined
  #stopped = false
  #failure: unknown = undefined

  /**
   * @param sink - writes one batch durably
   * @param delayMs - timer flush delay after the first buffered append (0..50, or up to `maxDelayMs`)
   * @param maxDelayMs - the largest delay accepted (default {@link MAX_FLUSH_DELAY_MS}; interval mode allows more)
   */
  constructor(sink: BatchSink, delayMs: number, maxDelayMs: number = MAX_FLUSH_DELAY_MS) {
    checkFlushDelay(delayMs, maxDelayMs)
    this.#sink = sink
    this.#delayMs = delayMs
  }

  /** Number of events buffered and not yet handed to the sink. */
  get buffered(): number {
    return this.#buffer.length
  }

  /** Whether the last batch handed to the sink failed (and is buffered again for the next flush). */
  get failed(): boolean {
    return this.#failure !== undefined
  }

  /** Buffers one event; arms the timer flush if nothing else will write it soon. */
  append(event: SessionEvent): void {
    this.#buffer.push(event)
    if (this.#timer === undefined && !this.#writing && !this.#stopped) this.#armTimer()
  }

  /** Resolves once every event appended before this call is durable; rejects with the sink's error. */
  flush(): Promise<void> {
    if (this.#buffer.length === 0) {
      if (!this.#writing) return Promise.resolve()
      this.#current ??= deferred()
      return this.#current.promise
    }
    this.#next ??= deferred()
    const waiting = this.#next.promise
    this.#startWrite()
    return waiting
  }

  /** Stops the timer for good and flushes what is buffered. */
  async stop(): Promise<void> {
    this.#stopped = true
    this.#clearTimer()
    await this.flush()
  }

  #armTimer(): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      this.#startWrite()
    }, this.#delayMs)
    this.#timer.unref()
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #startWrite(): void {
    if (this.#writing || this.#buffer.length === 0) return
    this.#clearTimer()
    const batch = this.#buffer
    this.#buffer = []
    this.#writing = true
    // Whoever waited for the buffer now waits for this batch.
    this.#current = this.#next
    this.#next = undefined
    const settle = (error: unknown, failed: boolean): void => {
      const waiters = this.#current
      this.#current = undefined
      this.#writing = false
      this.#failure = failed ? (error ?? new Error('the batch write failed')) : undefined
      if (failed) {
        // Keep the batch, in order, ahead of anything appended meanwhile: the next flush retries it.
        this.#buffer = batch.concat(this.#buffer)
        waiters?.reject(error)
      } else {
        waiters?.resolve()
      }
      if (this.#next !== undefined) this.#startWrite()
      // After a failure only an explicit flush or a new append retries, so a broken disk is not hammered.
      else if (!failed && this.#buffer.length > 0 && !this.#stopped) this.#armTimer()
    }
    Promise.resolve()
      .then(() => this.#sink(batch))
      .then(
        () => settle(undefined, false),
        (error: unknown) => settle(error, true),
      )
  }
}

/**
 * The seq-checked front every store writer puts before its {@link GroupCommit}: appends must continue the log
 * exactly (`SESSION_CORRUPT` otherwise) and are refused once the writer is stopping (`SESSION_CLOSED`).
 */
export class SequencedCommit {
  readonly #id: string
  readonly #commit: GroupCommit
  #nextSeq: number
  #stopped = false

  /**
   * @param id - session id, for messages
   * @param nextSeq - seq the next append must carry
   * @param sink - writes one batch durably
   * @param delayMs - timer flush delay
   * @param maxDelayMs - the largest delay accepted (see {@link GroupCommit})
   */
  constructor(id: string, nextSeq: number, sink: BatchSink, delayMs: number, maxDelayMs: number = MAX_FLUSH_DELAY_MS) {
    this.#id = id
    this.#nextSeq = nextSeq
    this.#commit = new GroupCommit(sink, delayMs, maxDelayMs)
  }

  /** Whether the last batch write failed (see {@link GroupCommit.failed}). */
  get failed(): boolean {
    return this.#commit.failed
  }

  /** Buffers the next event of the log. */
  append(event: SessionEvent): void {
    if (this.#stopped) throw new HarnessError(`session '${this.#id}' writer is closed`, 'SESSION_CLOSED')
    if (event.seq !== this.#nextSeq) {
      throw new HarnessError(`append of seq ${event.seq} to session '${this.#id}' whose next seq is ${this.#nextSeq}`, 'SESSION_CORRUPT')
    }
    this.#nextSeq++
    this.#commit.append(event)
  }

  /** Resolves once everything appended so far is durable. */
  flush(): Promise<void> {
    return this.#commit.flush()
  }

  /** The seq the next append must carry. */
  get nextSeq(): number {
    return this.#nextSeq
  }

  /** Whether appends are refused (the writer is stopping). */
  get stopped(): boolean {
    return this.#stopped
  }

  /**
   * Buffers a packed row standing for the next `count` events (its `seq0` must be the next seq): it travels to
   * the sink in its batch like an event, and the encoder writes it as it is.
   */
  appendRecord(record: { readonly seq0: number }, count: number): void {
    if (this.#stopped) throw new HarnessError(`session '${this.#id}' writer is closed`, 'SESSION_CLOSED')
    if (record.seq0 !== this.#nextSeq) {
      throw new HarnessError(`append of seq ${record.seq0} to session '${this.#id}' whose next seq is ${this.#nextSeq}`, 'SESSION_CORRUPT')
    }
    this.#nextSeq += count
    this.#commit.append(record as unknown as SessionEvent)
  }

  /** Sets the next seq (once a loaded log's length is known). */
  continueAt(seq: number): void {
    this.#nextSeq = seq
  }

  /** Refuses further appends at once, then flushes what is buffered. */
  stop(): Promise<void> {
    this.#stopped = true
    return this.#commit.stop()
  }
}
