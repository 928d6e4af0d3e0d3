import type { ContentBlock, Message, TokenUsage } from '../../llm/types.js'
import type { SessionEvent } from '../../session/events.js'
import type { Session } from '../../session/session.js'
import { projectSurfaceEvent } from '../../session/surface.js'

// A block or message costs its characters / 4 plus a small framing overhead (the usual heuristic for BPE
// tokenisers on English and code; it only has to be good enough to decide when to compact).
const CHARS_PER_TOKEN = 4
const BLOCK_OVERHEAD = 4
const MESSAGE_OVERHEAD = 4
const IMAGE_TOKENS = 1_000

const estimates = new WeakMap<object, number>()

/** Estimated tokens of one message (cached per frozen message object: history messages are shared). */
export function estimateMessageTokens(message: Message): number {
  const cached = estimates.get(message)
  if (cached !== undefined) return cached
  const tokens = MESSAGE_OVERHEAD + estimateBlocks(message.content)
  if (Object.isFrozen(message)) estimates.set(message, tokens)
  return tokens
}

/** Estimated tokens of free text (a system prompt, serialised tool schemas). */
export function estimateTextTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN)
}

function estimateBlocks(blocks: readonly ContentBlock[]): number {
  let tokens = 0
  for (const block of blocks) {
    tokens += BLOCK_OVERHEAD
    switch (block.type) {
      case 'text':
      case 'reasoning':
        tokens += estimateTextTokens(block.text)
        break
      case 'tool-call':
        tokens += estimateTextTokens(block.name) + estimateTextTokens(block.arguments)
        break
      case 'tool-result':
        tokens += estimateBlocks(block.content)
        break
      case 'image':
        tokens += IMAGE_TOKENS
        break
    }
  }
  return tokens
}

/** Prompt tokens a usage record stands for (its buckets do not overlap: uncached + cache read + cache write). */
export function promptTokensOf(usage: TokenUsage): number {
  return usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0)
}

/** How full the next request would be, and where that figure comes from. */
export interface Pressure {
  readonly tokens: number
  /** `usage`: the last request's logged usage plus estimates of what came after it; `estimate`: all estimated. */
  readonly source: 'usage' | 'estimate'
}

/**
 * Measures the next request: the last request's logged prompt tokens plus its output (now history) plus an
 * estimate of every surface node added after it and of `pending` messages not yet logged. Without usage — none
 * logged, or a replace since made it stale — the whole request (history, system prompt, tools) is estimated.
 */
export function measurePressure(session: Session, pending: readonly Message[] = []): Pressure {
  const nodes = session.surfaceNodes()
  let pendingTokens = 0
  for (const m of pending) pendingTokens += estimateMessageTokens(m)
  const anchor = lastUsageAnchor(session)
  if (anchor !== undefined) {
    const index = nodes.lastIndexOf(anchor.seq)
    if (index >= 0) {
      let tokens = promptTokensOf(anchor.usage) + anchor.usage.outputTokens + pendingTokens
      for (let i = index + 1; i < nodes.length; i++) tokens += nodeTokens(session, nodes[i] as number)
      return { tokens, source: 'usage' }
    }
  }
  return { tokens: estimateRequestTokens(session, 0, nodes.length) + pendingTokens, source: 'estimate' }
}

/** Estimated tokens of the system prompt, tools and the surface nodes in `[from, to)`. */
export function estimateRequestTokens(session: Session, from: number, to: number): number {
  const header = session.requestHeader()
  let tokens = estimateTextTokens(header?.system ?? '') + estimateTextTokens(header?.tools === undefined ? '' : JSON.stringify(header.tools))
  const nodes = session.surfaceNodes()
  for (let i = from; i < to; i++) tokens += nodeTokens(session, nodes[i] as number)
  return tokens
}

function nodeTokens(session: Session, seq: number): number {
  const message = projectSurfaceEvent(session.at(seq) as SessionEvent)
  return message === undefined ? 0 : estimateMessageTokens(message)
}

// The newest assistant/message with usage, unless a replace came after it (then its figure no longer describes
// the history). Scans back over the current step only: O(recent events), not O(log).
function lastUsageAnchor(session: Session): { seq: number; usage: TokenUsage } | undefined {
  for (let seq = session.length - 1; seq >= 0; seq--) {
    const event = session.at(seq) as SessionEvent
    if (typeof event.surfaceOp === 'object') return undefined
    if (event.type !== 'assistant/message') continue
    const usage = (event.data as { usage?: TokenUsage }).usage
    return usage === undefined ? undefined : { seq, usage }
  }
  return undefined
}

/** The older part of the history a compaction would replace, and the tail it keeps verbatim. */
export interface CompactionPlan {
  /** Surface node seqs to replace (first = `start`, last = `end` of the replace), in history order. */
  readonly shadowedSeqs: readonly number[]
  /** The messages those nodes contribute (what the summary call reads). */
  readonly headMessages: readonly Message[]
  /** Index into the surface nodes where the kept tail begins. */
  readonly tailIndex: number
}

/**
 * Picks the compaction boundary: the history is cut into model turns — each assistant reply with the tool results
 * answering it and the user input before it — and the newest `keepRecentTurns` of them stay verbatim. A cut
 * falls only where every tool call before it has its result before it, so a call is never separated from its
 * result. Returns `undefined` when there is nothing worth replacing (no older turn, or only an earlier summary).
 * @param isSummary - tells an earlier compaction's summary message apart (replacing it alone gains nothing)
 */
export function planCompaction(session: Session, keepRecentTurns: number, isSummary: (message: Message) => boolean): CompactionPlan | undefined {
  const nodes = session.surfaceNodes()
  const messages = nodes.map((seq) => projectSurfaceEvent(session.at(seq) as SessionEvent))
  const starts = turnStarts(messages)
  if (starts.length <= keepRecentTurns) return undefined
  const tailIndex = starts[starts.length - keepRecentTurns] as number
  if (tailIndex <= 0) return undefined
  const head = messages.slice(0, tailIndex).filter((m): m is Message => m !== undefined)
  if (head.length === 0 || (head.length === 1 && isSummary(head[0] as Message))) return undefined
  return { shadowedSeqs: nodes.slice(0, tailIndex), headMessages: head, tailIndex }
}

// Indexes where a model turn begins: the first message after the previous turn's assistant reply and its tool
// results, and only where the history before it is balanced (no tool call still waiting for its result).
function turnStarts(messages: readonly (Message | undefined)[]): number[] {
  const starts: number[] = []
  const pending = new Set<string>()
  let previous: 'reply' | 'input' | undefined
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (m === undefined) continue // an empty assistant anchor contributes nothing
    const kind = m.role === 'assistant' || m.content.some((b) => b.type === 'tool-result') ? 'reply' : 'input'
    const isResult = m.role === 'user' && kind === 'reply'
    // User input opens a turn after a reply; a reply right after input belongs to that input's turn.
    if (!isResult && previous !== 'input' && pending.size === 0) starts.push(i)
    for (const block of m.content) {
      if (block.type === 'tool-call') pending.add(block.id)
      if (block.type === 'tool-result') pending.delete(block.toolCallId)
    }
    previous = kind
  }
  return starts
}
