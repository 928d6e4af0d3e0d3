import { HarnessError } from '../../errors/harness-error.js'
import type { SessionEvent } from '../../session/events.js'
import { SequencedCommit } from '../group-commit.js'
import type { SessionWriter } from '../types.js'

/** What `sessions.status` says about a session: a turn is open, nothing to do, or input waits in its log. */
export type SessionStatus = 'idle' | 'running' | 'pending' | 'quarantined'

/** One flush as the store commits it: a single statement that checks the epoch first. */
export interface BatchCommit {
  readonly id: string
  readonly epoch: number
  readonly batch: readonly SessionEvent[]
  /** Inbox rows whose `agent/inbox/*` events are in this batch: deleted in the same statement. */
  readonly inboxIds: readonly string[]
  /** New `status`, when the batch opens or closes a turn. */
  readonly status: SessionStatus | undefined
  /** A title found in the batch (first user prompt), when the session has none yet. */
  readonly title: string | undefined
}

/** What a {@link PostgresWriter} needs from its store. */
export interface WriterBackend {
  readonly flushDelayMs: number
  commitBatch(commit: BatchCommit): Promise<void>
  release(id: string, epoch: number, status: SessionStatus | undefined): Promise<void>
  deleteInboxRows(id: string, epoch: number, ids: readonly string[]): Promise<void>
  untrack(writer: PostgresWriter): void
  leaseLost(writer: PostgresWriter, error: HarnessError, during: 'flush' | 'renewal'): void
}

interface PendingDelete {
  /** Seq of the last event the moved rows produced. */
  readonly seq: number
  readonly ids: readonly string[]
}

const TITLE_LENGTH = 80

/**
 * The writer of one session in a {@link PostgresStore}: group commit (one statement per flush) under a lease
 * identified by `epoch`. Once fenced — a flush or a renewal found a newer epoch — it writes nothing more:
 * appends and flushes throw `LEASE_LOST`, and closing it releases nothing (the lease is someone else's).
 */
export class PostgresWriter implements SessionWriter {
  /** Session id. */
  readonly id: string
  /** The lease generation this writer holds. */
  readonly epoch: number
  readonly #backend: WriterBackend
  readonly #commit: SequencedCommit
  readonly #deletes: PendingDelete[] = []
  #nextSeq: number
  /** Last seq known to be committed. */
  #durableSeq: number
  #fenced: HarnessError | undefined
  #titled: boolean
  #releaseStatus: SessionStatus | undefined
  #closing: Promise<void> | undefined

  /**
   * @param backend - the store
   * @param id - session id
   * @param epoch - lease generation from the claim
   * @param nextSeq - seq of the next append
   * @param titled - whether the session already has a title
   */
  constructor(backend: WriterBackend, id: string, epoch: number, nextSeq: number, titled: boolean) {
    this.#backend = backend
    this.id = id
    this.epoch = epoch
    this.#nextSeq = nextSeq
    this.#durableSeq = nextSeq - 1
    this.#titled = titled
    this.#commit = new SequencedCommit(id, nextSeq, (batch) => this.#sink(batch), backend.flushDelayMs)
  }

  /** The `LEASE_LOST` error once this writer is fenced off. */
  get fenced(): HarnessError | undefined {
    return this.#fenced
  }

  /** Seq the next append must carry. */
  get nextSeq(): number {
    return this.#nextSeq
  }

  append(event: SessionEvent): void {
    if (this.#fenced !== undefined) throw this.#fenced
    this.#commit.append(event)
    this.#nextSeq = event.seq + 1
  }

  flush(): Promise<void> {
    if (this.#fenced !== undefined) return Promise.reject(this.#fenced)
    return this.#commit.flush()
  }

  /**
   * Runs `apply` (which turns inbox rows into log events, synchronously) and ties the rows' deletion to the
   * flush that makes those events durable: the rows and their events change hands in one statement, so a crash
   * leaves either the rows or the events, never both and never neither. Resolves once that flush committed.
   */
  async moveInboxRows(ids: readonly string[], apply: () => void): Promise<void> {
    if (this.#fenced !== undefined) throw this.#fenced
    const before = this.#nextSeq
    apply()
    if (ids.length === 0) return
    if (this.#nextSeq === before) {
      // Nothing was logged (a cancel of an idle, empty inbox): the rows go on their own, still fenced.
      await this.#backend.deleteInboxRows(this.id, this.epoch, ids)
      return
    }
    this.#deletes.push({ seq: this.#nextSeq - 1, ids })
    await this.flush()
  }

  /** Sets the `status` written when this writer releases the session (e.g. `pending` for queued input). */
  releaseAs(status: SessionStatus): void {
    this.#releaseStatus = status
  }

  /**
   * @internal Fences this writer off (its lease was taken over): buffered events are dropped, every later
   * append or flush throws `error`. `during` says who found out: a refused flush or a lease renewal.
   */
  fence(error: HarnessError, during: 'flush' | 'renewal'): void {
    if (this.#fenced !== undefined) return
    this.#fenced = error
    this.#backend.leaseLost(this, error, during)
  }

  /**
   * @internal A renewal found the lease gone. Events not yet committed are flushed anyway, so the database's
   * refusal is what fences this writer (the flush is the fence; the renewal only hurries it); with nothing
   * pending it is fenced at once.
   */
  leaseMissed(error: HarnessError): void {
    if (this.#fenced !== undefined) return
    if (this.#nextSeq - 1 <= this.#durableSeq) {
      this.fence(error, 'renewal')
      return
    }
    this.#commit.flush().then(
      () => undefined,
      () => this.fence(error, 'renewal'),
    )
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await this.#commit.stop()
      } catch (error) {
        if (this.#fenced === undefined) throw error
      } finally {
        this.#backend.untrack(this)
      }
      if (this.#fenced === undefined) await this.#backend.release(this.id, this.epoch, this.#releaseStatus)
    })()
    return this.#closing
  }

  async #sink(batch: readonly SessionEvent[]): Promise<void> {
    if (this.#fenced !== undefined) throw this.#fenced
    const last = (batch[batch.length - 1] as SessionEvent).seq
    const due = this.#deletes.filter((d) => d.seq <= last)
    const title = this.#titled ? undefined : titleOf(batch)
    try {
      await this.#backend.commitBatch({ id: this.id, epoch: this.epoch, batch, inboxIds: due.flatMap((d) => d.ids), status: statusOf(batch), title })
    } catch (error) {
      if (error instanceof HarnessError && error.code === 'LEASE_LOST') this.fence(error, 'flush')
      throw error
    }
    this.#durableSeq = last
    if (title !== undefined) this.#titled = true
    for (const d of due) this.#deletes.splice(this.#deletes.indexOf(d), 1)
  }
}

/**
 * `running` when the batch leaves a turn open, `idle` when it closes the last one it touches (or lifts a
 * quarantine), `quarantined` when it marks the session so.
 */
function statusOf(batch: readonly SessionEvent[]): SessionStatus | undefined {
  for (let i = batch.length - 1; i >= 0; i--) {
    const type = (batch[i] as SessionEvent).type
    if (type === 'session/quarantined') return 'quarantined'
    if (type === 'turn/end' || type === 'session/quarantine-lifted') return 'idle'
    if (type === 'turn/start') return 'running'
  }
  return undefined
}

function titleOf(batch: readonly SessionEvent[]): string | undefined {
  for (const event of batch) {
    if (event.type !== 'user/message') continue
    const message = event.data as { source?: { kind?: string }; content?: readonly { type: string; text?: string }[] }
    if (message.source?.kind !== 'user') continue
    const text = (message.content ?? [])
      .map((c) => (c.type === 'text' ? (c.text ?? '') : ''))
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim()
    if (text !== '') return text.length > TITLE_LENGTH ? `${text.slice(0, TITLE_LENGTH - 1)}…` : text
  }
  return undefined
}
