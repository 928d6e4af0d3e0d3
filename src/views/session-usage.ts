import type { TokenUsage } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import { addUsage, emptyUsage, type UsageTotals } from '../llm/token-usage.js'

/**
 * Token totals of a whole session: every completion's logged usage, with the prompt-cache share.
 * @example
 * ```ts
 * const { input, output, cacheRead } = sessionUsage(stored.events)
 * ```
 */
export function sessionUsage(events: readonly SessionEvent[]): UsageTotals {
  const total = emptyUsage()
  for (const event of events) {
    if (event.type === 'assistant/message') addUsage(total, (event.data as { usage?: TokenUsage }).usage)
  }
  return total
}
