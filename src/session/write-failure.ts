import { errorChain, HarnessError } from '../errors/harness-error.js'
import { snapshotJsonFrozen } from '../json/lossless.js'
import type { SessionEvent, TurnEndReason } from './events.js'

// What a session does once a flush its turn depended on failed (docs/stores.md, "When a write fails"): the
// turn is reported by a replacement turn/end, and every later append is refused.

// The stores name their write failures (docs/stores.md, "When a write fails"); anything unnamed is a failed write.
function writeFailureCode(failure: unknown): string {
  return failure instanceof HarnessError ? failure.code : 'SESSION_WRITE_FAILED'
}

/**
 * @internal The error a session refuses appends with after the flush at the end of `turn` failed. The store's
 * own code is kept (`LEASE_LOST` stays recognisable to a worker); anything else is `SESSION_WRITE_FAILED`.
 */
export function writeRefusal(sessionId: string, turn: number, failure: unknown): HarnessError {
  const code = writeFailureCode(failure)
  const why = `the flush at the end of turn ${turn} failed (${errorChain(failure)})`
  return new HarnessError(`session '${sessionId}' refuses appends: ${why}; resume the session from its store to continue`, code, { cause: failure })
}

/**
 * @internal The `turn/end` reported in place of a provisional one whose flush failed: the same seq and time,
 * reason `error` with the store's own code (`SESSION_WRITE_FAILED` from the file stores, `STORE_UNAVAILABLE`
 * or `LEASE_LOST` from PostgreSQL, so the report says why as precisely as the store did), its message naming
 * the reason the turn would have ended with.
 */
export function turnEndNotWritten(provisional: SessionEvent, failure: unknown): SessionEvent {
  const { turn, reason } = provisional.data as { turn: number; reason: TurnEndReason }
  const was = reason.kind === 'error' ? `error ${reason.error.code}` : reason.kind
  const message = `turn ${turn} ended ${was}, but that end could not be written to the session log: ${errorChain(failure)}`
  const code = writeFailureCode(failure)
  const data = snapshotJsonFrozen({ turn, reason: { kind: 'error', error: { message, code } } })
  return Object.freeze({ type: 'turn/end', seq: provisional.seq, time: provisional.time, data }) as SessionEvent
}
