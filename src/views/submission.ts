import type { CoreEventData, SessionEvent } from '../session/events.js'
import { InputFateFold } from './turn-result.js'

/**
 * Where the input first sent with a submission key stands, as a retrying client is told: `queued` (in the
 * inbox, no turn has taken it yet), `claimed` by turn `turn` (and, when a crash interrupted that turn, carried
 * on by turn `continuedIn`), or `discarded` (a cancel cleared it before any turn took it).
 */
export interface SubmissionState {
  /** The id of the `UserMessage` first sent with the key. */
  readonly messageId: string
  readonly state: 'queued' | 'claimed' | 'discarded'
  /** The turn that took the input (only when `claimed`). */
  readonly turn?: number
  /** The continuation turn that carries on `turn`'s work after a crash interrupted it. */
  readonly continuedIn?: number
}

/**
 * The state of the input first sent with submission `key` in a whole log, or undefined when no splice of the
 * log carries the key (nothing was sent with it yet).
 */
export function submissionState(events: Iterable<SessionEvent>, key: string): SubmissionState | undefined {
  let fold: InputFateFold | undefined
  let messageId: string | undefined
  let claimedTurn: number | undefined
  let continuedIn: number | undefined
  let discarded = false
  let openTurn: { turn: number; seq: number } | undefined
  for (const event of events) {
    if (event.type === 'turn/start') {
      const data = event.data as unknown as CoreEventData['turn/start']
      openTurn = { turn: data.turn, seq: event.seq }
      // A continuation chain: each continuation may itself be interrupted and continued again.
      const carried = continuedIn ?? claimedTurn
      if (carried !== undefined && data.continues === carried) continuedIn = data.turn
    } else if (event.type === 'turn/end') openTurn = undefined
    if (fold === undefined) {
      if (event.type !== 'agent/inbox/spliced') continue
      const splice = event.data as unknown as CoreEventData['agent/inbox/spliced']
      const first = splice.key === key ? splice.inserted[0] : undefined
      if (first === undefined) continue
      messageId = first.id
      // The fold starts at the queuing splice, inside the turn that may already be open.
      fold = new InputFateFold(first.id, openTurn)
    }
    if (claimedTurn !== undefined || discarded) continue
    const fate = fold.observe(event)
    if (fate?.kind === 'claimed') claimedTurn = fate.turn
    else if (fate?.kind === 'discarded') discarded = true
  }
  if (messageId === undefined) return undefined
  if (discarded) return { messageId, state: 'discarded' }
  if (claimedTurn === undefined) return { messageId, state: 'queued' }
  return { messageId, state: 'claimed', turn: claimedTurn, ...(continuedIn !== undefined ? { continuedIn } : {}) }
}
