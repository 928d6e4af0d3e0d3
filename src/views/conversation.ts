// A session as a person reads a chat transcript: per turn, the prompts, the answers (with their reasoning), the
// tool calls with their permission decision and result, the failed requests that were retried, and how the turn
// ended (an error with its message and a hint). A pure fold over the log, so a stored session reads the same as
// one this process is running, and the page, `inspect` and an embedding program can all show it.
import type { ContentBlock, LlmFailure, ToolResultBlock } from '../llm/types.js'
import type { CoreEventData, SessionEvent, TurnEndReason } from '../session/events.js'
import { modelFailureHint, toolFailureHint } from './failure-hint.js'
import { describeReason, toolSubject } from './turn-outcome.js'

/** A prompt (or steering text) a person or program sent. */
export interface ConversationPrompt {
  readonly kind: 'prompt'
  readonly seq: number
  /** The text blocks, joined. */
  readonly text: string
  /** How many images came with it. */
  readonly images: number
}

/** One assistant message: its visible text and its reasoning. */
export interface ConversationAnswer {
  readonly kind: 'answer'
  readonly seq: number
  readonly step: number
  readonly text: string
  /** The model's reasoning, when it sent any (the page shows it collapsed). */
  readonly reasoning?: string
  /** True when the message was cut off by a cancel or a crash: only what had streamed. */
  readonly interrupted?: true
}

/** How a tool call stands: waiting for its result (or an approval), done, failed, or denied by a rule or a person. */
export type ConversationToolStatus = 'running' | 'ok' | 'failed' | 'denied'

/** One tool call, its permission decision and its result. */
export interface ConversationTool {
  readonly kind: 'tool'
  readonly seq: number
  readonly step: number
  readonly callId: string
  readonly name: string
  /** The raw JSON arguments, exactly as the model sent them. */
  readonly arguments: string
  /** What the call is about (its command, path or pattern), for a one-line summary. */
  readonly subject: string
  readonly status: ConversationToolStatus
  /** The logged permission decision, when one was made. */
  readonly decision?: { readonly decision: 'allow' | 'deny'; readonly by: string; readonly rule?: string; readonly answer?: string }
  /** The result's text blocks, joined (absent while running). */
  readonly result?: string
  /** The failure code of a failed or denied call (`TOOL_DENIED`, `INVALID_ARGS`, …). */
  readonly code?: string
  /** What to make of that failure, when its code tells. */
  readonly hint?: string
  readonly resultSeq?: number
}

/** A model request that failed and was retried (the failure that ended a turn is on the turn). */
export interface ConversationRetry {
  readonly kind: 'retry'
  readonly seq: number
  readonly step: number
  /** The attempt that failed (1 = the step's first request). */
  readonly attempt: number
  readonly code: string
  readonly message: string
  /** The wait before the next attempt. */
  readonly delayMs: number
  readonly hint?: string
}

/** One entry of a turn, in log order. */
export type ConversationItem = ConversationPrompt | ConversationAnswer | ConversationTool | ConversationRetry

/** A turn's failure as the reader needs it: code, message, the HTTP status when a server answered, and a hint. */
export interface ConversationError {
  readonly code: string
  readonly message: string
  readonly status?: number
  readonly hint?: string
}

/** One turn of the conversation. */
export interface ConversationTurn {
  readonly turn: number
  readonly startSeq: number
  readonly endSeq?: number
  /** The end reason's kind (`completed`, `error`, `interrupted`, …), or `open` while the turn runs. */
  readonly status: TurnEndReason['kind'] | 'open'
  /** The readable end (`aborted (cancelled by you)`, …), or `running`. */
  readonly detail: string
  /** A continuation turn: the interrupted turn it carries on. */
  readonly continues?: number
  /** The failure of a turn that ended `error`. */
  readonly error?: ConversationError
  readonly items: readonly ConversationItem[]
}

/** A session as a conversation: its turns in order. */
export interface Conversation {
  /** How many events the fold read (a reader polling for changes compares it). */
  readonly events: number
  readonly turns: readonly ConversationTurn[]
}

interface OpenTurn {
  turn: number
  startSeq: number
  endSeq?: number
  reason?: TurnEndReason
  continues?: number
  items: ConversationItem[]
}

/**
 * Folds a session log into its conversation. Events outside any turn (a seed's header, a compaction by hand) add
 * nothing; chunks are not read: an answer is its committed `assistant/message`.
 * @example
 * ```ts
 * for (const turn of buildConversation(events).turns) {
 *   for (const item of turn.items) if (item.kind === 'answer') console.log(item.text)
 *   if (turn.error !== undefined) console.error(turn.error.code, turn.error.message, turn.error.hint ?? '')
 * }
 * ```
 */
export function buildConversation(events: readonly SessionEvent[]): Conversation {
  const turns: OpenTurn[] = []
  const tools = new Map<string, { turn: OpenTurn; at: number }>()
  let current: OpenTurn | undefined
  for (const e of events) {
    switch (e.type) {
      case 'turn/start': {
        const d = e.data as unknown as CoreEventData['turn/start']
        current = { turn: d.turn, startSeq: e.seq, items: [], ...(d.continues !== undefined ? { continues: d.continues } : {}) }
        turns.push(current)
        break
      }
      case 'turn/end':
        if (current !== undefined) {
          current.endSeq = e.seq
          current.reason = (e.data as unknown as CoreEventData['turn/end']).reason
        }
        current = undefined
        break
      case 'user/message': {
        const message = e.data as unknown as CoreEventData['user/message']
        // Runtime context, instructions and other plugin messages are the harness talking, not the person.
        if (current === undefined || message.source.kind !== 'user') break
        current.items.push({ kind: 'prompt', seq: e.seq, text: joinText(message.content), images: message.content.filter((b) => b.type === 'image').length })
        break
      }
      case 'assistant/message': {
        const d = e.data as unknown as CoreEventData['assistant/message']
        if (current === undefined) break
        const reasoning = d.message.content.filter((b) => b.type === 'reasoning').map((b) => (b as { text: string }).text).join('')
        const text = joinText(d.message.content)
        // A message of tool calls only has nothing to read: its calls follow as tool items.
        if (text === '' && reasoning === '' && d.interrupted !== true) break
        current.items.push({ kind: 'answer', seq: e.seq, step: d.step, text, ...(reasoning !== '' ? { reasoning } : {}), ...(d.interrupted === true ? { interrupted: true as const } : {}) })
        break
      }
      case 'tool/call': {
        const d = e.data as unknown as CoreEventData['tool/call']
        if (current === undefined) break
        const item: ConversationTool = { kind: 'tool', seq: e.seq, step: d.step, callId: d.callId, name: d.name, arguments: d.arguments, subject: toolSubject(d.arguments), status: 'running' }
        tools.set(d.callId, { turn: current, at: current.items.length })
        current.items.push(item)
        break
      }
      case 'permission/decision': {
        const d = e.data as { callId?: string; decision?: 'allow' | 'deny'; by?: string; rule?: string; answer?: string }
        const found = tools.get(d.callId ?? '')
        if (found === undefined || d.decision === undefined) break
        const old = found.turn.items[found.at] as ConversationTool
        const decision = { decision: d.decision, by: String(d.by), ...(d.rule !== undefined ? { rule: d.rule } : {}), ...(d.answer !== undefined ? { answer: String(d.answer) } : {}) }
        found.turn.items[found.at] = { ...old, decision }
        break
      }
      case 'tool/result': {
        const d = e.data as unknown as CoreEventData['tool/result']
        const block = d.message.content[0] as ToolResultBlock | undefined
        const found = tools.get(block?.toolCallId ?? '')
        if (found === undefined || block === undefined) break
        const old = found.turn.items[found.at] as ConversationTool
        const code = d.error?.code
        const status: ConversationToolStatus = code === 'TOOL_DENIED' ? 'denied' : block.isError === true ? 'failed' : 'ok'
        const hint = code !== undefined ? toolFailureHint(code) : undefined
        found.turn.items[found.at] = { ...old, status, result: joinText(block.content), resultSeq: e.seq, ...(code !== undefined ? { code } : {}), ...(hint !== undefined ? { hint } : {}) }
        break
      }
      case 'llm/retry': {
        const d = e.data as { step?: number; attempt?: number; code?: string; message?: string; delayMs?: number }
        if (current === undefined) break
        const code = String(d.code)
        const hint = modelFailureHint({ code })
        current.items.push({ kind: 'retry', seq: e.seq, step: d.step ?? 0, attempt: d.attempt ?? 1, code, message: String(d.message ?? ''), delayMs: d.delayMs ?? 0, ...(hint !== undefined ? { hint } : {}) })
        break
      }
    }
  }
  return { events: events.length, turns: turns.map(closeTurn) }
}

function closeTurn(t: OpenTurn): ConversationTurn {
  const failure: LlmFailure | undefined = t.reason?.kind === 'error' ? t.reason.error : undefined
  const hint = failure !== undefined ? modelFailureHint(failure) : undefined
  return {
    turn: t.turn,
    startSeq: t.startSeq,
    ...(t.endSeq !== undefined ? { endSeq: t.endSeq } : {}),
    status: t.reason?.kind ?? 'open',
    detail: t.reason !== undefined ? describeReason(t.reason) : 'running',
    ...(t.continues !== undefined ? { continues: t.continues } : {}),
    ...(failure !== undefined
      ? { error: { code: failure.code, message: failure.message, ...(failure.status !== undefined ? { status: failure.status } : {}), ...(hint !== undefined ? { hint } : {}) } }
      : {}),
    items: t.items,
  }
}

function joinText(content: readonly ContentBlock[]): string {
  return content
    .filter((b) => b.type === 'text')
    .map((b) => (b as { text: string }).text)
    .join('')
}
