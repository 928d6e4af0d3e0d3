import type { JsonValue } from '../../json/lossless.js'
import { freezeChunk } from '../freeze-chunk.js'
import type { GenerateOptions, LlmAdapter, ModelInfo, StreamChunk, TokenUsage } from '../types.js'

/** One scripted model reply. An array element of `text`/`reasoning` is one streamed chunk. */
export type ScriptStep =
  | {
      readonly text?: string | readonly string[]
      readonly reasoning?: string | readonly string[]
      readonly toolCalls?: readonly { readonly id?: string; readonly name: string; readonly arguments: string | object }[]
      readonly finish?: 'stop' | 'tool-calls' | 'max-tokens'
      readonly usage?: TokenUsage
      /** Wait this long before each chunk (abortable): makes streams observable and cancellable in demos/tests. */
      readonly delayMs?: number
    }
  | {
      /** Ends the request with an in-band failure finish carrying these facts. */
      readonly error: { readonly code: string; readonly message?: string; readonly status?: number; readonly retryAfterMs?: number }
    }
  | { readonly hang: true }

/** Options of {@link scriptedAdapter}. */
export interface ScriptedAdapterOptions {
  /** Route name (default `scripted`). */
  readonly provider?: string
  /** Model facts by model name (context window, default max tokens). */
  readonly models?: Readonly<Record<string, ModelInfo>>
  /**
   * Keep every request in `.requests` (default true). Each request holds the whole history, so a long
   * benchmark or soak run should turn this off: the recorded requests would grow quadratically.
   */
  readonly recordRequests?: boolean
  /** Replies in order, or a function of the request and its 0-based index. */
  readonly script: readonly ScriptStep[] | ((request: GenerateOptions, index: number) => ScriptStep)
}

/** A scripted adapter: a real adapter that replays a script, recording every request it receives. */
export interface ScriptedAdapter extends LlmAdapter {
  /** Every request received, in order (the loop's frozen request objects); empty with `recordRequests: false`. */
  readonly requests: GenerateOptions[]
}

/**
 * A deterministic model for tests, demos and benchmarks. A script that runs out ends the request with an
 * in-band `error` finish, code `SCRIPT_EXHAUSTED`.
 * @example
 * ```ts
 * const model = scriptedAdapter({ script: [
 *   { toolCalls: [{ name: 'read_file', arguments: { path: 'README.md' } }] },
 *   { text: ['It is ', 'a readme.'] },
 * ] })
 * ```
 */
export function scriptedAdapter(options: ScriptedAdapterOptions): ScriptedAdapter {
  const requests: GenerateOptions[] = []
  const models = options.models ?? {}
  const script = options.script
  const record = options.recordRequests ?? true
  let served = 0
  return {
    provider: options.provider ?? 'scripted',
    requests,
    resolveModel: (model) => models[model],
    stream(request) {
      const index = served++
      if (record) requests.push(request)
      const step: ScriptStep | undefined = typeof script === 'function' ? script(request, index) : script[index]
      // The common case (no delay, no failure, no hang) skips the generator: benchmarks measure the loop, not this.
      if (step !== undefined && !('hang' in step) && !('error' in step) && (step.delayMs ?? 0) === 0) {
        return new ChunkReplay(scriptChunks(step, index), request.signal)
      }
      return playStep(step, index, request.signal)
    },
  }
}

async function* playStep(step: ScriptStep | undefined, requestIndex: number, signal: AbortSignal | undefined): AsyncGenerator<StreamChunk> {
  if (step === undefined) {
    yield { type: 'finish', reason: { kind: 'error', failure: { code: 'SCRIPT_EXHAUSTED', message: `the script has no reply for request #${requestIndex + 1}` } } }
    return
  }
  if ('hang' in step) {
    await waitForAbort(signal)
    return
  }
  if ('error' in step) {
    const e = step.error
    const failure = {
      code: e.code,
      message: e.message ?? `scripted failure ${e.code}`,
      ...(e.status !== undefined ? { status: e.status } : {}),
      ...(e.retryAfterMs !== undefined ? { providerRetryAfterMs: e.retryAfterMs } : {}),
    }
    yield { type: 'finish', reason: { kind: 'error', failure } }
    return
  }
  const delay = step.delayMs ?? 0
  for (const chunk of scriptChunks(step, requestIndex)) {
    if (delay > 0) await sleep(delay, signal)
    signal?.throwIfAborted()
    yield chunk
  }
}

/** The exact chunk sequence a text/tool script step streams (exported for benchmarks that pre-build it). */
export function scriptChunks(step: Extract<ScriptStep, { text?: unknown }>, requestIndex = 0): StreamChunk[] {
  // Every chunk is frozen as it is built: the session log adopts frozen chunks without copying them.
  const f = Object.freeze
  const chunks: StreamChunk[] = []
  let index = 0
  const textual = (type: 'reasoning' | 'text', parts: string | readonly string[] | undefined): void => {
    if (parts === undefined) return
    const list = typeof parts === 'string' ? [parts] : parts
    const i = index++
    chunks.push(f({ type: 'block-start', index: i, blockType: type }))
    for (const text of list) chunks.push(f(type === 'text' ? { type: 'text-delta', index: i, text } : { type: 'reasoning-delta', index: i, text }))
    chunks.push(f({ type: 'block-end', index: i, block: f({ type, text: list.join('') }) }))
  }
  textual('reasoning', step.reasoning)
  textual('text', step.text)
  const calls = step.toolCalls ?? []
  calls.forEach((call, n) => {
    const i = index++
    const id = call.id ?? `call_${requestIndex + 1}_${n + 1}`
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments as JsonValue)
    const cut = Math.floor(args.length / 2)
    chunks.push(f({ type: 'block-start', index: i, blockType: 'tool-call' }))
    chunks.push(f({ type: 'tool-call-delta', index: i, id, name: call.name, argumentsDelta: args.slice(0, cut) }))
    chunks.push(f({ type: 'tool-call-delta', index: i, id, argumentsDelta: args.slice(cut) }))
    chunks.push(f({ type: 'block-end', index: i, block: f({ type: 'tool-call', id, name: call.name, arguments: args }) }))
  })
  if (step.usage !== undefined) chunks.push(freezeChunk({ type: 'usage', usage: { ...step.usage } }))
  const finish = step.finish ?? (calls.length > 0 ? 'tool-calls' : 'stop')
  chunks.push(f({ type: 'finish', reason: f({ kind: finish }) }))
  return chunks
}

/** Replays prepared chunks with one resolved promise per chunk (no generator machinery), honouring abort. */
class ChunkReplay implements AsyncIterableIterator<StreamChunk> {
  #next = 0
  constructor(
    readonly chunks: readonly StreamChunk[],
    readonly signal: AbortSignal | undefined,
  ) {}

  [Symbol.asyncIterator](): AsyncIterableIterator<StreamChunk> {
    return this
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    if (this.signal?.aborted === true) return Promise.reject(this.signal.reason)
    const chunk = this.chunks[this.#next++]
    return Promise.resolve(chunk === undefined ? { done: true, value: undefined } : { done: false, value: chunk })
  }

  return(): Promise<IteratorResult<StreamChunk>> {
    this.#next = this.chunks.length
    return Promise.resolve({ done: true, value: undefined })
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(signal.reason)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function waitForAbort(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    if (signal === undefined) return // hangs forever by design: nothing can abort it
    if (signal.aborted) return reject(signal.reason)
    signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
}
