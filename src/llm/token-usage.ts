// The token totals of the house, in one file. What a person is shown — a turn's, a request's, a session's, a
// session-list row's tokens, in the CLI, the server and the page — is ONE type, UsageTotals (input counts cache
// reads and writes, because that is what a person means by "tokens in"); every view builds it with addUsage.
// TokenTotals is not a second way to show a sum: it is the running sum itself, every bucket a provider reported
// kept apart, and it stays only where those buckets are the data: the loop's accounting of a sub-agent's turn
// (its tool-result meta) and the descendants' roll-up of `inspect --json` (`subagentUsage`), both on the wire in
// that shape since they were added. Turning one into the other is addUsage (a TokenTotals is a TokenUsage).
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

/** One completion's usage (or a {@link TokenTotals}) as a shown total of its own. */
export function shownUsage(usage: TokenUsage | undefined): UsageTotals {
  const total = emptyUsage()
  addUsage(total, usage)
  return total
}
