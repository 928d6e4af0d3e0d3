import { HarnessError } from '../errors/harness-error.js'
import { EventLog, eventLogOf } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import type { CompactSessionWriter } from '../session/session-writer.js'
import { MemoryCheckpointBlobs } from './checkpoint-blobs.js'
import { SessionDigest, summaryOf } from './session-digest.js'
import { firstMatch, indexedTexts, needleMatcher } from './content-search.js'
import { newestFirst, pageOf } from './session-list.js'
import { storedSession } from './stored-log.js'
import type { SessionList, SessionListOptions, SessionStore, SessionWriter, StoredSession } from './types.js'

interface Entry {
  header: SessionHeader
  /** Compact: the loop's chunks arrive as compact records and stay packed in runs. */
  log: EventLog
  updatedAt: number
  locked: boolean
  /**
   * Set while `log` is the open session's own log (`shareLog` of the writer `sharedBy`): how many of its
   * events this store was given. The session pushes each event right after the writer took it, so the two
   * agree between appends.
   */
  sharedUpTo: number | undefined
  sharedBy: object | undefined
}

// What the store holds of `entry`. A shared log that got events this store was never given (its session was
// rewired and appended without the writer) is cut back to what was written, and no longer shared.
function storedLog(entry: Entry): EventLog {
  if (entry.sharedUpTo !== undefined && entry.log.length > entry.sharedUpTo) unshare(entry)
  return entry.log
}

// Stops sharing the session's log: the store keeps a copy of what it was given, which no longer grows and does
// not hold the session's materialised chunk events.
function unshare(entry: Entry): void {
  const upTo = entry.sharedUpTo
  if (upTo === undefined) return
  entry.log = entry.log.length === upTo ? entry.log.detached() : eventLogOf(entry.log.slice(0, upTo))
  entry.sharedUpTo = undefined
  entry.sharedBy = undefined
}

// A read-only copy for a reader: a shared log's runs are the live session's, so the reader gets its own.
function readerCopy(entry: Entry): EventLog {
  const log = storedLog(entry)
  return entry.sharedUpTo !== undefined ? log.detached() : log.snapshot()
}

const resolved: Promise<void> = Promise.resolve()

/**
 * Keeps sessions in this process's memory (the default store): fast, and gone when the process exits. Same
 * contract as the durable stores, single-writer lock included.
 */
export class MemoryStore implements SessionStore {
  readonly #sessions = new Map<string, Entry>()
  /** File checkpoints of these sessions, in memory like the sessions. */
  readonly checkpointBlobs = new MemoryCheckpointBlobs()

  async create(header: SessionHeader, seed: readonly SessionEvent[] = []): Promise<SessionWriter> {
    if (this.#sessions.has(header.id)) throw new HarnessError(`session '${header.id}' already exists`, 'SESSION_EXISTS')
    const entry: Entry = { header, log: eventLogOf(seed), updatedAt: Date.now(), locked: true, sharedUpTo: undefined, sharedBy: undefined }
    this.#sessions.set(header.id, entry)
    return this.#writer(entry)
  }

  async open(id: string): Promise<StoredSession & { writer: SessionWriter }> {
    const entry = this.#get(id)
    if (entry.locked) throw new HarnessError(`session '${id}' is open in another writer`, 'SESSION_LOCKED')
    entry.locked = true
    unshare(entry) // a writer left open by a closed store no longer owns the log
    return Object.assign(storedSession(entry.header, readerCopy(entry)), { writer: this.#writer(entry) })
  }

  async read(id: string): Promise<StoredSession> {
    const entry = this.#get(id)
    return storedSession(entry.header, readerCopy(entry))
  }

  async has(id: string): Promise<boolean> {
    return this.#sessions.has(id)
  }

  /**
   * Every session summarised from its events (title, first prompt, turns), newest first, paged as asked.
   * `grep` reads every session's prompts, answers and tool results (they are in memory: no index).
   */
  async list(options?: SessionListOptions): Promise<SessionList> {
    const all = [...this.#sessions.values()].map((e) => {
      const digest = new SessionDigest()
      digest.observe(storedLog(e).eventsWithoutChunks(0))
      return summaryOf(e.header, digest, e.updatedAt)
    })
    let find: ((text: string, from?: number) => number) | undefined
    return pageOf(all.sort(newestFirst), options, (summary, needle) => {
      const entry = this.#sessions.get(summary.id)
      if (entry === undefined) return undefined
      find ??= needleMatcher(needle)
      return firstMatch(indexedTexts(storedLog(entry).eventsWithoutChunks(0)), needle, find)
    })
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
    for (const entry of this.#sessions.values()) {
      unshare(entry)
      entry.locked = false
    }
  }

  #get(id: string): Entry {
    const entry = this.#sessions.get(id)
    if (entry === undefined) throw new HarnessError(`no session '${id}' in this memory store`, 'SESSION_NOT_FOUND')
    return entry
  }

  #writer(entry: Entry): CompactSessionWriter {
    let open = true
    const self = {}
    const check = (seq: number): void => {
      if (!open) throw new HarnessError(`session '${entry.header.id}' writer is closed`, 'SESSION_CLOSED')
      const next = entry.sharedBy === self ? (entry.sharedUpTo as number) : storedLog(entry).length
      if (seq !== next) throw new HarnessError(`append of seq ${seq} to session '${entry.header.id}' whose next seq is ${next}`, 'SESSION_CORRUPT')
    }
    return {
      compactRecords: true,
      append(record) {
        check(record.seq)
        if (entry.sharedBy === self) (entry.sharedUpTo as number)++
        else if (!('kind' in record)) entry.log.push(record)
        else if (record.kind === 'text') entry.log.pushText(record.time, record.turn, record.step, record.type, record.index, record.text)
        else entry.log.pushChunk(record.time, record.turn, record.step, record.chunk)
        entry.updatedAt = record.time
      },
      // Keeps the session's own compact log instead of a second copy of every run (a long in-memory session
      // held its chunk runs twice). Only a log that holds exactly what this store holds is taken.
      shareLog(log) {
        if (!open || !entry.locked || entry.sharedBy !== undefined || log === entry.log || log.length !== entry.log.length) return
        entry.log = log
        entry.sharedUpTo = log.length
        entry.sharedBy = self
      },
      flush: () => resolved,
      close: async () => {
        if (!open) return
        open = false
        if (entry.sharedBy === self) unshare(entry)
        entry.locked = false
      },
    }
  }
}
