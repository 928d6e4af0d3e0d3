// The requests a recorded session sent, each rebuilt from the log before it, in one pass over the log. A cassette
// (app/replay-adapter.ts) answers the n-th request of a fresh loop with the n-th of these, so rebuilding them must
// cost O(events) in all, not a fold of the whole prefix per request (views/replay-recording.ts's recordedSteps
// does that, which is fine for one `ledgerloop replay` but quadratic for a 1,000-step cassette).
import type { Message, StreamChunk } from '../llm/types.js'
import type { RequestHeader, SessionEvent } from '../session/events.js'
import { projectSurfaceEvent, Surface } from '../session/surface.js'
import { loggedRequests } from './request-reconstruction.js'

/**
 * The model-visible history a recorded request was built from: the first `length` entries of `messages`.
 * Requests between two surface replaces share one `messages` array (history only grows in between), so a
 * long recording holds one copy of its history, not one per request.
 */
export interface RecordedHistory {
  readonly messages: readonly Message[]
  readonly length: number
}

/** One recorded model request: what it was built from and what the model answered (its step's final attempt). */
export interface RecordedRequest {
  /** 1-based position among the recording's requests. */
  readonly request: number
  readonly turn: number
  readonly step: number
  /** Seq of the request's first chunk. */
  readonly firstSeq: number
  /** The request header in force (config, system prompt, tool schemas); absent in a log without one. */
  readonly header: RequestHeader | undefined
  readonly history: RecordedHistory
  /** The chunks the model streamed for the attempt the loop kept (the last one of its step). */
  readonly chunks: readonly StreamChunk[]
  /** False when the stream was cut off (a cancel mid-stream): no finish chunk was logged. */
  readonly finished: boolean
}

/** Model facts a recording reveals: the context window its `request/context` logged, the output cap an adapter filled in. */
export interface RecordedModelFacts {
  readonly contextWindow?: number
  readonly defaultMaxTokens?: number
}

/**
 * Every recorded request, in log order (one per step that streamed; a retried step counts once, with the chunks
 * of its last attempt, since that is the one a replay must reproduce).
 */
export function recordedRequests(events: readonly SessionEvent[]): RecordedRequest[] {
  const runs = loggedRequests(events)
  const byStep = new Map<string, Omit<RecordedRequest, 'request'>>()
  const surface = new Surface()
  let messages: Message[] = []
  let header: RequestHeader | undefined
  let next = 0
  for (const e of events) {
    // Every run that starts here was built from the events before this one.
    while (next < runs.length && (runs[next] as (typeof runs)[number]).firstSeq === e.seq) {
      const run = runs[next++] as (typeof runs)[number]
      const chunks: StreamChunk[] = []
      for (let seq = run.firstSeq; seq <= run.lastSeq; seq++) chunks.push(((events[seq] as SessionEvent).data as { chunk: StreamChunk }).chunk)
      byStep.set(`${run.turn}/${run.step}`, {
        turn: run.turn,
        step: run.step,
        firstSeq: run.firstSeq,
        header,
        history: { messages, length: messages.length },
        chunks,
        finished: run.finish !== undefined,
      })
    }
    if (e.type === 'request/header') header = (e.data as unknown as { header: RequestHeader }).header
    if (e.surfaceOp === undefined) continue
    surface.apply(e)
    if (e.surfaceOp === 'append') {
      const message = projectSurfaceEvent(e)
      if (message !== undefined) messages.push(message)
      continue
    }
    // A replace (compaction) rewrites history: later requests get a fresh array, earlier snapshots keep theirs.
    messages = []
    for (const seq of surface.nodes) {
      const message = projectSurfaceEvent(events[seq] as SessionEvent)
      if (message !== undefined) messages.push(message)
    }
  }
  return [...byStep.values()].map((r, i) => ({ request: i + 1, ...r }))
}

/** The history of a recorded request as a plain array (a copy). */
export function historyMessages(history: RecordedHistory): Message[] {
  return history.messages.slice(0, history.length)
}

/**
 * What the recording says about each model it used, so a cassette can materialise the same adapter defaults
 * (an output cap an adapter filled in, the context window) as the adapter that was recorded.
 */
export function recordedModelFacts(events: readonly SessionEvent[]): Map<string, RecordedModelFacts> {
  const facts = new Map<string, { contextWindow?: number; defaultMaxTokens?: number }>()
  const of = (model: string): { contextWindow?: number; defaultMaxTokens?: number } => {
    let f = facts.get(model)
    if (f === undefined) facts.set(model, (f = {}))
    return f
  }
  for (const e of events) {
    if (e.type === 'request/context') {
      const d = e.data as { model?: unknown; contextWindow?: unknown }
      if (typeof d.model === 'string' && typeof d.contextWindow === 'number') of(d.model).contextWindow = d.contextWindow
    }
    if (e.type === 'request/header') {
      const h = (e.data as unknown as { header: RequestHeader }).header
      if (h.adapterDefaults?.maxTokens === true && h.config.maxTokens !== undefined) of(h.config.model).defaultMaxTokens = h.config.maxTokens
    }
  }
  return facts
}
