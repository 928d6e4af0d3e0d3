import { HarnessError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { LedgerHooks } from '../loop/hook-types.js'

/** Options of {@link turnBudgetPlugin}. */
export interface TurnBudgetOptions {
  /** Most steps (model requests that got through) per turn. */
  readonly maxSteps?: number
  /** Most tokens per turn: input (cache included) + output, summed over the turn's completions. */
  readonly maxTokens?: number
}

/** Data of the `budget/exceeded` event logged before the cancel. */
export interface BudgetExceededData {
  readonly turn: number
  readonly budget: 'steps' | 'tokens'
  readonly limit: number
  readonly used: number
}

/**
 * Ends runaway turns: the loop has no budget of its own (mechanism in core, policy in plugins). Before a step
 * beyond the limit would start, it logs `budget/exceeded` and cancels with `{kind:'hook', reason}` (queued input
 * is kept), so the turn ends `aborted` with a reason that names the budget.
 * @example
 * ```ts
 * createHarness({ plugins: [turnBudgetPlugin({ maxSteps: 25, maxTokens: 200_000 })] })
 * ```
 */
export function turnBudgetPlugin(options: TurnBudgetOptions): Plugin<HookRegistrar<LedgerHooks>> {
  for (const key of ['maxSteps', 'maxTokens'] as const) {
    const v = options[key]
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 1)) throw new HarnessError(`turnBudgetPlugin: ${key} must be a positive integer`, 'INVALID_CONFIG')
  }
  const tokens = new Map<string, { turn: number; used: number }>()
  return {
    name: 'ledgerloop/turn-budget',
    setup(hooks) {
      const offCount = hooks.on('session/event', ({ session, event }) => {
        if (event.type !== 'assistant/message') return
        const d = event.data
        if (d.usage === undefined) return
        const entry = tokens.get(session.id)
        const used = d.usage.inputTokens + d.usage.outputTokens + (d.usage.cacheReadTokens ?? 0) + (d.usage.cacheWriteTokens ?? 0)
        tokens.set(session.id, { turn: d.turn, used: (entry?.turn === d.turn ? entry.used : 0) + used })
      })
      const offCheck = hooks.on('agent/pre-step', async (payload, next) => {
        const { agent, turn, step } = payload
        const breach = (budget: 'steps' | 'tokens', limit: number, used: number): void => {
          const data: BudgetExceededData = { turn, budget, limit, used }
          agent.session.append('budget/exceeded', data)
          const reason = budget === 'steps' ? `turn budget: more than ${limit} steps` : `turn budget: ${used} tokens used of ${limit}`
          agent.cancel({ kind: 'hook', reason }, { keepInbox: true })
        }
        if (options.maxSteps !== undefined && step > options.maxSteps) breach('steps', options.maxSteps, step - 1)
        else if (options.maxTokens !== undefined) {
          const entry = tokens.get(agent.id)
          if (entry !== undefined && entry.turn === turn && entry.used >= options.maxTokens) breach('tokens', options.maxTokens, entry.used)
        }
        return next()
      })
      return () => {
        offCount()
        offCheck()
      }
    },
  }
}
