import { QUARANTINE_LIFTED, QUARANTINED } from '../session/continuation.js'
import type { SessionEvent } from '../session/events.js'

/** A quarantine in force: why, and where the log says so. */
export interface QuarantineFact {
  /** The reason logged with the quarantine (e.g. "the same work was interrupted 3 times in a row (turns 4, 5, 6): only the original turn and continuations that ran alone in their process count"). */
  readonly reason: string
  /** Seq of the `session/quarantined` event. */
  readonly seq: number
  /** Epoch ms it was quarantined. */
  readonly since: number
}

/** The session's quarantine when one is in force (its last mark is `session/quarantined`, not lifted since). */
export function quarantineOf(events: readonly SessionEvent[]): QuarantineFact | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type === QUARANTINE_LIFTED) return undefined
    if (event.type !== QUARANTINED) continue
    const reason = (event.data as { reason?: unknown }).reason
    return { reason: typeof reason === 'string' ? reason : 'quarantined', seq: event.seq, since: event.time }
  }
  return undefined
}
