import type { SessionEvent } from './events.js'
import { buildEvent } from './event-envelope.js'
import { Session, type SessionHeader } from './session.js'

// The one check both fork paths (the harness's forkSession and the PostgreSQL session port) make before a
// prefix of a log becomes a child's seed: a fork inside an open turn would hand the child half a turn. And the
// child a fork makes, for the stores that copy the prefix's stored records instead of re-encoding its events:
// built here the way `new Session({ seed, endSeed: true })` builds it, so both paths write the same child.

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

/** Where a fork's prefix ends, as a store that copies it found it (see `SessionStore.copyPrefix`). */
export interface ForkPoint {
  /** The parent's header. */
  readonly parent: SessionHeader
  /** The last seq the child inherits (the prefix is seqs `0..at`). */
  readonly at: number
  /** The type of the event at `at`. */
  readonly lastType: string
}

/** The child of a fork, apart from the copied prefix: its header and the events that follow the prefix. */
export interface ForkChild {
  /** The child's header (`parentSession`, `seedLength` = `at + 1`, the parent's `cwd`). */
  readonly header: SessionHeader
  /** What follows the prefix: the `session/end-seed` marker at seq `at + 1` (none when the prefix ends with one). */
  readonly tail: readonly SessionEvent[]
}

/**
 * The child a fork at `point` makes: the header `forkSession` gives it and the `session/end-seed` after the
 * prefix, exactly as a Session seeded with the prefix (`endSeed: true`) would append it.
 * @param parentId - the parent session's id (the child's `parentSession`)
 * @param childId - the child's id (default: a new UUID)
 * @throws HarnessError `INVALID_CONFIG` for a malformed `childId`
 */
export function forkChild(point: ForkPoint, parentId: string, childId?: string): ForkChild {
  const { header } = new Session({
    ...(childId !== undefined ? { id: childId } : {}),
    header: {
      ...(point.parent.cwd !== undefined ? { cwd: point.parent.cwd } : {}),
      parentSession: parentId,
      seedLength: point.at + 1,
    },
  })
  const tail = point.lastType === 'session/end-seed' ? [] : [buildEvent('session/end-seed', point.at + 1, Object.freeze({}), undefined)]
  return { header, tail }
}
