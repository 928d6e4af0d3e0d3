import type { SessionEvent } from '../session/events.js'
import { verifySessionLog, type VerifyResult } from '../session/verify.js'
import { loggedRequests, reconstructionProblems } from './request-reconstruction.js'

/** {@link checkSession}'s answer: `verifySessionLog`'s plus how many requests were rebuilt. */
export interface SessionCheck extends VerifyResult {
  readonly events: number
  readonly requests: number
}

/**
 * Everything `ledgerloop verify` checks on a loaded log: the grammar, surface and provenance rules
 * ({@link verifySessionLog}) and the reconstruction of every logged request. Never throws.
 * @param options.allowOpenTurn - accept a log that ends inside a turn (a session that is running right now)
 * @example
 * ```ts
 * const { ok, problems } = checkSession((await store.read(id)).events)
 * ```
 */
export function checkSession(events: readonly SessionEvent[], options: { allowOpenTurn?: boolean } = {}): SessionCheck {
  const verified = verifySessionLog(events, options)
  // The request folds index events by seq: only a contiguous log can be rebuilt (verifySessionLog names gaps).
  const contiguous = events.every((e, i) => e.seq === i)
  const problems = contiguous ? [...verified.problems, ...reconstructionProblems(events)] : verified.problems
  return { ok: problems.length === 0, problems, events: events.length, requests: loggedRequests(events).length }
}
