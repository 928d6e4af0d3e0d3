import { HarnessError } from '../errors/harness-error.js'
import { snapshotJsonFrozen, type JsonValue } from '../json/lossless.js'
import { SURFACE_TYPES, type EventRecord, type SessionEvent, type SurfaceOp } from './events.js'

// The envelope of a session event: how an append builds one, and what adopting a stored one refuses.

/** Surface intent for the three surface types, or `ignorable` for a plugin's log-only type. */
export interface AppendOptions {
  readonly surfaceOp?: SurfaceOp
  readonly sourceEventSeqs?: readonly number[]
  /** Mark a plugin event skippable by readers that do not know its type. */
  readonly ignorable?: true
}

/** The keys an event's envelope may have (a stored event with any other is refused). */
export const ENVELOPE_KEYS: ReadonlySet<string> = new Set(['type', 'seq', 'time', 'data', 'surfaceOp', 'sourceEventSeqs', 'ignorable'])

/**
 * The frozen event an append of `type` with `data` (already a frozen snapshot) makes at `seq`, now.
 * @throws HarnessError `INVALID_EVENT` for a surface type without a surfaceOp, or an ignorable surface event
 */
export function buildEvent(type: string, seq: number, data: JsonValue, options: AppendOptions | undefined): SessionEvent {
  const isSurface = SURFACE_TYPES.has(type)
  if (isSurface && options?.surfaceOp === undefined) {
    throw new HarnessError(`'${type}' is a surface event and needs a surfaceOp`, 'INVALID_EVENT')
  }
  if (isSurface && options?.ignorable === true) throw new HarnessError('a surface event cannot be ignorable', 'INVALID_EVENT')
  const time = Date.now()
  const surfaceOp = options?.surfaceOp === undefined ? undefined : (snapshotJsonFrozen(options.surfaceOp, 'surfaceOp') as SurfaceOp)
  const sources = options?.sourceEventSeqs === undefined ? undefined : (snapshotJsonFrozen(options.sourceEventSeqs, 'sourceEventSeqs') as number[])
  const ignorable = options?.ignorable === true
  // Each shape is one literal, so V8 keeps every field in the object (adding keys afterwards would give each
  // logged event an out-of-object property store). Key order is the envelope's: type seq time data surfaceOp
  // sourceEventSeqs ignorable. data and surface parts are already deep-frozen: freezing the envelope completes it.
  if (ignorable) {
    if (surfaceOp === undefined && sources === undefined) return typed(Object.freeze({ type, seq, time, data, ignorable: true }))
  } else if (surfaceOp === undefined) {
    if (sources === undefined) return typed(Object.freeze({ type, seq, time, data }))
  } else if (sources === undefined) {
    return typed(Object.freeze({ type, seq, time, data, surfaceOp }))
  } else {
    return typed(Object.freeze({ type, seq, time, data, surfaceOp, sourceEventSeqs: sources }))
  }
  // Combinations the surface rules refuse right after (kept verbatim so the refusal names them).
  const event: { -readonly [K in keyof EventRecord]: EventRecord[K] } = { type, seq, time, data }
  if (surfaceOp !== undefined) event.surfaceOp = surfaceOp
  if (sources !== undefined) event.sourceEventSeqs = sources
  if (ignorable) event.ignorable = true
  return typed(Object.freeze(event))
}

/**
 * Header shapes the log no longer accepts: delta headers (every header is a full snapshot, so a fold needs
 * only the latest) and reasons other than initial / resume / change (a `fallback` header would make a request
 * unreconstructable).
 */
export function legacyProblem(type: string, data: unknown): string | undefined {
  if (type === 'request/header-delta') return 'delta headers are not supported: every request/header is a full snapshot'
  if (type !== 'request/header') return undefined
  const reason = (data as { reason?: unknown } | null)?.reason
  if (reason !== 'initial' && reason !== 'resume' && reason !== 'change') return `request/header reason must be initial, resume or change, not ${JSON.stringify(reason)}`
  return undefined
}

/** The `SESSION_CORRUPT` error adopting a stored log throws for its event `seq`, saying `why`. */
export function corrupt(seq: number, why: string, cause?: unknown): HarnessError {
  return new HarnessError(`session log is corrupt at seq ${seq}: ${why}`, 'SESSION_CORRUPT', { cause })
}

// An envelope checked here or by the surface rules right after: from now on it is read as the typed union.
function typed(event: EventRecord): SessionEvent {
  return event as SessionEvent
}
