// The pure half of `ledgerloop replay`: what a recorded session says a fresh loop must be fed (each step's model
// output, each turn's user input, each tool call's result, the request header in force) and how a fresh request
// is compared with the recorded one. Running the fresh loop is app/'s part (app/replay-session.ts).
import type { ContentBlock, GenerateOptions, StreamChunk, ToolResultBlock, UserMessage } from '../llm/types.js'
import type { RequestHeader, SessionEvent, TurnEndReason } from '../session/events.js'
import { foldSession } from '../session/fold.js'
import { loggedRequests } from './request-reconstruction.js'

/** A recorded step's model output and the request it answered. */
export interface RecordedStep {
  /** The chunks of the attempt that counted (the last one), and whether it ended with a finish chunk. */
  readonly chunks: StreamChunk[]
  readonly finished: boolean
  /** The request it was built from, rebuilt from the log before its first chunk. */
  readonly request: RebuiltRequest
  readonly firstSeq: number
}

/** A request as the log rebuilds it: the messages and the header in force. */
export interface RebuiltRequest {
  readonly messages: readonly unknown[]
  readonly header: RequestHeader | undefined
}

/** A recorded turn: its end, its first-step user input, the steps it opened. */
export interface RecordedTurn {
  readonly turn: number
  readonly reason: TurnEndReason | undefined
  readonly input: UserMessage[]
  /** Step numbers that were opened. */
  readonly steps: Set<number>
  /** Later-step user input (steering), which a replay does not feed. */
  readonly steered: boolean
  /** Seq of its `turn/end`. */
  readonly endSeq: number
  /** For a continuation turn (durable execution): the interrupted turn it carries on (`turn/start` `continues`). */
  readonly continues?: number
}

/**
 * Whether a fresh loop cannot re-enact this turn and a replay must take it from the log instead: a turn closed by
 * crash repair (the loop never writes `interrupted`), or a continuation turn that carries an interrupted turn on
 * (started by recovery, not by input a replay could feed).
 */
export function followedFromLog(turn: RecordedTurn): boolean {
  return turn.reason?.kind === 'interrupted' || turn.continues !== undefined
}

/** A recorded tool call's outcome, as a replay swaps it in for the fresh call's. */
export interface RecordedToolResult {
  readonly content: readonly ContentBlock[]
  readonly isError: boolean
  readonly error?: { readonly name: string; readonly code: string }
}

/** The key of a turn's step in the maps below. */
export const stepKey = (turn: number, step: number): string => `${turn}/${step}`

/** Where a rebuilt request and a fresh one differ (message ids aside: a fresh loop mints its own). */
export function compareRequest(original: RebuiltRequest, request: GenerateOptions): string | undefined {
  const h = original.header
  if (h === undefined) return 'the original log has no request header before it'
  const fields: [string, unknown, unknown][] = [
    ['provider', h.config.provider, request.provider],
    ['model', h.config.model, request.model],
    ['reasoningEffort', h.config.reasoningEffort, request.reasoningEffort],
    ['temperature', h.config.temperature, request.temperature],
    ['maxTokens', h.config.maxTokens, request.maxTokens],
    ['stop', h.config.stop, request.stop],
    ['output', h.config.output, request.output],
    ['system', h.system, request.system],
    ['tools', h.tools ?? [], request.tools ?? []],
  ]
  for (const [name, a, b] of fields) if (JSON.stringify(a) !== JSON.stringify(b)) return `${name} differs: ${clipJson(a)} originally, ${clipJson(b)} in the replay`
  const a = original.messages.map(withoutId)
  const b = request.messages.map(withoutId)
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (JSON.stringify(a[i]) !== JSON.stringify(b[i])) return `message ${i} differs: ${clipJson(a[i])} originally, ${clipJson(b[i])} in the replay`
  }
  return undefined
}

function withoutId(message: unknown): unknown {
  if (typeof message !== 'object' || message === null) return message
  const { id: _id, ...rest } = message as Record<string, unknown>
  return rest
}

function clipJson(value: unknown): string {
  const text = value === undefined ? 'absent' : JSON.stringify(value)
  return text.length > 160 ? `${text.slice(0, 159)}…` : text
}

/** Each step's model output and request, by {@link stepKey}. */
export function recordedSteps(events: readonly SessionEvent[]): Map<string, RecordedStep> {
  const steps = new Map<string, RecordedStep>()
  for (const r of loggedRequests(events)) {
    const chunks = events.slice(r.firstSeq, r.lastSeq + 1).map((e) => (e.data as { chunk: StreamChunk }).chunk)
    const { messages, header } = foldSession(events.slice(0, r.firstSeq))
    // Later attempts of a step (after a retry) replace earlier ones: the last is the one the loop kept.
    steps.set(stepKey(r.turn, r.step), { chunks, finished: r.finish !== undefined, request: { messages, header }, firstSeq: r.firstSeq })
  }
  return steps
}

/** The ended turns, in log order. */
export function recordedTurns(events: readonly SessionEvent[]): RecordedTurn[] {
  const turns: RecordedTurn[] = []
  let open: { turn: number; input: UserMessage[]; steps: Set<number>; steered: boolean; step: number; continues?: number } | undefined
  for (const e of events) {
    const d = e.data as Record<string, unknown>
    if (e.type === 'turn/start') {
      open = { turn: d.turn as number, input: [], steps: new Set(), steered: false, step: 0, ...(typeof d.continues === 'number' ? { continues: d.continues } : {}) }
    }
    if (open === undefined) continue
    if (e.type === 'step/start') {
      open.step = d.step as number
      open.steps.add(open.step)
    }
    if (e.type === 'user/message' && e.surfaceOp === 'append') {
      const message = e.data as unknown as UserMessage
      if (message.source.kind === 'user') {
        if (open.step <= 1) open.input.push(message)
        else open.steered = true
      }
    }
    if (e.type === 'turn/end') {
      turns.push({
        turn: open.turn,
        reason: d.reason as TurnEndReason,
        input: open.input,
        steps: open.steps,
        steered: open.steered,
        endSeq: e.seq,
        ...(open.continues !== undefined ? { continues: open.continues } : {}),
      })
      open = undefined
    }
  }
  return turns
}

/** Each tool call's logged result, by call id. */
export function recordedResults(events: readonly SessionEvent[]): Map<string, RecordedToolResult> {
  const results = new Map<string, RecordedToolResult>()
  for (const e of events) {
    if (e.type !== 'tool/result' || e.surfaceOp !== 'append') continue
    const d = e.data as unknown as { message: { content: ToolResultBlock[] }; error?: { name: string; code: string } }
    const block = d.message.content[0]
    if (block === undefined) continue
    results.set(block.toolCallId, { content: block.content, isError: block.isError === true, ...(d.error !== undefined ? { error: d.error } : {}) })
  }
  return results
}

/** The header in force for each step, by {@link stepKey}: the latest one logged up to the step's end. */
export function stepHeaders(events: readonly SessionEvent[]): Map<string, RequestHeader> {
  const headers = new Map<string, RequestHeader>()
  let header: RequestHeader | undefined
  for (const e of events) {
    if (e.type === 'request/header') header = (e.data as unknown as { header: RequestHeader }).header
    if (e.type === 'step/end' && header !== undefined) {
      const d = e.data as { turn: number; step: number }
      headers.set(stepKey(d.turn, d.step), header)
    }
  }
  return headers
}

/** How the last ended turn of a log ended. */
export function lastTurnReason(events: readonly SessionEvent[]): TurnEndReason | undefined {
  for (let i = events.length - 1; i >= 0; i--) if ((events[i] as SessionEvent).type === 'turn/end') return ((events[i] as SessionEvent).data as { reason: TurnEndReason }).reason
  return undefined
}
