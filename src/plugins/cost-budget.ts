import { HarnessError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { Agent } from '../loop/agent.js'
import type { LedgerHooks } from '../loop/hook-types.js'
import type { ModelPricing, StreamChunk, TokenUsage } from '../llm/types.js'
import type { RequestHeader } from '../session/events.js'
import type { Session } from '../session/session.js'
import { inPeak, usageCost, type PricingCatalogue } from '../views/cost.js'

/** Options of {@link costBudgetPlugin}. */
export interface CostBudgetOptions {
  /** The cap in US dollars: once the spend has reached it, no further request is sent. */
  readonly maxUsd: number
  /** What the cap covers: the whole session (default, resumed sessions included) or each turn on its own. */
  readonly per?: 'turn' | 'session'
  /** Prices to use first; a model they do not price falls back to its adapter's `ModelInfo.pricing`. */
  readonly pricing?: PricingCatalogue
}

/** Data of the `budget/exceeded` event the cost budget logs before it cancels the turn. */
export interface CostBudgetExceededData {
  readonly turn: number
  readonly budget: 'cost'
  readonly per: 'turn' | 'session'
  /** The cap, in USD. */
  readonly limit: number
  /** What was spent (in USD, over the turn or the session as `per` says) when the cap stopped the turn. */
  readonly used: number
}

/** Data of the `cost-budget/unpriced` warning: requests to this model are not counted against the cap. */
export interface CostBudgetUnpricedData {
  readonly turn: number
  readonly provider: string
  readonly model: string
  /** Why: no price is known, or the price is not in USD. */
  readonly reason: 'no-price' | 'currency'
}

/** The log-only event type of the unpriced-model warning (ignorable by readers that do not know it). */
export const COST_UNPRICED_EVENT = 'cost-budget/unpriced'

/**
 * Stops the agent once it has spent `maxUsd`. Before every request attempt (`agent/request`: the first request
 * of a step, a retry's, and every later step's) it prices the usage logged since its last look — every attempt's
 * usage chunk, failed and retried attempts included, since providers bill those too — and, once the spend has
 * reached the cap, logs `budget/exceeded` and cancels with `{kind:'hook', reason: 'cost budget: …'}` (queued
 * input is kept), so the turn ends `aborted` before the request is sent. A model without a USD price is never
 * passed silently: the first request to it logs a `cost-budget/unpriced` warning (once per model and session).
 * @example
 * ```ts
 * createHarness({ plugins: [costBudgetPlugin({ maxUsd: 0.5 })] })
 * ```
 */
export function costBudgetPlugin(options: CostBudgetOptions): Plugin<HookRegistrar<LedgerHooks>> {
  const { maxUsd } = options
  if (typeof maxUsd !== 'number' || !Number.isFinite(maxUsd) || maxUsd < 0) {
    throw new HarnessError('costBudgetPlugin: maxUsd must be a finite number ≥ 0', 'INVALID_CONFIG')
  }
  const per = options.per ?? 'session'
  if (per !== 'turn' && per !== 'session') throw new HarnessError("costBudgetPlugin: per must be 'turn' or 'session'", 'INVALID_CONFIG')
  const tallies = new Map<string, SpendTally>()
  return {
    name: 'ledgerloop/cost-budget',
    setup(hooks) {
      const off = hooks.on('agent/request', async (payload, next) => {
        const { agent, turn } = payload
        const config = await next()
        let tally = tallies.get(agent.id)
        if (tally === undefined || tally.session !== agent.session) {
          tally = new SpendTally(agent.session)
          tallies.set(agent.id, tally)
        }
        const priceOf = (provider: string, model: string): ModelPricing | undefined => pricingFor(agent, options.pricing, provider, model)
        tally.catchUp(priceOf)
        const upcoming = priceOf(config.provider, config.model)
        if (upcoming?.currency !== 'USD') tally.warnOnce(turn, config.provider, config.model, upcoming === undefined ? 'no-price' : 'currency')
        const used = per === 'turn' ? tally.turnSpend(turn) : tally.total
        // A nano-dollar of slack: per-token prices are binary fractions, so two $0.10 requests may sum to $0.1999…
        if (used >= maxUsd - 1e-9) {
          const data: CostBudgetExceededData = { turn, budget: 'cost', per, limit: maxUsd, used: roundUsd(used) }
          agent.session.append('budget/exceeded', data)
          agent.cancel({ kind: 'hook', reason: `cost budget: $${roundUsd(used)} spent of $${maxUsd}${per === 'turn' ? ' this turn' : ''}` }, { keepInbox: true })
        }
        return config
      })
      return () => {
        off()
        tallies.clear()
      }
    },
  }
}

/** The catalogue's price, else the adapter's published one for the model. */
function pricingFor(agent: Agent, catalogue: PricingCatalogue | undefined, provider: string, model: string): ModelPricing | undefined {
  if (catalogue !== undefined) {
    const own = typeof catalogue === 'function' ? catalogue(provider, model) : Object.hasOwn(catalogue, model) ? catalogue[model]?.pricing : undefined
    if (own !== undefined) return own
  }
  return agent.llm.adapter(provider)?.resolveModel?.(model)?.pricing
}

/** Six decimals: enough for a cheap request, short enough for a reason line. */
function roundUsd(amount: number): number {
  return Math.round(amount * 1e6) / 1e6
}

/**
 * What one session has spent, read from its log incrementally (each event once). Every request attempt logs at
 * most one usage chunk, and a completed attempt's `assistant/message` repeats it: so a usage chunk counts when no
 * message of its attempt carries usage (the attempt failed, or was cut short), the message's usage otherwise.
 */
class SpendTally {
  readonly session: Session
  total = 0
  readonly #turns = new Map<number, number>()
  #cursor = 0
  #route: { provider: string; model: string } | undefined
  #pending: { usage: TokenUsage; time: number; turn: number; provider: string; model: string } | undefined
  readonly #warned = new Set<string>()

  constructor(session: Session) {
    this.session = session
  }

  turnSpend(turn: number): number {
    return this.#turns.get(turn) ?? 0
  }

  /** Prices every event logged since the last call. */
  catchUp(priceOf: (provider: string, model: string) => ModelPricing | undefined): void {
    const { session } = this
    for (; this.#cursor < session.length; this.#cursor++) {
      const event = session.at(this.#cursor)
      if (event === undefined) continue
      if (event.type === 'request/header') {
        this.#route = (event.data as unknown as { header: RequestHeader }).header.config
      } else if (event.type === 'assistant/chunk') {
        const { turn, chunk } = event.data as unknown as { turn: number; chunk: StreamChunk }
        if (chunk.type !== 'usage' || this.#route === undefined) continue
        this.#settlePending(priceOf)
        this.#pending = { usage: chunk.usage, time: event.time, turn, ...this.#route }
      } else if (event.type === 'assistant/message') {
        const data = event.data as unknown as { turn: number; usage?: TokenUsage; message: { source?: { provider?: string; model?: string } } }
        if (data.usage === undefined) continue
        this.#pending = undefined
        const provider = data.message.source?.provider ?? this.#route?.provider
        const model = data.message.source?.model ?? this.#route?.model
        if (provider !== undefined && model !== undefined) this.#add(priceOf, data.turn, provider, model, data.usage, event.time)
      } else if (event.type === 'step/end' || event.type === 'turn/end') {
        this.#settlePending(priceOf)
      }
    }
    // A usage chunk still pending belongs to an attempt that ended without a message (a failure before a retry).
    this.#settlePending(priceOf)
  }

  /** Logs the unpriced-model warning, once per model in this session. */
  warnOnce(turn: number, provider: string, model: string, reason: CostBudgetUnpricedData['reason']): void {
    const key = `${provider}/${model}`
    if (this.#warned.has(key)) return
    this.#warned.add(key)
    const data: CostBudgetUnpricedData = { turn, provider, model, reason }
    this.session.append(COST_UNPRICED_EVENT, data, { ignorable: true })
  }

  #settlePending(priceOf: (provider: string, model: string) => ModelPricing | undefined): void {
    const pending = this.#pending
    if (pending === undefined) return
    this.#pending = undefined
    this.#add(priceOf, pending.turn, pending.provider, pending.model, pending.usage, pending.time)
  }

  #add(priceOf: (provider: string, model: string) => ModelPricing | undefined, turn: number, provider: string, model: string, usage: TokenUsage, time: number): void {
    const pricing = priceOf(provider, model)
    // Unpriced usage is warned about at the request (warnOnce); it cannot be added to a USD figure.
    if (pricing === undefined || pricing.currency !== 'USD') return
    const offPeak = pricing.offPeak !== undefined && !inPeak(pricing.offPeak, time)
    const cost = usageCost(usage, pricing) * (offPeak ? (pricing.offPeak?.share ?? 1) : 1)
    this.total += cost
    this.#turns.set(turn, (this.#turns.get(turn) ?? 0) + cost)
  }
}
