import type { SessionEvent } from './events.js'

// The one check both fork paths (the harness's forkSession and the PostgreSQL session port) make before a
// prefix of a log becomes a child's seed: a fork inside an open turn would hand the child half a turn.

/**
 * Whether a log prefix ends inside a turn: its last `turn/start` has no `turn/end` after it.
 * @param events - the prefix, oldest first
 */
export function endsInsideTurn(events: readonly SessionEvent[]): boolean {
  for (let i = events.length - 1; i >= 0; i--) {
    const type = (events[i] as SessionEvent).type
    if (type === 'turn/end') return false
    if (type === 'turn/start') return true
  }
  return false
}
