import type { TokenUsage } from './types.js'

/** A running sum of {@link TokenUsage} (same buckets; optional ones appear once some completion reported them). */
export type TokenTotals = { -readonly [K in keyof TokenUsage]: TokenUsage[K] }

/** An empty sum. */
export function emptyTokenTotals(): TokenTotals {
  return { inputTokens: 0, outputTokens: 0 }
}

/** Adds one completion's usage to `total`, bucket by bucket (a missing usage adds nothing). */
export function addTokenUsage(total: TokenTotals, usage: TokenUsage | undefined): void {
  if (usage === undefined) return
  total.inputTokens += usage.inputTokens
  total.outputTokens += usage.outputTokens
  for (const key of ['cacheReadTokens', 'cacheWriteTokens', 'reasoningTokens'] as const) {
    const v = usage[key]
    if (v !== undefined) total[key] = (total[key] ?? 0) + v
  }
}
