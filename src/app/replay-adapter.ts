// A cassette: a model adapter that answers a fresh loop's requests with what a recorded session's model answered,
// after checking that each request is the one the recording sent. `ledgerloop replay` asks "does this build of the
// loop rebuild the recorded requests?" with the recorded composition; this asks the question a regression test
// needs: "does my agent, as configured today, still send the same requests?" The recorded requests come from the
// log itself (views/recorded-requests.ts), so a cassette is any stored session, with nothing extra recorded.
import { HarnessError } from '../errors/harness-error.js'
import type { GenerateOptions, LlmAdapter, LlmFailure, ModelInfo, StreamChunk } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import { recordedModelFacts, recordedRequests, type RecordedRequest } from '../views/recorded-requests.js'
import { describeDivergence, RequestComparer, type Divergence } from '../views/request-divergence.js'

/** Options of {@link replayAdapter}. */
export interface ReplayAdapterOptions {
  /** The recorded session's log (`(await store.read(id)).events`, or `agent.session.events`). */
  readonly events: readonly SessionEvent[]
  /**
   * What a request that differs from the recording gets: `'fail'` (default) ends it in-band with
   * `REPLAY_DIVERGED`; `'live'` sends it, and every request after it, to `live`.
   */
  readonly onDivergence?: 'fail' | 'live'
  /** The adapter that takes over after a divergence with `onDivergence: 'live'` (required then). */
  readonly live?: LlmAdapter
  /** The route the cassette answers (default: the provider of the recording's first request). */
  readonly provider?: string
}

/** The failure a diverging request ends with: code `REPLAY_DIVERGED`, and where it diverged. */
export interface ReplayDivergedFailure extends LlmFailure {
  readonly code: 'REPLAY_DIVERGED'
  readonly divergence: Divergence
}

/** A model adapter that plays a recorded session back, with what it found for assertions. */
export interface ReplayAdapter extends LlmAdapter {
  /** Every divergence found, in request order (in both modes). */
  readonly divergences: readonly Divergence[]
  /** How many requests were answered from the recording. */
  readonly served: number
}

/**
 * A model adapter that answers each request with the model output recorded for the matching request of a stored
 * session: the n-th request it receives is compared with the recording's n-th request (rebuilt from the log:
 * config, system prompt, tool schemas, history with message ids aside) and, when they are the same, answered with
 * the recorded chunks of that step's final attempt (text, tool calls, usage, finish). A recorded stream that was
 * cut off by a cancel plays its chunks and then waits for the request to be aborted, as the original was.
 * On the first difference the request ends in-band with `REPLAY_DIVERGED` (the failure carries `divergence`)
 * or, with `onDivergence: 'live'`, goes to `live` together with every later request.
 * @throws HarnessError `INVALID_CONFIG` for `'live'` without `live`, or a recording with no request and no `provider`
 * @example
 * ```ts
 * const cassette = replayAdapter({ events: (await store.read(id)).events })
 * const harness = createHarness({ adapters: [cassette], tools: recordedTools(events), system: 'You are terse.' })
 * const agent = await harness.createAgent({ provider: cassette.provider, model: 'deepseek-chat' })
 * await agent.run('summarise README.md')
 * expect(cassette.divergences).toEqual([])
 * ```
 */
export function replayAdapter(options: ReplayAdapterOptions): ReplayAdapter {
  const mode = options.onDivergence ?? 'fail'
  if (mode !== 'fail' && mode !== 'live') throw new HarnessError(`onDivergence must be 'fail' or 'live', not ${JSON.stringify(mode)}`, 'INVALID_CONFIG')
  const live = options.live
  if (mode === 'live' && live === undefined) throw new HarnessError("onDivergence: 'live' needs a live adapter to send diverging requests to", 'INVALID_CONFIG')
  const recorded = recordedRequests(options.events)
  const provider = options.provider ?? recorded[0]?.header?.config.provider
  if (provider === undefined) throw new HarnessError('the recording has no model request to replay: pass `provider` to name the route', 'INVALID_CONFIG')
  const facts = recordedModelFacts(options.events)
  const comparer = new RequestComparer()
  const divergences: Divergence[] = []
  let received = 0
  let served = 0
  let wentLive = false

  return {
    provider,
    divergences,
    get served() {
      return served
    },
    resolveModel(model: string): ModelInfo | undefined {
      const f = facts.get(model)
      if (f !== undefined && Object.keys(f).length > 0) return f
      return live?.resolveModel?.(model)
    },
    stream(request: GenerateOptions): AsyncIterable<StreamChunk> {
      const n = ++received
      if (wentLive && live !== undefined) return live.stream(request)
      const original = recorded[n - 1]
      const divergence = original === undefined ? beyondRecording(n, recorded.length, request) : comparer.compare(original, request, n)
      if (divergence === undefined && original !== undefined) {
        served++
        return new RecordedStream(original, request.signal)
      }
      const found = divergence as Divergence
      divergences.push(found)
      if (mode === 'live' && live !== undefined) {
        wentLive = true
        return live.stream(request)
      }
      const failure: ReplayDivergedFailure = { code: 'REPLAY_DIVERGED', message: describeDivergence(found), divergence: found }
      return new RecordedStream({ chunks: [{ type: 'finish', reason: { kind: 'error', failure } }], finished: true }, request.signal)
    },
  }
}

// A request the recording has no counterpart for: the fresh loop asked the model more often than the original.
function beyondRecording(n: number, count: number, request: GenerateOptions): Divergence {
  return { request: n, path: 'request', expected: null, actual: { provider: request.provider, model: request.model, note: `the recording has ${count} request${count === 1 ? '' : 's'}` } }
}

/**
 * Plays recorded chunks with one resolved promise each (no generator: a cassette should cost what a scripted
 * model costs), honouring abort; a stream that was cut off in the recording waits for the abort after its chunks.
 */
class RecordedStream implements AsyncIterableIterator<StreamChunk> {
  #next = 0
  constructor(
    readonly recording: Pick<RecordedRequest, 'chunks' | 'finished'>,
    readonly signal: AbortSignal | undefined,
  ) {}

  [Symbol.asyncIterator](): AsyncIterableIterator<StreamChunk> {
    return this
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    const signal = this.signal
    if (signal?.aborted === true) return Promise.reject(signal.reason)
    const chunk = this.recording.chunks[this.#next++]
    if (chunk !== undefined) return Promise.resolve({ done: false, value: chunk })
    if (this.recording.finished || signal === undefined) return Promise.resolve({ done: true, value: undefined })
    return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
  }

  return(): Promise<IteratorResult<StreamChunk>> {
    this.#next = this.recording.chunks.length
    return Promise.resolve({ done: true, value: undefined })
  }
}
