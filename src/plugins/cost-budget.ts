import { HarnessError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { Agent } from '../loop/agent.js'
import type { LedgerHooks } from '../loop/hook-types.js'
import type { ModelPricing } from '../llm/types.js'
import type { Session } from '../session/session.js'
import { BilledUsd, type PricingCatalogue } from '../views/cost.js'
import { COST_CAP_EVENT, type CostBudgetCapData } from '../views/cost-cap.js'

/** Options of {@link costBudgetPlugin}. */
export interface CostBudgetOptions {
  /**
   * The cap in US dollars: once the spend has reached it, no further request is sent. A session that records
   * its own cap (a `cost-budget/cap` event of origin `session`, e.g. `POST /api/sessions` with `maxCostUsd`)
   * is held to that one instead. Without `maxUsd` only such sessions are capped.
   */
  readonly maxUsd?: number
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
 * The cap is in the log: a session created with its own cap (a `cost-budget/cap` event of origin `session`) is
 * held to that one; otherwise the budget records `maxUsd` as a `cost-budget/cap` of origin `plugin` before the
 * session's first request (and again when a later run's cap differs), so `inspect` and the page read it back.
 * @example
 * ```ts
 * createHarness({ plugins: [costBudgetPlugin({ maxUsd: 0.5 })] })
 * ```
 */
export function costBudgetPlugin(options: CostBudgetOptions): Plugin<HookRegistrar<LedgerHooks>> {
  const { maxUsd } = options
  if (maxUsd !== undefined && (typeof maxUsd !== 'number' || !Number.isFinite(maxUsd) || maxUsd < 0)) {
    throw new HarnessError('costBudgetPlugin: maxUsd must be a finite number ≥ 0', 'INVALID_CONFIG')
  }
  const per = options.per ?? 'session'
  if (per !== 'turn' && per !== 'session') throw new HarnessError("costBudgetPlugin: per must be 'turn' or 'session'", 'INVALID_CONFIG')
  const own: CostBudgetCapData | undefined = maxUsd !== undefined ? { maxUsd, per, origin: 'plugin' } : undefined
  const tallies = new Map<string, Tally>()
  return {
    name: 'ledgerloop/cost-budget',
    setup(hooks) {
      const off = hooks.on('agent/request', async (payload, next) => {
        const { agent, turn } = payload
        const config = await next()
        let tally = tallies.get(agent.id)
        if (tally === undefined || tally.session !== agent.session) {
          const priceOf = (provider: string, model: string): ModelPricing | undefined => pricingFor(agent, options.pricing, provider, model)
          tally = { session: agent.session, billed: new BilledUsd(priceOf), cursor: 0, warned: new Set(), recorded: undefined, sessionCap: undefined }
          tallies.set(agent.id, tally)
        }
        // Each event once: what was logged since the last request (the attempt before this one ended, so a
        // usage chunk still waiting for its message belongs to a failed attempt and is settled).
        for (; tally.cursor < agent.session.length; tally.cursor++) {
          const event = agent.session.at(tally.cursor)
          if (event === undefined) continue
          tally.billed.add(event)
          if (event.type === COST_CAP_EVENT) {
            tally.recorded = event.data as unknown as CostBudgetCapData
            if (tally.recorded.origin === 'session') tally.sessionCap = tally.recorded
          } else if (event.type === COST_UNPRICED_EVENT) {
            // Warned in an earlier run of this session: once per model and session, not once per process.
            const d = event.data as unknown as CostBudgetUnpricedData
            tally.warned.add(`${d.provider}/${d.model}`)
          }
        }
        tally.billed.settle()
        // The session's own cap wins; else this budget's, recorded once so inspect and the page know the cap.
        const cap = tally.sessionCap ?? own
        if (cap === undefined) return config
        if (cap === own && (tally.recorded?.maxUsd !== own.maxUsd || tally.recorded.per !== own.per || tally.recorded.origin !== 'plugin')) {
          tally.recorded = own
          agent.session.append(COST_CAP_EVENT, own, { ignorable: true })
        }
        const upcoming = pricingFor(agent, options.pricing, config.provider, config.model)
        const key = `${config.provider}/${config.model}`
        if (upcoming?.currency !== 'USD' && !tally.warned.has(key)) {
          tally.warned.add(key)
          const warning: CostBudgetUnpricedData = { turn, provider: config.provider, model: config.model, reason: upcoming === undefined ? 'no-price' : 'currency' }
          agent.session.append(COST_UNPRICED_EVENT, warning, { ignorable: true })
        }
        const used = cap.per === 'turn' ? tally.billed.turn(turn) : tally.billed.total
        // A nano-dollar of slack: per-token prices are binary fractions, so two $0.10 requests may sum to $0.1999…
        if (used >= cap.maxUsd - 1e-9) {
          const data: CostBudgetExceededData = { turn, budget: 'cost', per: cap.per, limit: cap.maxUsd, used: roundUsd(used) }
          agent.session.append('budget/exceeded', data)
          agent.cancel({ kind: 'hook', reason: `cost budget: $${roundUsd(used)} spent of $${cap.maxUsd}${cap.per === 'turn' ? ' this turn' : ''}` }, { keepInbox: true })
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

// What the budget knows of one agent's session: the billing so far, how far it has read, its warnings and caps.
interface Tally {
  readonly session: Session
  readonly billed: BilledUsd
  cursor: number
  readonly warned: Set<string>
  /** The last `cost-budget/cap` the log holds. */
  recorded: CostBudgetCapData | undefined
  /** The session's own cap (the last recorded one of origin `session`). */
  sessionCap: CostBudgetCapData | undefined
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

