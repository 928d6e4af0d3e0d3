// A session's cost cap as its log records it, and the spend against it: what `inspect`, the chat/run footer and
// the page show. The cost budget (plugins/cost-budget.ts) writes the events read here; views sit below plugins, so
// the event's name and shape are defined on this side and the plugin imports them.
import type { SessionEvent } from '../session/events.js'
import { BilledUsd, formatCost, type PricingCatalogue } from './cost.js'

/** The log-only event type that records a session's cost cap (ignorable by readers that do not know it). */
export const COST_CAP_EVENT = 'cost-budget/cap'

/** Data of the `cost-budget/cap` event: the cap in force for a session from this event on. */
export interface CostBudgetCapData {
  /** The cap in US dollars. */
  readonly maxUsd: number
  /** What the cap covers: the whole session, or each turn on its own. */
  readonly per: 'turn' | 'session'
  /**
   * `session`: the session's own cap, chosen when it was created (`POST /api/sessions` with `maxCostUsd`); it
   * wins over any process's default. `plugin`: the default cap of the cost budget that ran it (`--max-cost`),
   * recorded when that budget first priced a request of the session.
   */
  readonly origin: 'session' | 'plugin'
}

/** The spend of a capped session against its cap. */
export interface CostCapFigure {
  readonly maxUsd: number
  readonly per: 'turn' | 'session'
  readonly origin: 'session' | 'plugin'
  /** USD billed over every request attempt (failed and retried ones included): the session's, or with `per: 'turn'` its last turn's. */
  readonly spentUsd: number
  /** Usage records that had no USD price, so count nothing against the cap. */
  readonly unpriced: number
  /** `provider/model` of each model the budget warned it cannot price (its `cost-budget/unpriced` warnings). */
  readonly unpricedModels: readonly string[]
  /** Turns the cap stopped (its `budget/exceeded` events). */
  readonly stoppedTurns: readonly number[]
  /** For people: `spent $0.0140 of $0.0200 cap`, with the unpriced count when there is one. */
  readonly summary: string
}

/** The cap in force at the end of the log: its last `cost-budget/cap` event, or undefined when none was recorded. */
export function recordedCostCap(events: readonly SessionEvent[]): CostBudgetCapData | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type === COST_CAP_EVENT) return event.data as unknown as CostBudgetCapData
  }
  return undefined
}

/**
 * The spend against the session's cap: the recorded cap, else `fallbackMaxUsd` (a process's `--max-cost` for a
 * session whose budget has not priced a request yet); undefined for a session with neither. Prices as
 * `catalogue` says, every attempt billed, as the cost budget counts.
 */
export function costCapOf(events: readonly SessionEvent[], catalogue: PricingCatalogue, fallbackMaxUsd?: number): CostCapFigure | undefined {
  const recorded = recordedCostCap(events) ?? (fallbackMaxUsd !== undefined ? { maxUsd: fallbackMaxUsd, per: 'session' as const, origin: 'plugin' as const } : undefined)
  if (recorded === undefined) return undefined
  const billed = new BilledUsd(catalogue)
  const unpricedModels = new Set<string>()
  const stoppedTurns: number[] = []
  let lastTurn = 0
  for (const event of events) {
    billed.add(event)
    if (event.type === 'turn/start') lastTurn = (event.data as { turn: number }).turn
    // The cost budget's own events (plugins/cost-budget.ts): its unpriced warning and its stops.
    else if (event.type === 'cost-budget/unpriced') {
      const d = event.data as { provider: string; model: string }
      unpricedModels.add(`${d.provider}/${d.model}`)
    } else if (event.type === 'budget/exceeded' && (event.data as { budget?: unknown }).budget === 'cost') {
      stoppedTurns.push((event.data as { turn: number }).turn)
    }
  }
  billed.settle()
  const spentUsd = Math.round((recorded.per === 'turn' ? billed.turn(lastTurn) : billed.total) * 1e6) / 1e6
  return {
    maxUsd: recorded.maxUsd,
    per: recorded.per,
    origin: recorded.origin,
    spentUsd,
    unpriced: billed.unpriced,
    unpricedModels: [...unpricedModels],
    stoppedTurns,
    summary: spendSentence(spentUsd, recorded.maxUsd, recorded.per, billed.unpriced),
  }
}

/** `spent $0.0123 of $0.5000 cap` (`… per-turn cap` this turn), `(2 unpriced)` when some usage had no USD price. */
export function spendSentence(spentUsd: number, maxUsd: number, per: 'turn' | 'session', unpriced: number): string {
  return `spent ${formatCost(spentUsd, 'USD')} of ${formatCost(maxUsd, 'USD')} ${per === 'turn' ? 'per-turn cap this turn' : 'cap'}${unpriced > 0 ? ` (${unpriced} unpriced)` : ''}`
}
