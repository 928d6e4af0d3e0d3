import type { ContentBlock, UserMessage } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'
import type { TokenUsage } from '../llm/types.js'
import { addUsage, emptyUsage, type UsageTotals } from '../llm/token-usage.js'
import { clip, lastTurnReason } from './turn-outcome.js'

/** What `sessions` shows about one session's log. */
export interface LogSummary {
  /** The first prompt, clipped to one line ('' before any). */
  readonly title: string
  /** Turns ended so far. */
  readonly turns: number
  /** How the last turn ended (`completed`, `aborted`, …), or null before any. */
  readonly lastReason: TurnEndReason['kind'] | null
  /** Token totals of every model response (input includes cache hits). */
  readonly usage: UsageTotals
}

/** Summarises a log: title from the first user prompt, turn count, last end reason. */
export function summarizeLog(events: readonly SessionEvent[]): LogSummary {
  let title = ''
  let turns = 0
  const usage = emptyUsage()
  for (const event of events) {
    if (event.type === 'turn/end') turns++
    if (event.type === 'assistant/message') addUsage(usage, (event.data as { usage?: TokenUsage }).usage)
    if (title === '' && event.type === 'user/message') {
      const message = event.data as unknown as UserMessage
      if (message.source.kind === 'user') title = clip(textOf(message.content), 60)
    }
  }
  return { title, turns, lastReason: lastTurnReason(events)?.kind ?? null, usage }
}

function textOf(content: readonly ContentBlock[]): string {
  return content.map((b) => (b.type === 'text' ? b.text : '')).join(' ')
}
