import { HarnessError } from '../errors/harness-error.js'
import { EventLog, eventLogOf } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import { SessionDigest, summaryOf } from './session-digest.js'
import { newestFirst, pageOf } from './session-list.js'
import { storedSession } from './stored-log.js'
import type { SessionList, SessionListOptions, SessionStore, SessionWriter, StoredSession } from './types.js'

interface Entry {
  header: SessionHeader
  /** Compact: the loop's chunks arrive through `appendChunk` and stay packed in runs. */
  log: EventLog
  updatedAt: number
  locked: boolean
}

const resolved: Promise<void> = Promise.resolve()

/**
 * Keeps sessions in this process's memory (the default store): fast, and gone when the process exits. Same
 * contract as the durable stores, single-writer lock included.
 */
export class MemoryStore implements SessionStore {
  readonly #sessions = new Map<string, Entry>()

  async create(header: SessionHeader, seed: readonly SessionEvent[] = []): Promise<SessionWriter> {
    if (this.#sessions.has(header.id)) throw new HarnessError(`session '${header.id}' already exists`, 'SESSION_EXISTS')
    const entry: Entry = { header, log: eventLogOf(seed), updatedAt: Date.now(), locked: true }
    this.#sessions.set(header.id, entry)
    return this.#writer(entry)
  }

  async open(id: string): Promise<StoredSession & { writer: SessionWriter }> {
    const entry = this.#get(id)
    if (entry.locked) throw new HarnessError(`session '${id}' is open in another writer`, 'SESSION_LOCKED')
    entry.locked = true
    return Object.assign(storedSession(entry.header, entry.log.snapshot()), { writer: this.#writer(entry) })
  }

  async read(id: string): Promise<StoredSession> {
    const entry = this.#get(id)
    return storedSession(entry.header, entry.log.snapshot())
  }

  async has(id: string): Promise<boolean> {
    return this.#sessions.has(id)
  }

  /** Every session summarised from its events (title, first prompt, turns), newest first, paged as asked. */
  async list(options?: SessionListOptions): Promise<SessionList> {
    const all = [...this.#sessions.values()].map((e) => {
      const digest = new SessionDigest()
      digest.observe(e.log.eventsWithoutChunks(0))
      return summaryOf(e.header, digest, e.updatedAt)
    })
    return pageOf(all.sort(newestFirst), options)
  }

  /**
   * Forgets a session (its events become garbage). For long-running processes that keep sessions in memory
   * only: nothing else ever drops them. Refused with `SESSION_LOCKED` while a writer holds the session.
   * @returns whether the session existed
   */
  delete(id: string): boolean {
    const entry = this.#sessions.get(id)
    if (entry === undefined) return false
    if (entry.locked) throw new HarnessError(`session '${id}' is open in a writer; dispose its agent first`, 'SESSION_LOCKED')
    return this.#sessions.delete(id)
  }

  async close(): Promise<void> {
    for (const entry of this.#sessions.values()) entry.locked = false
  }

  #get(id: string): Entry {
    const entry = this.#sessions.get(id)
    if (entry === undefined) throw new HarnessError(`no session '${id}' in this memory store`, 'SESSION_NOT_FOUND')
    return entry
  }

  #writer(entry: Entry): SessionWriter {
    let open = true
    const check = (seq: number): void => {
      if (!open) throw new HarnessError(`session '${entry.header.id}' writer is closed`, 'SESSION_CLOSED')
      if (seq !== entry.log.length) {
        throw new HarnessError(`append of seq ${seq} to session '${entry.header.id}' whose next seq is ${entry.log.length}`, 'SESSION_CORRUPT')
      }
    }
    return {
      append(event) {
        check(event.seq)
        entry.log.push(event)
        entry.updatedAt = event.time
      },
      appendChunk(seq, time, turn, step, chunk) {
        check(seq)
        entry.log.pushChunk(time, turn, step, chunk)
        entry.updatedAt = time
      },
      appendText(seq, time, turn, step, type, index, text) {
        check(seq)
        entry.log.pushText(time, turn, step, type, index, text)
        entry.updatedAt = time
      },
      flush: () => resolved,
      close: async () => {
        if (!open) return
        open = false
        entry.locked = false
      },
    }
  }
}
