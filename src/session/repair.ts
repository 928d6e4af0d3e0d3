import type { JsonValue } from '../json/lossless.js'
import { lostInputRestores } from './continuation.js'
import type { EventLog } from './event-log.js'
import type { SessionEvent, TurnEndReason } from './events.js'

/** A synthetic event for {@link interruptedTurnClosers}: what to append, without seq/time. */
export interface CloserEvent {
  readonly type: string
  readonly data: JsonValue
  readonly surfaceOp?: 'append'
  readonly sourceEventSeqs?: readonly number[]
}

/** Options of {@link interruptedTurnClosers}. */
export interface TurnCloserOptions {
  /** The `turn/end` reason (default `{kind:'interrupted'}`, crash repair's). */
  readonly reason?: TurnEndReason
}

interface PendingCall {
  readonly callId: string
  readonly step: number
  callSeq: number | undefined
}

/**
 * The events that close a log ending inside a turn (crash repair, docs/stores.md, "Loading and repair"): for every tool call the
 * model made that has no result, a `tool/result` error — `TOOL_OUTCOME_UNKNOWN` when its `tool/call` was
 * logged (it may have run), `TOOL_NOT_STARTED` otherwise — then `step/end` if a step is open, then
 * `turn/end {interrupted}`. Empty when the log is balanced. Deterministic: same log, same closers. The loop uses
 * the same closers, with the turn's own reason, when a turn fails with work still open (a refused append), so
 * a failure inside a process leaves exactly what a crash would. `events` may start at the turn's `turn/start`.
 */
export function interruptedTurnClosers(events: readonly SessionEvent[], options: TurnCloserOptions = {}): CloserEvent[] {
  let openTurn: number | undefined
  let openStep: number | undefined
  let pending = new Map<string, PendingCall>()
  for (const e of events) {
    const d = e.data as Record<string, unknown>
    switch (e.type) {
      case 'turn/start':
        openTurn = d.turn as number
        openStep = undefined
        pending = new Map()
        break
      case 'turn/end':
        openTurn = undefined
        openStep = undefined
        pending = new Map()
        break
      case 'step/start':
        openStep = d.step as number
        break
      case 'step/end':
        openStep = undefined
        pending = new Map()
        break
      case 'assistant/message': {
        const message = d.message as { content: { type: string; id?: string }[] }
        for (const block of message.content) {
          if (block.type === 'tool-call' && typeof block.id === 'string' && !pending.has(block.id)) {
            pending.set(block.id, { callId: block.id, step: d.step as number, callSeq: undefined })
          }
        }
        break
      }
      case 'tool/call': {
        // A re-run after a crash (`of`) answers its original call by a surface replace: if it is cut off
        // too, the model keeps seeing repair's earlier result, and the next continuation runs it again.
        if (d.of !== undefined) break
        const callId = d.callId as string
        const known = pending.get(callId)
        if (known !== undefined) known.callSeq = e.seq
        else pending.set(callId, { callId, step: d.step as number, callSeq: e.seq })
        break
      }
      case 'tool/result': {
        const message = d.message as { source: { callId?: string } }
        if (message.source.callId !== undefined) pending.delete(message.source.callId)
        break
      }
    }
  }
  if (openTurn === undefined) return []
  const turn = openTurn
  const reason: TurnEndReason = options.reason ?? { kind: 'interrupted' }
  const crashed = reason.kind === 'interrupted'
  const closers: CloserEvent[] = []
  let seq = events.length > 0 ? (events[events.length - 1] as SessionEvent).seq + 1 : 0
  for (const call of pending.values()) {
    const started = call.callSeq !== undefined
    const text = started
      ? `Error: ${crashed ? 'the session stopped while this tool call was running' : 'the turn failed before this tool call\'s result was recorded'}, so its outcome is unknown. Check the current state before relying on it, and repeat the call only if it is safe to run twice.`
      : `Error: ${crashed ? 'the session stopped' : 'the turn ended'} before this tool call started; it never ran.`
    const message = {
      id: `interrupted-tool-result-${call.callId}-${seq}`,
      role: 'user',
      content: [{ type: 'tool-result', toolCallId: call.callId, content: [{ type: 'text', text }], isError: true }],
      source: { kind: 'tool', callId: call.callId },
    }
    const error = started ? { name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' } : { name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' }
    closers.push({
      type: 'tool/result',
      data: { turn, step: call.step, message, error },
      surfaceOp: 'append',
      ...(started ? { sourceEventSeqs: [call.callSeq as number] } : {}),
    })
    seq++
  }
  if (openStep !== undefined) closers.push({ type: 'step/end', data: { turn, step: openStep } })
  closers.push({ type: 'turn/end', data: { turn, reason } as unknown as JsonValue })
  return closers
}

/**
 * Materialises closers as events continuing `events` (seqs from the end, every time = the last real event's
 * time, so repair is deterministic).
 */
export function closerEvents(events: readonly SessionEvent[]): SessionEvent[] {
  const closers = interruptedTurnClosers(events)
  const time = events.length > 0 ? (events[events.length - 1] as SessionEvent).time : 0
  return closers.map((c, i) => ({ ...c, seq: events.length + i, time }) as SessionEvent)
}

const TURN_BOUNDARIES: ReadonlySet<string> = new Set(['turn/start', 'turn/end'])

/**
 * {@link closerEvents} of a compact log, looking only at its last turn (everything before the last
 * `turn/start` is balanced or irrelevant to the closers) and never materialising chunk runs.
 */
export function closerEventsOfLog(log: EventLog): SessionEvent[] {
  const boundary = log.lastOfTypes(TURN_BOUNDARIES)
  if (boundary < 0 || log.typeAt(boundary) !== 'turn/start') return []
  const tail = log.eventsWithoutChunks(boundary)
  const closers = interruptedTurnClosers(tail)
  const time = (tail[tail.length - 1] as SessionEvent).time
  return closers.map((c, i) => ({ ...c, seq: log.length + i, time }) as SessionEvent)
}

/**
 * Everything crash repair appends to a stored log (docs/stores.md, "Loading and repair"): the closers of a turn
 * left open ({@link closerEventsOfLog}), then the restores that put input the crashed turn claimed but never
 * committed back at the head of the inbox. Deterministic: the same log gets the same events, and a log repaired
 * once gets none.
 */
export function repairEventsOfLog(log: EventLog, seedLength = 0): SessionEvent[] {
  const closers = closerEventsOfLog(log)
  const last = log.length > 0 ? log.at(log.length - 1) : undefined
  const time = closers[0]?.time ?? last?.time ?? 0
  const restores = lostInputRestores(log, seedLength).map((r, i) => ({ ...r, seq: log.length + closers.length + i, time }) as SessionEvent)
  return [...closers, ...restores]
}
