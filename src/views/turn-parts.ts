// The parts `agent.stream()` yields, each read off one committed event: a pure mapping, so a server relaying a
// turn to a client (or a test reading a stored log) yields the same parts from the same events.
import type { JsonValue } from '../json/lossless.js'
import type { CoreEventData, SessionEvent, TurnEndReason } from '../session/events.js'
import type { TurnResult } from './turn-result.js'

/** Where a part's event is in the log, and the turn and step it belongs to. */
interface PartOrigin {
  /** Seq of the event the part was read from. */
  readonly seq: number
  readonly turn: number
}

/** A step opened (`step/start`). */
export interface StepStartPart extends PartOrigin {
  readonly type: 'step-start'
  readonly step: number
}

/** A streamed text delta (`assistant/chunk` with a `text-delta`). */
export interface TextDeltaPart extends PartOrigin {
  readonly type: 'text-delta'
  readonly step: number
  /** The content block the delta belongs to. */
  readonly index: number
  readonly text: string
}

/** A streamed reasoning delta (`assistant/chunk` with a `reasoning-delta`). */
export interface ReasoningDeltaPart extends PartOrigin {
  readonly type: 'reasoning-delta'
  readonly step: number
  readonly index: number
  readonly text: string
}

/** A tool call about to run (`tool/call`: durable before its body runs). */
export interface ToolCallPart extends PartOrigin {
  readonly type: 'tool-call'
  readonly step: number
  readonly callId: string
  readonly name: string
  /** The arguments exactly as the model streamed them (JSON text). */
  readonly arguments: string
}

/** A tool call's result (`tool/result`). */
export interface ToolResultPart extends PartOrigin {
  readonly type: 'tool-result'
  readonly step: number
  readonly callId: string
  /** The text of the result (its text blocks, joined). */
  readonly result: string
  readonly isError: boolean
  /** The logged failure code and error name of a failed call. */
  readonly error?: { readonly name: string; readonly code: string }
  readonly meta?: JsonValue
}

/** A step closed (`step/end`). */
export interface StepEndPart extends PartOrigin {
  readonly type: 'step-end'
  readonly step: number
}

/** The turn ended (`turn/end`, published once durable): the last part, with the turn's result. */
export interface TurnEndPart extends PartOrigin {
  readonly type: 'turn-end'
  readonly reason: TurnEndReason
  readonly result: TurnResult
}

/** One part of a streamed turn, in log order. */
export type TurnStreamPart = StepStartPart | TextDeltaPart | ReasoningDeltaPart | ToolCallPart | ToolResultPart | StepEndPart | TurnEndPart

/**
 * The part an event reads as (undefined for events that are no part: requests, inbox splices, messages, plugin
 * events). `turn-end` is {@link TurnEndPart} without its result, which is a fold of the whole turn (`turnResult`).
 */
export function streamPartOf(event: SessionEvent): Exclude<TurnStreamPart, TurnEndPart> | Omit<TurnEndPart, 'result'> | undefined {
  const seq = event.seq
  switch (event.type) {
    case 'step/start':
    case 'step/end': {
      const { turn, step } = event.data as unknown as CoreEventData['step/start']
      return { type: event.type === 'step/start' ? 'step-start' : 'step-end', seq, turn, step }
    }
    case 'assistant/chunk': {
      const { turn, step, chunk } = event.data as unknown as CoreEventData['assistant/chunk']
      if (chunk.type !== 'text-delta' && chunk.type !== 'reasoning-delta') return undefined
      return { type: chunk.type, seq, turn, step, index: chunk.index, text: chunk.text }
    }
    case 'tool/call': {
      const { turn, step, callId, name, arguments: args } = event.data as unknown as CoreEventData['tool/call']
      return { type: 'tool-call', seq, turn, step, callId, name, arguments: args }
    }
    case 'tool/result': {
      const { turn, step, message, error, meta } = event.data as unknown as CoreEventData['tool/result']
      const block = message.content[0]
      let result = ''
      for (const b of block.content) if (b.type === 'text') result += b.text
      return {
        type: 'tool-result',
        seq,
        turn,
        step,
        callId: block.toolCallId,
        result,
        isError: block.isError === true,
        ...(error !== undefined ? { error } : {}),
        ...(meta !== undefined ? { meta } : {}),
      }
    }
    case 'turn/end': {
      const { turn, reason } = event.data as unknown as CoreEventData['turn/end']
      return { type: 'turn-end', seq, turn, reason }
    }
    default:
      return undefined
  }
}
