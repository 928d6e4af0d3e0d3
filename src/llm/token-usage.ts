// The token totals of the house, in one file: TokenTotals is the running sum (every bucket a provider reported,
// kept apart), UsageTotals is how the CLI, the server and the page show a sum (input counts cache reads and
// writes, because that is what a person means by "tokens in"). Both shapes are on the wire (sub-agent tool-result
// meta and `inspect --json` carry TokenTotals; `summarizeLog`, `sessionUsage`, `sessions --json` and
// `GET /api/sessions` carry UsageTotals), so neither can become the other; what is shared is the one rule that
// turns usage into the shown figure ({@link addUsage}).
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

/** Token totals as shown: input/output of a turn, a request or a session, with the prompt-cache share. */
export interface UsageTotals {
  /** All input tokens: uncached + cache reads + cache writes. */
  input: number
  output: number
  cacheRead: number
}

/** An empty shown total. */
export function emptyUsage(): UsageTotals {
  return { input: 0, output: 0, cacheRead: 0 }
}

/**
 * Adds one completion's usage (or a {@link TokenTotals}, which is one) to a shown total: providers report uncached
 * input and cache reads as separate buckets, the shown input counts both and cache writes.
 */
export function addUsage(total: UsageTotals, usage: TokenUsage | undefined): void {
  if (usage === undefined) return
  total.input += usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0)
  total.output += usage.outputTokens
  total.cacheRead += usage.cacheReadTokens ?? 0
}
