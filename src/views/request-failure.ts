// The failure a model request ended with, read off its finish chunk: the timeline and the request panel name the
// failure's code *and* message (a row that only says `error` tells the reader nothing to act on).
import type { FinishReason, LlmFailure } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import type { Timeline, TimelineRow } from './timeline.js'

/** The failure of the request whose last chunk is at `lastSeq`, when that chunk is an `error` or `aborted` finish. */
export function requestFailureAt(events: readonly SessionEvent[], lastSeq: number): LlmFailure | undefined {
  const event = events[lastSeq]
  if (event?.type !== 'assistant/chunk') return undefined
  const chunk = (event.data as { chunk?: { type?: string; reason?: FinishReason } }).chunk
  if (chunk?.type !== 'finish' || chunk.reason === undefined) return undefined
  return chunk.reason.kind === 'error' || chunk.reason.kind === 'aborted' ? chunk.reason.failure : undefined
}

/** A timeline row with the failure of a failed request attached. */
export type TimelineRowWithFailure = TimelineRow & { readonly failure?: LlmFailure }

/** The timeline with each failed request row carrying its {@link requestFailureAt} failure. */
export function withRequestFailures(timeline: Timeline, events: readonly SessionEvent[]): Timeline & { readonly rows: readonly TimelineRowWithFailure[] } {
  return {
    ...timeline,
    rows: timeline.rows.map((row) => {
      if (row.kind !== 'request' || row.lastSeq === undefined) return row
      const failure = requestFailureAt(events, row.lastSeq)
      return failure !== undefined ? { ...row, failure } : row
    }),
  }
}
