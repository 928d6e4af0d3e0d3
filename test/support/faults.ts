import { HarnessError, MemoryStore, type SessionEvent, type SessionStore } from '../../src/index.js'
import type { Message } from '../../src/llm/types.js'

/**
 * A MemoryStore whose writers refuse the appends `fails` picks (like a disk that cannot write): the append
 * throws, so the event never commits. `fails` sees every event offered to the store.
 */
export function faultyStore(fails: (event: SessionEvent) => boolean): SessionStore {
  const inner = new MemoryStore()
  const wrap = <W extends { append(event: SessionEvent): void }>(writer: W): W =>
    Object.assign(Object.create(Object.getPrototypeOf(writer) as object) as W, writer, {
      append(event: SessionEvent) {
        if (fails(event)) throw new HarnessError(`store write failed for seq ${event.seq} (${event.type})`, 'STORE_WRITE_FAILED')
        writer.append(event)
      },
      flush: () => (writer as unknown as { flush(): Promise<void> }).flush(),
      close: () => (writer as unknown as { close(): Promise<void> }).close(),
    })
  return {
    create: async (header, seed) => wrap(await inner.create(header, seed)),
    open: async (id) => {
      const stored = await inner.open(id)
      return { ...stored, writer: wrap(stored.writer) }
    },
    read: (id) => inner.read(id),
    has: (id) => inner.has(id),
    list: () => inner.list(),
    close: () => inner.close(),
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
