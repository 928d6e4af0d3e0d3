// What one turn came to, folded from its committed events: what `agent.run()` resolves with and what a CLI or
// server can compute for any turn of any stored log (a pure function of the events, like every view). Beside it,
// where one queued input stands in the log (queued, claimed by a turn, discarded), the fold `run()` uses to find
// *its* turn: the inbox splice that queued the input is durable, and so is the turn's claim of it.
import { snapshotJsonValue, type JsonValue } from '../json/lossless.js'
import { addTokenUsage, emptyTokenTotals } from '../llm/token-usage.js'
import type { AssistantMessage, ContentBlock, LlmFailure, TokenUsage, ToolResultMessage } from '../llm/types.js'
import type { CoreEventData, SessionEvent, TurnEndReason } from '../session/events.js'
import { sessionCost, type CostFigure, type PricingCatalogue } from './cost.js'

/** One tool call of a turn with its result, as the log recorded them. */
export interface TurnToolCall {
  readonly callId: string
  readonly name: string
  /** The step the call was made in. */
  readonly step: number
  /** Parsed arguments: `{}` for an empty string, the JSON value when it parses, else the raw string. */
  readonly arguments: JsonValue
  /** The text of the tool result (its text blocks, joined). */
  readonly result: string
  /** Whether the result was an error (a failed, denied or never-started call). */
  readonly isError: boolean
}

/**
 * What one turn came to. `text` is the text of the turn's last assistant message (an interrupted one included:
 * what had streamed before a cancel), `usage` the sum over the turn's logged completions, `events` the seqs of
 * its `turn/start` and `turn/end` (both inclusive). `Output` is the type of a structured answer (`output`).
 */
export interface TurnResult<Output = unknown> {
  readonly sessionId: string
  readonly turn: number
  /** How the turn ended; an `error` carries the failure (also in {@link failure}). */
  readonly reason: TurnEndReason
  /** The failure of a turn that ended `error` (code, HTTP status when a server answered, message). */
  readonly failure?: LlmFailure
  /** Text of the turn's last assistant message (`''` when it had none, or no message at all). */
  readonly text: string
  /** Reasoning of that message, when it had any. */
  readonly reasoning?: string
  /**
   * The structured answer of a run with `output`: `text` parsed and valid under the schema (for a zod schema,
   * its parsed value). Set only when the turn ended `completed`; absent from {@link turnResult}'s fold.
   */
  readonly output?: Output
  /** Every tool call of the turn, in log order, with its result. */
  readonly toolCalls: readonly TurnToolCall[]
  /** Token usage summed over the turn's completions. */
  readonly usage: TokenUsage
  /** What the turn cost, when every completion with usage could be priced. */
  readonly cost?: CostFigure
  /** `turn/end` time minus `turn/start` time (log times, ms). */
  readonly durationMs: number
  /** Seqs of the turn's `turn/start` (`from`) and `turn/end` (`to`), inclusive. */
  readonly events: { readonly from: number; readonly to: number }
}

/** Options of {@link turnResult}. */
export interface TurnResultOptions {
  /** Which turn (default: the first turn whose `turn/start` is in `events`). */
  readonly turn?: number
  /** Where prices come from; without it the result has no `cost`. */
  readonly pricing?: PricingCatalogue
}

/**
 * The {@link TurnResult} of one turn in `events` (a whole log, or any slice holding that turn's `turn/start`
 * through its `turn/end`; streamed chunks may be in it or not, they are not read), or undefined when the turn
 * has not ended in `events`.
 * @example
 * ```ts
 * const result = turnResult(session.id, session.events, { turn: 2 })
 * if (result?.reason.kind === 'error') console.error(result.failure?.code, result.failure?.message)
 * ```
 */
export function turnResult(sessionId: string, events: Iterable<SessionEvent>, options: TurnResultOptions = {}): TurnResult | undefined {
  let start: SessionEvent | undefined
  let last: AssistantMessage | undefined
  const usage = emptyTokenTotals()
  const calls: { callId: string; name: string; step: number; raw: string }[] = []
  const results = new Map<string, ToolResultMessage>()
  const priced: SessionEvent[] = []
  for (const event of events) {
    if (start === undefined) {
      if (event.type === 'turn/start' && (options.turn === undefined || (event.data as { turn: number }).turn === options.turn)) {
        start = event
        priced.push(event)
      }
      continue
    }
    switch (event.type) {
      case 'assistant/message': {
        const data = event.data as unknown as CoreEventData['assistant/message']
        last = data.message
        addTokenUsage(usage, data.usage)
        priced.push(event)
        break
      }
      case 'request/header':
        priced.push(event)
        break
      case 'tool/call': {
        const data = event.data as unknown as CoreEventData['tool/call']
        calls.push({ callId: data.callId, name: data.name, step: data.step, raw: data.arguments })
        break
      }
      case 'tool/result': {
        const message = (event.data as unknown as CoreEventData['tool/result']).message
        results.set(message.source.callId, message)
        break
      }
      case 'turn/end': {
        const data = event.data as unknown as CoreEventData['turn/end']
        const turn = (start.data as { turn: number }).turn
        if (data.turn !== turn) break
        const reasoning = last === undefined ? '' : textOf(last.content, 'reasoning')
        const cost = options.pricing === undefined ? undefined : turnCost(priced, options.pricing)
        return Object.freeze({
          sessionId,
          turn,
          reason: data.reason,
          ...(data.reason.kind === 'error' ? { failure: data.reason.error } : {}),
          text: last === undefined ? '' : textOf(last.content, 'text'),
          ...(reasoning !== '' ? { reasoning } : {}),
          toolCalls: Object.freeze(calls.map((call) => toolCallOf(call, results.get(call.callId)))),
          usage: Object.freeze(usage),
          ...(cost !== undefined ? { cost } : {}),
          durationMs: event.time - start.time,
          events: Object.freeze({ from: start.seq, to: event.seq }),
        })
      }
    }
  }
  return undefined
}

/**
 * Where one input queued in the inbox stands: still `queued` (at `position` of its list), `claimed` by a turn
 * (the splice at `seq` took it into turn `turn`, whose `turn/start` is at `turnStart`), or `discarded` (a cancel
 * cleared it at `seq` before any turn took it).
 */
export type InputFate =
  | { readonly kind: 'queued'; readonly target: 'next-turn' | 'next-step'; readonly position: number }
  | { readonly kind: 'claimed'; readonly seq: number; readonly turn: number; readonly turnStart: number }
  | { readonly kind: 'discarded'; readonly seq: number }

/**
 * Follows one queued input through the log, event by event (the incremental form of {@link inputFate}): the
 * `agent/inbox/spliced` that inserted it gives its list and position; each later splice of that list moves it;
 * the one that removes it is a turn's claim (a pure deletion) or a cancel (`outcome: 'canceled'`). Feed it every
 * event from before the input was queued on, in seq order (chunks may be left out).
 */
export class InputFateFold {
  readonly #messageId: string
  #fate: InputFate | undefined
  #turn: { readonly turn: number; readonly seq: number } | undefined

  /**
   * @param messageId - the queued `UserMessage`'s id
   * @param openTurn - the turn already open when the first event fed is not before its `turn/start`
   */
  constructor(messageId: string, openTurn?: { readonly turn: number; readonly seq: number }) {
    this.#messageId = messageId
    this.#turn = openTurn
  }

  /** The input's fate so far (undefined until the splice that queued it was fed). */
  get fate(): InputFate | undefined {
    return this.#fate
  }

  /** Feeds one event; returns the fate when this event changed it from queued (claimed or discarded), else undefined. */
  observe(event: SessionEvent): InputFate | undefined {
    if (event.type === 'turn/start') {
      this.#turn = { turn: (event.data as { turn: number }).turn, seq: event.seq }
      return undefined
    }
    if (event.type === 'turn/end') {
      this.#turn = undefined
      return undefined
    }
    if (event.type !== 'agent/inbox/spliced') return undefined
    const fate = this.#fate
    const splice = event.data as unknown as CoreEventData['agent/inbox/spliced']
    if (fate === undefined) {
      const at = splice.inserted.findIndex((m) => m.id === this.#messageId)
      if (at >= 0) this.#fate = { kind: 'queued', target: splice.target, position: splice.start + at }
      return undefined
    }
    if (fate.kind !== 'queued' || splice.target !== fate.target) return undefined
    const removed = splice.removedCount ?? 0
    if (fate.position < splice.start) return undefined
    if (fate.position >= splice.start + removed) {
      this.#fate = { ...fate, position: fate.position - removed + splice.inserted.length }
      return undefined
    }
    const turn = this.#turn
    this.#fate =
      splice.outcome === 'canceled' || turn === undefined
        ? { kind: 'discarded', seq: event.seq }
        : { kind: 'claimed', seq: event.seq, turn: turn.turn, turnStart: turn.seq }
    return this.#fate
  }
}

/**
 * Where the input with id `messageId` stands after `events` (a whole log: see {@link InputFateFold}), or
 * undefined when no splice in them queued it.
 */
export function inputFate(events: Iterable<SessionEvent>, messageId: string): InputFate | undefined {
  const fold = new InputFateFold(messageId)
  for (const event of events) if (fold.observe(event) !== undefined) break
  return fold.fate
}

function toolCallOf(call: { callId: string; name: string; step: number; raw: string }, result: ToolResultMessage | undefined): TurnToolCall {
  const block = result?.content[0]
  return Object.freeze({
    callId: call.callId,
    name: call.name,
    step: call.step,
    arguments: parseArguments(call.raw),
    // Crash repair answers every call, so only a slice cut inside the turn lacks a result: read as an error.
    result: block === undefined ? '' : textOf(block.content, 'text'),
    isError: block === undefined || block.isError === true,
  })
}

function textOf(content: readonly ContentBlock[], type: 'text' | 'reasoning'): string {
  let text = ''
  for (const block of content) if (block.type === type) text += block.text
  return text
}

/** The loop's rule for tool arguments (src/loop/tool-calls.ts, `parseArguments`): `''` → `{}`, JSON → its value, else the raw string. */
function parseArguments(raw: string): JsonValue {
  if (raw.trim() === '') return {}
  try {
    return (snapshotJsonValue(JSON.parse(raw)) ?? raw) as JsonValue
  } catch {
    return raw
  }
}

/** The turn's cost when every completion with usage is priced; else undefined (a partial figure would mislead). */
function turnCost(events: readonly SessionEvent[], pricing: PricingCatalogue): CostFigure | undefined {
  const cost = sessionCost(events, pricing)
  if (cost.currency === undefined || cost.unpriced > 0) return undefined
  return Object.freeze({ total: Math.round(cost.total * 1e6) / 1e6, currency: cost.currency, ...(cost.asOf !== undefined ? { asOf: cost.asOf } : {}) })
}
