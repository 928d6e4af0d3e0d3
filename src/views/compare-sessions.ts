// Two sessions compared turn by turn, for `ledgerloop diff` and `ledgerloop rerun`: did the agent behave the same?
// Behaviour is what a user of the agent relies on — the final text, the tool calls (name, arguments, order) and
// how each turn ended. Steps, tokens, cost and duration are reported beside it but never make a turn differ: a
// cheaper model that does the same thing is the point of a rerun, not a regression.
import type { TokenUsage } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'
import { canonicalArguments } from './canonical-arguments.js'
import { sessionCost, type CostFigure, type PricingCatalogue } from './cost.js'
import { describeReason } from './turn-outcome.js'
import { turnResult } from './turn-result.js'
import { wordDiff } from './word-diff.js'

/** One tool call as behaviour compares it. */
export interface ComparedToolCall {
  readonly name: string
  /** Canonical arguments: JSON with sorted keys (key order and spacing never make calls differ). */
  readonly arguments: string
}

/** What one turn of one session did. */
export interface TurnFacts {
  readonly text: string
  readonly toolCalls: readonly ComparedToolCall[]
  readonly reason: TurnEndReason
  readonly steps: number
  readonly usage: TokenUsage
  /** Present when a pricing catalogue was given and priced some of the turn's completions. */
  readonly cost?: CostFigure
  readonly durationMs: number
}

/** One turn of the two sessions side by side. */
export interface TurnComparison {
  readonly turn: number
  /** Same final text (unless ignored), same tool calls in the same order, same end reason. */
  readonly same: boolean
  /** What differs, one line each (empty when `same`). */
  readonly differences: string[]
  /** The turn in session A and in session B (absent where that session has no such ended turn). */
  readonly a?: TurnFacts
  readonly b?: TurnFacts
  /** The final texts as a word diff (`[-old-]{+new+}`), when they differ. */
  readonly textDiff?: string
}

/** Two sessions compared turn by turn (see {@link compareSessions}). */
export interface SessionComparison {
  /** Every turn is the same. */
  readonly same: boolean
  readonly turns: TurnComparison[]
  /** Whether texts were left out of the comparison. */
  readonly ignoreText: boolean
}

/** Options of {@link compareSessions}. */
export interface CompareOptions {
  /** Final texts are reported but do not make a turn differ (default false: they must be equal). */
  readonly ignoreText?: boolean
  /** Prices for each turn's cost (without it, no cost is reported). */
  readonly pricing?: PricingCatalogue
}

/**
 * Compares sessions `a` and `b` (their logs) turn by turn, by turn number: a turn is the same when its final text
 * (unless `ignoreText`), its tool calls (name, canonical arguments, order) and its end reason (kind; the failure
 * code of an error, the cause of a cancel) are. A pure function of the two logs.
 * @example
 * ```ts
 * const comparison = compareSessions((await store.read(a)).events, (await store.read(b)).events)
 * for (const t of comparison.turns) if (!t.same) console.log(`turn ${t.turn}: ${t.differences.join('; ')}`)
 * ```
 */
export function compareSessions(a: readonly SessionEvent[], b: readonly SessionEvent[], options: CompareOptions = {}): SessionComparison {
  const ignoreText = options.ignoreText === true
  const left = turnFacts(a, options.pricing)
  const right = turnFacts(b, options.pricing)
  const numbers = [...new Set([...left.keys(), ...right.keys()])].sort((x, y) => x - y)
  const turns = numbers.map((turn) => compareTurnFacts(turn, left.get(turn), right.get(turn), ignoreText))
  return { same: turns.every((t) => t.same), turns, ignoreText }
}

/**
 * Each ended turn of a log, by number (only turn `only` when given). One pass over the log to find the turns, then
 * each turn folded from its own slice, so a long log costs O(events), not O(turns × events).
 */
export function turnFacts(events: readonly SessionEvent[], pricing?: PricingCatalogue, only?: number): Map<number, TurnFacts> {
  const spans = new Map<number, { from: number; to?: number; steps: number }>()
  events.forEach((e, i) => {
    if (e.type !== 'turn/start' && e.type !== 'step/start' && e.type !== 'turn/end') return
    const turn = (e.data as { turn: number }).turn
    if (only !== undefined && turn !== only) return
    if (e.type === 'turn/start') spans.set(turn, { from: i, steps: 0 })
    const span = spans.get(turn)
    if (span === undefined) return
    if (e.type === 'step/start') span.steps++
    if (e.type === 'turn/end') span.to = i
  })
  const costs = pricing === undefined ? undefined : sessionCost(events, pricing)
  const costOf = new Map((costs?.turns ?? []).map((t) => [t.turn, t.cost]))
  const facts = new Map<number, TurnFacts>()
  for (const [turn, span] of spans) {
    if (span.to === undefined) continue
    const result = turnResult('', events.slice(span.from, span.to + 1), { turn })
    if (result === undefined) continue
    const turnCost = costOf.get(turn)
    const cost: CostFigure | undefined = costs?.currency !== undefined && turnCost !== undefined
      ? { total: Math.round(turnCost * 1e6) / 1e6, currency: costs.currency, ...(costs.asOf !== undefined ? { asOf: costs.asOf } : {}) }
      : undefined
    facts.set(turn, {
      text: result.text,
      toolCalls: result.toolCalls.map((c) => ({ name: c.name, arguments: canonicalArguments(c.arguments) })),
      reason: result.reason,
      steps: span.steps,
      usage: result.usage,
      ...(cost !== undefined ? { cost } : {}),
      durationMs: result.durationMs,
    })
  }
  return facts
}

/** One turn of two sessions compared (what {@link compareSessions} does for each turn number). */
export function compareTurnFacts(turn: number, a: TurnFacts | undefined, b: TurnFacts | undefined, ignoreText = false): TurnComparison {
  if (a === undefined || b === undefined) {
    const only = a === undefined ? 'B' : 'A'
    return { turn, same: false, differences: [`only session ${only} has an ended turn ${turn}`], ...(a !== undefined ? { a } : {}), ...(b !== undefined ? { b } : {}) }
  }
  const differences: string[] = []
  let textDiff: string | undefined
  if (a.text !== b.text) {
    textDiff = wordDiff(a.text, b.text)
    if (!ignoreText) differences.push(`final text differs: ${textDiff}`)
  }
  differences.push(...toolCallDifferences(a.toolCalls, b.toolCalls))
  if (reasonKey(a.reason) !== reasonKey(b.reason)) differences.push(`ended ${describeReason(a.reason)} in A, ${describeReason(b.reason)} in B`)
  return { turn, same: differences.length === 0, differences, a, b, ...(textDiff !== undefined ? { textDiff } : {}) }
}

/** What makes two end reasons the same: the kind, an error's code, a cancel's cause (messages may carry times). */
function reasonKey(reason: TurnEndReason): string {
  if (reason.kind === 'error') return `error:${reason.error.code}`
  if (reason.kind === 'aborted') return `aborted:${reason.reason.kind}`
  return reason.kind
}

const callText = (c: ComparedToolCall): string => `${c.name}(${clip(c.arguments)})`

function toolCallDifferences(a: readonly ComparedToolCall[], b: readonly ComparedToolCall[]): string[] {
  const key = (c: ComparedToolCall): string => `${c.name}\u0000${c.arguments}`
  if (a.length === b.length && a.every((c, i) => key(c) === key(b[i] as ComparedToolCall))) return []
  const sorted = (list: readonly ComparedToolCall[]): string => list.map(key).sort().join('\u0001')
  if (a.length === b.length && sorted(a) === sorted(b)) {
    return [`tool calls in another order: ${a.map((c) => c.name).join(', ')} in A, ${b.map((c) => c.name).join(', ')} in B`]
  }
  const out: string[] = []
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const x = a[i]
    const y = b[i]
    if (x !== undefined && y !== undefined && key(x) === key(y)) continue
    if (x === undefined) out.push(`tool call ${i + 1} only in B: ${callText(y as ComparedToolCall)}`)
    else if (y === undefined) out.push(`tool call ${i + 1} only in A: ${callText(x)}`)
    else if (x.name === y.name) out.push(`tool call ${i + 1} (${x.name}) has other arguments: ${clip(x.arguments)} in A, ${clip(y.arguments)} in B`)
    else out.push(`tool call ${i + 1} differs: ${callText(x)} in A, ${callText(y)} in B`)
  }
  return out
}

function clip(text: string): string {
  return text.length > 100 ? `${text.slice(0, 99)}…` : text
}
