// What a session is doing or waiting for right now, and why its last turn stopped when that needs saying: the
// one line the page shows under a session's title. A pure fold of the log plus the run status the server knows
// (a log alone cannot tell a running turn from one whose process died).
import type { CoreEventData, SessionEvent, TurnEndReason } from '../session/events.js'
import { toolSubject } from './turn-outcome.js'

/** Which kind of wait or stop a session is in. */
export type SessionActivityKind = 'model' | 'tool' | 'retry' | 'approval' | 'interrupted' | 'orphaned'

/** What a session is doing or waiting for, in one line. */
export interface SessionActivity {
  readonly kind: SessionActivityKind
  /** A sentence for people: `waiting for the model (turn 3, step 2)`, `turn 2 was interrupted: …`. */
  readonly summary: string
  /** The turn it is about. */
  readonly turn: number
  /** Log time (ms) of the event the wait started with. */
  readonly since: number
}

/** The run status the server knows (see `SessionRunStatus` in server/session-ports.ts). */
export type ActivityRunStatus = 'running' | 'awaiting-approval' | 'idle' | 'stored'

/**
 * What the session is doing now (a running turn: waiting for the model, a tool, a retry or an approval), why a
 * turn stopped when it was cut off (`interrupted` by crash repair), or that the log ends inside a turn no process
 * runs (`orphaned`: a process died and nobody has opened the session since). Undefined for a session at rest
 * after an ordinary end.
 */
export function sessionActivity(events: readonly SessionEvent[], status: ActivityRunStatus): SessionActivity | undefined {
  let turn: { number: number; start: SessionEvent; continues?: number } | undefined
  let lastEnd: { number: number; reason: TurnEndReason; at: SessionEvent } | undefined
  let step: { number: number; at: SessionEvent } | undefined
  let waiting: SessionEvent | undefined
  const open = new Map<string, SessionEvent>()
  for (const e of events) {
    switch (e.type) {
      case 'turn/start': {
        const d = e.data as unknown as CoreEventData['turn/start']
        turn = { number: d.turn, start: e, ...(d.continues !== undefined ? { continues: d.continues } : {}) }
        step = undefined
        waiting = undefined
        open.clear()
        break
      }
      case 'turn/end': {
        const d = e.data as unknown as CoreEventData['turn/end']
        lastEnd = { number: d.turn, reason: d.reason, at: e }
        turn = undefined
        break
      }
      case 'step/start':
        step = { number: (e.data as unknown as CoreEventData['step/start']).step, at: e }
        waiting = undefined
        break
      case 'llm/retry':
        waiting = e
        break
      case 'assistant/chunk':
        if (waiting?.type === 'llm/retry') waiting = undefined
        break
      case 'tool/call':
        open.set((e.data as unknown as CoreEventData['tool/call']).callId, e)
        break
      case 'tool/result': {
        const id = (e.data as unknown as CoreEventData['tool/result']).message.content[0]?.toolCallId
        if (id !== undefined) open.delete(id)
        break
      }
    }
  }
  if (turn !== undefined) return openTurn(turn, step, waiting, [...open.values()], status)
  if (lastEnd?.reason.kind === 'interrupted') {
    return {
      kind: 'interrupted',
      turn: lastEnd.number,
      since: lastEnd.at.time,
      summary: `turn ${lastEnd.number} was interrupted: the process running it stopped (it crashed or was killed, or its worker lost the lease), and the next process to open the session closed the turn`,
    }
  }
  return undefined
}

function openTurn(
  turn: { number: number; start: SessionEvent; continues?: number },
  step: { number: number; at: SessionEvent } | undefined,
  waiting: SessionEvent | undefined,
  calls: readonly SessionEvent[],
  status: ActivityRunStatus,
): SessionActivity {
  const where = `turn ${turn.number}${step !== undefined ? `, step ${step.number}` : ''}`
  const continuing = turn.continues !== undefined ? ` (continuing turn ${turn.continues} after an interruption)` : ''
  // Only `stored` means nobody runs it; an `idle` owner may simply not have reported the turn it just began.
  if (status === 'stored') {
    return {
      kind: 'orphaned',
      turn: turn.number,
      since: turn.start.time,
      summary: `turn ${turn.number} is open in the log but no process runs it: the process that ran it stopped; the turn will be closed as interrupted when the session is next opened`,
    }
  }
  const call = calls[0]
  if (call !== undefined) {
    const d = call.data as unknown as CoreEventData['tool/call']
    const subject = toolSubject(d.arguments)
    const name = `${d.name}${subject !== '' ? ` ${subject}` : ''}`
    if (status === 'awaiting-approval') return { kind: 'approval', turn: turn.number, since: call.time, summary: `waiting for your approval of ${name} (${where})${continuing}` }
    return { kind: 'tool', turn: turn.number, since: call.time, summary: `running ${name}${calls.length > 1 ? ` and ${calls.length - 1} more tool call${calls.length === 2 ? '' : 's'}` : ''} (${where})${continuing}` }
  }
  if (waiting !== undefined) {
    const d = waiting.data as { attempt?: number; code?: string; message?: string; delayMs?: number }
    return { kind: 'retry', turn: turn.number, since: waiting.time, summary: `request ${d.attempt ?? 1} failed with ${String(d.code)}: ${String(d.message ?? '')}; retrying after ${Math.round((d.delayMs ?? 0) / 100) / 10} s (${where})${continuing}` }
  }
  return { kind: 'model', turn: turn.number, since: (step?.at ?? turn.start).time, summary: `waiting for the model (${where})${continuing}` }
}
