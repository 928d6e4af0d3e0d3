import type { ModelInfo, ModelPricing, StreamChunk, TokenUsage } from '../llm/types.js'
import type { RequestHeader, SessionEvent } from '../session/events.js'

/**
 * Where prices come from: a model table (`DEEPSEEK_MODELS`, or any `Record<model, ModelInfo>`) or a function
 * of provider and model (for several providers, or prices overridden in a config file).
 */
export type PricingCatalogue =
  | Readonly<Record<string, ModelInfo>>
  | ((provider: string, model: string) => ModelPricing | undefined)

/** The cost of one priced model response. */
export interface RequestCost {
  /** Seq of the `assistant/message` whose usage was priced. */
  readonly seq: number
  readonly turn: number
  readonly provider: string
  readonly model: string
  readonly currency: ModelPricing['currency']
  readonly cost: number
  /** Whether the off-peak share applied (the response's log time was outside the peak windows). */
  readonly offPeak: boolean
}

/** What a session (or a slice of its events) cost, derived from logged usage. */
export interface SessionCost {
  /** Currency of `total`; undefined when nothing could be priced. */
  readonly currency: ModelPricing['currency'] | undefined
  /** Sum over every priced response (in `currency`). */
  readonly total: number
  /** Sum per turn number. */
  readonly turns: ReadonlyArray<{ readonly turn: number; readonly cost: number }>
  readonly requests: readonly RequestCost[]
  /** Responses with usage that could not be priced (no price for the model, or another currency). */
  readonly unpriced: number
  /** The oldest `asOf` date among the prices used. */
  readonly asOf: string | undefined
}

/**
 * Derives cost from the usage logged on `assistant/message` events, each priced with the request config (provider
 * and model) in force when it was made: uncached input at the input price, cache reads at the cache-hit price
 * (the input price when none is published), cache writes at the input price, output (reasoning included) at the
 * output price; outside the model's peak windows every price is multiplied by the off-peak share. A pure
 * function of the events: the CLI, the server and the page show the same figure.
 * @example
 * ```ts
 * const { total, currency } = sessionCost(events, DEEPSEEK_MODELS)
 * ```
 */
export function sessionCost(events: readonly SessionEvent[], catalogue: PricingCatalogue): SessionCost {
  const priceOf = typeof catalogue === 'function' ? catalogue : (_provider: string, model: string) => (Object.hasOwn(catalogue, model) ? catalogue[model]?.pricing : undefined)
  const requests: RequestCost[] = []
  const byTurn = new Map<number, number>()
  let currency: ModelPricing['currency'] | undefined
  let total = 0
  let unpriced = 0
  let asOf: string | undefined
  let config: { provider: string; model: string } | undefined
  for (const event of events) {
    if (event.type === 'request/header') {
      config = (event.data as unknown as { header: RequestHeader }).header.config
      continue
    }
    if (event.type !== 'assistant/message') continue
    const data = event.data as unknown as { turn: number; usage?: TokenUsage; message: { source?: { provider?: string; model?: string } } }
    if (data.usage === undefined) continue
    const provider = data.message.source?.provider ?? config?.provider
    const model = data.message.source?.model ?? config?.model
    const pricing = provider !== undefined && model !== undefined ? priceOf(provider, model) : undefined
    if (pricing === undefined || provider === undefined || model === undefined || (currency !== undefined && pricing.currency !== currency)) {
      unpriced++
      continue
    }
    currency = pricing.currency
    const offPeak = pricing.offPeak !== undefined && !inPeak(pricing.offPeak, event.time)
    const cost = usageCost(data.usage, pricing) * (offPeak ? (pricing.offPeak?.share ?? 1) : 1)
    requests.push({ seq: event.seq, turn: data.turn, provider, model, currency, cost, offPeak })
    byTurn.set(data.turn, (byTurn.get(data.turn) ?? 0) + cost)
    total += cost
    if (asOf === undefined || pricing.asOf < asOf) asOf = pricing.asOf
  }
  return { currency, total, turns: [...byTurn].map(([turn, cost]) => ({ turn, cost })), requests, unpriced, asOf }
}

/** The base-price cost of one usage record. */
export function usageCost(usage: TokenUsage, pricing: ModelPricing): number {
  const cached = usage.cacheReadTokens ?? 0
  const written = usage.cacheWriteTokens ?? 0
  const perToken = (perMTok: number): number => perMTok / 1_000_000
  return (
    usage.inputTokens * perToken(pricing.inputPerMTok) +
    cached * perToken(pricing.cachedInputPerMTok ?? pricing.inputPerMTok) +
    written * perToken(pricing.inputPerMTok) +
    usage.outputTokens * perToken(pricing.outputPerMTok)
  )
}

/** Whether `time` (ms since epoch) falls in one of the peak windows. */
export function inPeak(offPeak: NonNullable<ModelPricing['offPeak']>, time: number): boolean {
  const at = new Date(time)
  if (offPeak.peakWeekdaysUtc !== undefined && !offPeak.peakWeekdaysUtc.includes(at.getUTCDay())) return false
  const minute = at.getUTCHours() * 60 + at.getUTCMinutes()
  return offPeak.peakHoursUtc.some((window) => {
    const [start, end] = window.split('-').map((hhmm) => {
      const [h, m] = hhmm.split(':').map(Number)
      return (h ?? 0) * 60 + (m ?? 0)
    }) as [number, number]
    return start <= end ? minute >= start && minute < end : minute >= start || minute < end
  })
}

/** `$0.0123` / `¥0.45`: enough digits that a cheap turn does not read as zero. */
export function formatCost(amount: number, currency: ModelPricing['currency']): string {
  const symbol = currency === 'USD' ? '$' : '¥'
  const digits = amount >= 1 ? 2 : amount >= 0.01 ? 4 : 6
  return `${symbol}${amount.toFixed(digits)}`
}

/** A session's cost as the server and the page show it: the total, its currency and the date of the prices. */
export interface CostFigure {
  readonly total: number
  readonly currency: ModelPricing['currency']
  readonly asOf?: string
}

/** {@link sessionCost} reduced to one figure (rounded to 6 decimals), or undefined without prices or usage. */
export function costFigure(events: readonly SessionEvent[], catalogue: PricingCatalogue | undefined): CostFigure | undefined {
  if (catalogue === undefined) return undefined
  const cost = sessionCost(events, catalogue)
  if (cost.currency === undefined) return undefined
  return { total: Math.round(cost.total * 1e6) / 1e6, currency: cost.currency, ...(cost.asOf !== undefined ? { asOf: cost.asOf } : {}) }
}

/**
 * What a session was billed in USD, every request attempt included, fed one event at a time (the cost budget
 * feeds it the log as it grows; the footer a whole log at once). Every attempt logs at most one usage chunk and
 * a completed attempt's `assistant/message` repeats it, so a usage chunk counts when no message of its attempt
 * carries usage (the attempt failed before a retry, or was cut short), the message's usage otherwise. Unlike
 * {@link sessionCost}, which prices the responses the conversation kept, this is what the provider charged.
 * Usage without a USD price is not added; {@link BilledUsd.unpriced} counts it.
 */
export class BilledUsd {
  /** USD billed so far. */
  total = 0
  /** Usage records that could not be priced in USD. */
  unpriced = 0
  readonly #turns = new Map<number, number>()
  readonly #priceOf: (provider: string, model: string) => ModelPricing | undefined
  #route: { provider: string; model: string } | undefined
  #pending: { usage: TokenUsage; time: number; turn: number; provider: string; model: string } | undefined

  constructor(catalogue: PricingCatalogue) {
    this.#priceOf = typeof catalogue === 'function' ? catalogue : (_provider, model) => (Object.hasOwn(catalogue, model) ? catalogue[model]?.pricing : undefined)
  }

  /** USD billed in turn `turn`, settled as of the last {@link settle}. */
  turn(turn: number): number {
    return this.#turns.get(turn) ?? 0
  }

  /** Takes the next event of the log. */
  add(event: SessionEvent): void {
    if (event.type === 'request/header') {
      this.#route = (event.data as unknown as { header: RequestHeader }).header.config
    } else if (event.type === 'assistant/chunk') {
      const { turn, chunk } = event.data as unknown as { turn: number; chunk: StreamChunk }
      if (chunk.type !== 'usage' || this.#route === undefined) return
      this.settle()
      this.#pending = { usage: chunk.usage, time: event.time, turn, ...this.#route }
    } else if (event.type === 'assistant/message') {
      const data = event.data as unknown as { turn: number; usage?: TokenUsage; message: { source?: { provider?: string; model?: string } } }
      if (data.usage === undefined) return
      this.#pending = undefined
      const provider = data.message.source?.provider ?? this.#route?.provider
      const model = data.message.source?.model ?? this.#route?.model
      if (provider !== undefined && model !== undefined) this.#bill(data.turn, provider, model, data.usage, event.time)
    } else if (event.type === 'step/end' || event.type === 'turn/end') {
      this.settle()
    }
  }

  /** Counts a usage chunk still waiting for its message: call between attempts (its attempt ended without one). */
  settle(): void {
    const pending = this.#pending
    if (pending === undefined) return
    this.#pending = undefined
    this.#bill(pending.turn, pending.provider, pending.model, pending.usage, pending.time)
  }

  #bill(turn: number, provider: string, model: string, usage: TokenUsage, time: number): void {
    const pricing = this.#priceOf(provider, model)
    if (pricing === undefined || pricing.currency !== 'USD') {
      this.unpriced++
      return
    }
    const offPeak = pricing.offPeak !== undefined && !inPeak(pricing.offPeak, time)
    const cost = usageCost(usage, pricing) * (offPeak ? (pricing.offPeak?.share ?? 1) : 1)
    this.total += cost
    this.#turns.set(turn, (this.#turns.get(turn) ?? 0) + cost)
  }
}

/** USD billed over `events` (every attempt included, see {@link BilledUsd}). */
export function billedUsd(events: readonly SessionEvent[], catalogue: PricingCatalogue): BilledUsd {
  const billed = new BilledUsd(catalogue)
  for (const event of events) billed.add(event)
  billed.settle()
  return billed
}
