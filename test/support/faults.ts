import { HarnessError, MemoryStore, type SessionEvent, type SessionStore, type SessionWriter } from '../../src/index.js'
import type { Message } from '../../src/llm/types.js'

/**
 * A MemoryStore whose writers are replaced by `wrap(writer)`: the seam fault tests use to make a store slow or
 * failing. `open` keeps the stored session's own (non-enumerable, lazy) fields by assigning the writer onto it.
 */
export function wrappedStore(wrap: (writer: SessionWriter) => SessionWriter, inner: SessionStore = new MemoryStore()): SessionStore {
  return {
    create: async (header, seed) => wrap(await inner.create(header, seed)),
    open: async (id) => {
      const stored = await inner.open(id)
      return Object.assign(stored, { writer: wrap(stored.writer) })
    },
    read: (id) => inner.read(id),
    has: (id) => inner.has(id),
    list: (options) => inner.list(options),
    close: () => inner.close(),
  }
}

/**
 * A MemoryStore whose writers refuse the appends `fails` picks (like a disk that cannot write): the append
 * throws, so the event never commits. `fails` sees every event offered to the store: the wrapped writer does not set
 * `compactRecords`, so streamed chunks arrive as events too.
 */
export function faultyStore(fails: (event: SessionEvent) => boolean, inner?: SessionStore): SessionStore {
  return wrappedStore((writer) => ({
    append(event: SessionEvent) {
      if (fails(event)) throw new HarnessError(`store write failed for seq ${event.seq} (${event.type})`, 'STORE_WRITE_FAILED')
      writer.append(event)
    },
    flush: () => writer.flush(),
    close: () => writer.close(),
  }), inner)
}

/** A store whose flushes can be made to fail, and what it really persisted. */
export interface FlushFaultStore extends SessionStore {
  /** Flushes asked for so far (every writer's, close's included), failed ones included. */
  readonly flushes: number
  /** Flushes that failed so far. */
  readonly failedFlushes: number
  /** How many events of session `id` the store has persisted (made durable by a flush that succeeded). */
  durableLength(id: string): number
}

/**
 * A MemoryStore behind writers that persist like a file store's group commit: an append is only buffered, a
 * flush hands the buffer to the store, and `fails(n)` makes the nth flush of the store (1-based, counted over
 * all its writers, `close()`'s included) fail with `SESSION_WRITE_FAILED` instead — its batch stays buffered
 * for the next flush, as `GroupCommit` keeps it. What the inner store holds (`read`, {@link
 * FlushFaultStore.durableLength}) is exactly what reached "disk". A writer closes (releasing its lock) even
 * when its last flush fails, and then rejects.
 */
export function flushFaultStore(fails: (n: number) => boolean, inner: SessionStore = new MemoryStore()): FlushFaultStore {
  let flushes = 0
  let failedFlushes = 0
  const durable = new Map<string, number>()
  const wrap = (id: string, writer: SessionWriter, length: number): SessionWriter => {
    let buffer: SessionEvent[] = []
    durable.set(id, length)
    const flush = async (): Promise<void> => {
      const n = ++flushes
      if (fails(n)) {
        failedFlushes++
        throw new HarnessError(`could not write session '${id}': flush ${n} failed (injected)`, 'SESSION_WRITE_FAILED')
      }
      const batch = buffer
      buffer = []
      for (const event of batch) writer.append(event)
      await writer.flush()
      durable.set(id, (durable.get(id) ?? 0) + batch.length)
    }
    return {
      append: (event) => void buffer.push(event),
      flush,
      close: async () => {
        try {
          await flush()
        } finally {
          await writer.close()
        }
      },
    }
  }
  return {
    create: async (header, seed) => wrap(header.id, await inner.create(header, seed), seed?.length ?? 0),
    open: async (id) => {
      const stored = await inner.open(id)
      return Object.assign(stored, { writer: wrap(id, stored.writer, stored.log?.length ?? stored.events.length) })
    },
    read: (id) => inner.read(id),
    has: (id) => inner.has(id),
    list: (options) => inner.list(options),
    close: () => inner.close(),
    get flushes() {
      return flushes
    },
    get failedFlushes() {
      return failedFlushes
    },
    durableLength: (id) => durable.get(id) ?? 0,
  }
}

/** Fails on the first `count` events that match, then lets everything through. */
export function firstMatches(count: number, match: (event: SessionEvent) => boolean): (event: SessionEvent) => boolean {
  let left = count
  return (event) => {
    if (left > 0 && match(event)) {
      left--
      return true
    }
    return false
  }
}

/**
 * The OpenAI chat-completions rule, checked strictly on a request's messages: every tool call of an assistant
 * message is answered by exactly one tool result before the next assistant or user message, and no tool result
 * answers a call that is not pending. Returns the first problem, or undefined.
 */
export function openAiChatRuleProblem(messages: readonly Message[]): string | undefined {
  let pending = new Set<string>()
  for (const [i, m] of messages.entries()) {
    const results = m.content.filter((b) => b.type === 'tool-result')
    if (m.role === 'user' && results.length > 0) {
      if (results.length !== m.content.length) return `message ${i} mixes tool results with other content`
      for (const r of results) {
        if (!pending.delete(r.toolCallId)) return `message ${i} answers tool call ${r.toolCallId}, which is not pending`
      }
      continue
    }
    if (pending.size > 0) return `message ${i} (${m.role}) comes while tool calls ${[...pending].join(', ')} are unanswered`
    if (m.role === 'assistant') pending = new Set(m.content.flatMap((b) => (b.type === 'tool-call' ? [b.id] : [])))
  }
  return pending.size > 0 ? `the history ends with tool calls ${[...pending].join(', ')} unanswered` : undefined
}
