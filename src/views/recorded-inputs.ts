// What a person (or a parent agent) fed a recorded session, turn by turn and at which point: the input that opened
// each turn, what was steered or injected into later steps, and a cancel with how far the interrupted step had
// streamed. A rerun (app/rerun-session.ts) feeds exactly this to another model or prompt. Budgets and other
// plugins' cancels are not inputs: a rerun's own plugins decide those afresh.
import type { UserMessage } from '../llm/types.js'
import type { CancelCause, SessionEvent, TurnEndReason } from '../session/events.js'

/** A cancel a person or a parent made while a turn ran, and where. */
export interface RecordedCancel {
  readonly cause: CancelCause
  /** The step that was running (the turn's last opened step; 0 when it was cancelled before any step). */
  readonly step: number
  /** How many `assistant/chunk` events that step had logged when the cancel landed. */
  readonly chunks: number
}

/** One recorded turn's inputs. */
export interface RecordedTurnInputs {
  readonly turn: number
  readonly reason: TurnEndReason
  /** The user messages of its first step (the followups that opened it). */
  readonly input: readonly UserMessage[]
  /** User messages that entered later steps (steered or injected), by the step they entered. */
  readonly steers: ReadonlyMap<number, readonly UserMessage[]>
  readonly cancel?: RecordedCancel
}

// Causes that came from outside the agent's composition: a person, a parent agent, a shutdown.
const INPUT_CAUSES = new Set(['user', 'parent', 'disposed'])

/** Every ended turn's inputs, in log order (continuation turns a crash repair started included). */
export function recordedInputs(events: readonly SessionEvent[]): RecordedTurnInputs[] {
  const turns: RecordedTurnInputs[] = []
  let open: { turn: number; step: number; chunks: number; input: UserMessage[]; steers: Map<number, UserMessage[]> } | undefined
  for (const e of events) {
    const d = e.data as { turn?: number; step?: number; reason?: TurnEndReason }
    if (e.type === 'turn/start') open = { turn: d.turn as number, step: 0, chunks: 0, input: [], steers: new Map() }
    if (open === undefined) continue
    if (e.type === 'step/start') {
      open.step = d.step as number
      open.chunks = 0
    }
    if (e.type === 'assistant/chunk') open.chunks++
    if (e.type === 'user/message' && e.surfaceOp === 'append') {
      const message = e.data as unknown as UserMessage
      if (message.source.kind === 'user') {
        if (open.step <= 1) open.input.push(message)
        else open.steers.set(open.step, [...(open.steers.get(open.step) ?? []), message])
      }
    }
    if (e.type === 'turn/end') {
      const reason = d.reason as TurnEndReason
      const cancel = reason.kind === 'aborted' && INPUT_CAUSES.has(reason.reason.kind) ? { cause: reason.reason, step: open.step, chunks: open.chunks } : undefined
      turns.push({ turn: open.turn, reason, input: open.input, steers: open.steers, ...(cancel !== undefined ? { cancel } : {}) })
      open = undefined
    }
  }
  return turns
}
