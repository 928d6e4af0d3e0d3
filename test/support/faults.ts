import { HarnessError, MemoryStore, type SessionEvent, type SessionStore, type SessionWriter } from '../../src/index.js'
import type { Message } from '../../src/llm/types.js'

/**
 * A MemoryStore whose writers are replaced by `wrap(writer)`: the seam fault tests use to make a store slow or
 * failing. `open` keeps the stored session's own (non-enumerable, lazy) fields by assigning the writer onto it.
 */
export function wrappedStore(wrap: (writer: SessionWriter) => SessionWriter): SessionStore {
  const inner = new MemoryStore()
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
 * throws, so the event never commits. `fails` sees every event offered to the store: the wrapped writer has no
 * compact `appendChunk`, so streamed chunks arrive as events too.
 */
export function faultyStore(fails: (event: SessionEvent) => boolean): SessionStore {
  return wrappedStore((writer) => ({
    append(event: SessionEvent) {
      if (fails(event)) throw new HarnessError(`store write failed for seq ${event.seq} (${event.type})`, 'STORE_WRITE_FAILED')
      writer.append(event)
    },
    flush: () => writer.flush(),
    close: () => writer.close(),
  }))
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
