/**
 * The adapter registry and request runtime (`harness.llm`): adapter routes, call preparation (defaults
 * materialised, the adapter pinned), and the ONE stream pump every request's chunks pass through — `stream()`,
 * `prepared.stream()` and the loop's {@link LlmRegistry.pump} all open a {@link StreamPump}, so the adapter
 * guard (a throw becomes one in-band failure finish, nothing after a finish, an invalid failure sanitised, the
 * adapter closed on finish and on cancel) is written once. Also owns the call-config copy and equality that
 * `session/request-header.ts` builds the logged header with.
 */
import { HarnessError } from '../errors/harness-error.js'
import { snapshotJsonFrozen } from '../json/lossless.js'
import { LlmError, RETRYABLE_CODES, isLlmFailure, normalizeLlmFailure, sanitizeLlmFailure } from './llm-error.js'
import type { HistoryView } from './history-view.js'
import type { AdapterDefaults, GenerateOptions, LlmAdapter, LlmCallConfig, LlmFailure, Message, ModelInfo, OutputSpec, RetryPolicy, StreamChunk } from './types.js'

/** Retry policy used for adapters that declare none. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  maxRetries: 5,
  retryableCodes: RETRYABLE_CODES,
  initialDelayMs: 500,
  maxDelayMs: 10_000,
  jitterRatio: 0.1,
})

/**
 * A call prepared against one exact adapter registration: defaults materialised, the adapter pinned (so a
 * re-registration between prepare and dispatch cannot mix two adapters), usable once.
 */
export interface PreparedCall {
  /** The effective config (frozen), defaults filled in. */
  readonly config: LlmCallConfig
  /** Exactly the fields the adapter filled in. */
  readonly adapterDefaults: AdapterDefaults
  /** The registration's retry policy. */
  readonly retryPolicy: RetryPolicy
  /** The model's capacity, when the adapter knows it. */
  readonly context?: { readonly contextWindow: number }
  /** Streams the request through `llm/stream` to the pinned adapter. Once only, same config only. */
  stream(request: GenerateOptions): AsyncIterable<StreamChunk>
}

/** The `llm/stream` middleware chain the registry runs every request through (wired to the hook bus). */
export type StreamMiddleware = (
  request: GenerateOptions,
  terminal: (request: GenerateOptions) => AsyncIterable<StreamChunk>,
) => Promise<AsyncIterable<StreamChunk>>

/** The adapter registry and request runtime (`harness.llm`). */
export class LlmRegistry {
  readonly #adapters = new Map<string, LlmAdapter>()
  readonly #middleware: StreamMiddleware

  readonly #middlewareActive: () => boolean
  /** The once-only claim of each prepared call this registry made (see {@link pump}). */
  readonly #claims = new WeakMap<PreparedCall, (request: GenerateOptions) => LlmAdapter>()

  /**
   * @param middleware - wraps every request (the `llm/stream` waterfall); default: none
   * @param middlewareActive - false when the middleware has nothing to do, so a stream skips one layer per chunk
   */
  constructor(middleware?: StreamMiddleware, middlewareActive?: () => boolean) {
    this.#middleware = middleware ?? (async (request, terminal) => terminal(request))
    this.#middlewareActive = middleware === undefined ? () => false : (middlewareActive ?? (() => true))
  }

  /**
   * Registers an adapter for its `provider` route; returns a disposer.
   * @throws HarnessError `INVALID_ADAPTER` for a malformed adapter, `DUPLICATE_ADAPTER` when the route is taken
   */
  register(adapter: LlmAdapter): () => void {
    if (typeof adapter !== 'object' || adapter === null || typeof adapter.stream !== 'function') {
      throw new HarnessError('an adapter needs a stream(request) method', 'INVALID_ADAPTER')
    }
    if (typeof adapter.provider !== 'string' || adapter.provider === '') {
      throw new HarnessError('an adapter needs a non-empty provider name', 'INVALID_ADAPTER')
    }
    if (this.#adapters.has(adapter.provider)) {
      throw new HarnessError(`an adapter for provider '${adapter.provider}' is already registered`, 'DUPLICATE_ADAPTER')
    }
    this.#adapters.set(adapter.provider, adapter)
    return () => {
      if (this.#adapters.get(adapter.provider) === adapter) this.#adapters.delete(adapter.provider)
    }
  }

  /** The adapter serving `provider`, if any. */
  adapter(provider: string): LlmAdapter | undefined {
    return this.#adapters.get(provider)
  }

  /** Registered provider names. */
  providers(): string[] {
    return [...this.#adapters.keys()]
  }

  /**
   * Resolves `config` against its adapter: fills `maxTokens` from the model's default when absent and
   * validates or fills `reasoningEffort`. Unknown models pass through with no defaults.
   * @throws LlmError `NO_ADAPTER`; HarnessError `UNSUPPORTED_REASONING_EFFORT`, `INVALID_CONFIG`
   */
  async prepareCall(config: LlmCallConfig, signal?: AbortSignal): Promise<PreparedCall> {
    signal?.throwIfAborted()
    if (typeof config.provider !== 'string' || config.provider === '' || typeof config.model !== 'string' || config.model === '') {
      throw new HarnessError('a request needs a provider and a model', 'INVALID_CONFIG')
    }
    const adapter = this.#adapters.get(config.provider)
    if (adapter === undefined) {
      throw new LlmError({ message: `no adapter is registered for provider '${config.provider}'`, code: 'NO_ADAPTER' })
    }
    const info: ModelInfo | undefined = adapter.resolveModel?.(config.model)
    // A detached copy: freezing it must never freeze the caller's objects (a whole request passed as config
    // keeps only its call-config fields).
    const effective = copyCallConfig(config)
    const defaults: { -readonly [K in keyof AdapterDefaults]: AdapterDefaults[K] } = {}
    if (effective.maxTokens === undefined && info?.defaultMaxTokens !== undefined) {
      effective.maxTokens = info.defaultMaxTokens
      defaults.maxTokens = true
    }
    if (info !== undefined) {
      const efforts = info.reasoningEfforts
      if (effective.reasoningEffort !== undefined && (efforts === undefined || !efforts.includes(effective.reasoningEffort))) {
        throw new HarnessError(
          `model '${config.model}' of '${config.provider}' does not accept reasoning effort '${effective.reasoningEffort}'` +
            (efforts === undefined ? ' (it takes none)' : ` (accepted: ${efforts.join(', ')})`),
          'UNSUPPORTED_REASONING_EFFORT',
        )
      }
      if (effective.reasoningEffort === undefined && info.defaultReasoningEffort !== undefined) {
        effective.reasoningEffort = info.defaultReasoningEffort
        defaults.reasoningEffort = true
      }
    }
    // Every field is a primitive but `stop`, a fresh copy, and `output`, whose schema is adopted when already
    // deep-frozen (a run's spec is) and copied otherwise: freezing them is a deep freeze.
    if (effective.stop !== undefined) Object.freeze(effective.stop)
    if (effective.output !== undefined) {
      effective.output = Object.freeze({ ...effective.output, schema: snapshotJsonFrozen(effective.output.schema, 'output schema') })
    }
    const frozenConfig: LlmCallConfig = Object.freeze(effective)
    let used = false
    const claim = (request: GenerateOptions): LlmAdapter => {
      if (used) throw new HarnessError('a prepared call can be streamed once only', 'INVALID_PREPARED_CALL')
      if (!callConfigEquals(request, frozenConfig)) {
        throw new HarnessError('the request does not match the prepared call config', 'INVALID_PREPARED_CALL')
      }
      used = true
      return adapter
    }
    const prepared: PreparedCall = Object.freeze({
      config: frozenConfig,
      adapterDefaults: Object.freeze(defaults),
      retryPolicy: adapter.retryPolicy ?? DEFAULT_RETRY_POLICY,
      ...(info?.contextWindow !== undefined ? { context: Object.freeze({ contextWindow: info.contextWindow }) } : {}),
      stream: (request: GenerateOptions) => this.#stream(request, claim(request)),
    })
    this.#claims.set(prepared, claim)
    return prepared
  }

  /**
   * Streams a request as `stream(request)` would (as `prepared.stream(request)` for a call this registry
   * prepared), feeding every chunk to `onChunk` instead of handing out an iterator: the same pump, read
   * without a promise per chunk beyond the adapter's own. This is how the loop reads its requests. A throw
   * from `onChunk` (a cancel) closes the stream, as leaving a `for await` early does, and is rethrown.
   * @param prepared - the call prepared for this request, or none (the route is resolved at dispatch time)
   * @param history - the session's view of the history `request.messages` was built from: when it says no
   *   message carries replay state, a request that still carries exactly that array skips the scan for another
   *   adapter's replay state
   * @throws HarnessError `INVALID_PREPARED_CALL` (rejects) as `prepared.stream` does; what a middleware throws
   */
  pump(request: GenerateOptions, prepared: PreparedCall | undefined, onChunk: (chunk: StreamChunk) => void, history?: HistoryView): Promise<void> {
    // Not an async function: the loop awaits this once per request, and a wrapper would add ticks to each.
    let pump: StreamPump
    try {
      const claim = prepared === undefined ? undefined : this.#claims.get(prepared)
      if (prepared !== undefined && claim === undefined) {
        // Another registry's prepared call: its own stream is already guarded, read it as `for await` would.
        pump = StreamPump.passThrough(prepared.stream(request)[Symbol.asyncIterator]())
      } else {
        const pinned = claim?.(request)
        // The history the session vouches for: free of replay state, so no scan while a request still carries it.
        const clean = history !== undefined && !history.hasReplayState ? history.messages : undefined
        pump = this.#middlewareActive() ? this.#viaMiddleware(request, pinned, clean) : this.#open(request, pinned, clean)
      }
    } catch (error) {
      return Promise.reject(error)
    }
    return pump.drain(onChunk)
  }

  /** Streams a request through `llm/stream` to whichever adapter serves its provider at dispatch time. */
  stream(request: GenerateOptions): AsyncIterable<StreamChunk> {
    return this.#stream(request, undefined)
  }

  #stream(request: GenerateOptions, pinned: LlmAdapter | undefined): AsyncIterable<StreamChunk> {
    // With no `llm/stream` listener the middleware layer is skipped: one pump, one layer per chunk.
    if (!this.#middlewareActive()) return this.#terminal(request, pinned)
    return { [Symbol.asyncIterator]: () => this.#viaMiddleware(request, pinned) }
  }

  /**
   * The innermost stream: the adapter (pinned, else the route's, resolved now) behind the guard; each
   * iteration opens the adapter anew. An unknown route is one in-band NO_ADAPTER finish.
   */
  #terminal(request: GenerateOptions, pinned: LlmAdapter | undefined, clean?: readonly Message[]): AsyncIterable<StreamChunk> {
    const adapter = pinned ?? this.#adapters.get(request.provider)
    if (adapter === undefined) {
      const failure = noAdapter(request)
      return { [Symbol.asyncIterator]: () => StreamPump.failed(failure, request.signal) }
    }
    const sent = this.#withoutForeignReplayState(request, adapter, clean)
    return { [Symbol.asyncIterator]: () => StreamPump.guarded(adapter, sent) }
  }

  /** {@link #terminal} opened at once (the loop's read with no middleware: no iterable in between). */
  #open(request: GenerateOptions, pinned: LlmAdapter | undefined, clean: readonly Message[] | undefined): StreamPump {
    const adapter = pinned ?? this.#adapters.get(request.provider)
    if (adapter === undefined) return StreamPump.failed(noAdapter(request), request.signal)
    return StreamPump.guarded(adapter, this.#withoutForeignReplayState(request, adapter, clean))
  }

  /**
   * The request through the `llm/stream` middleware, which ends in {@link #terminal}. The middleware runs at
   * the first read, as inside `for await`; its throws stay thrown (only the adapter boundary is guarded).
   */
  #viaMiddleware(request: GenerateOptions, pinned: LlmAdapter | undefined, clean?: readonly Message[]): StreamPump {
    const middleware = this.#middleware
    const terminal = (req: GenerateOptions): AsyncIterable<StreamChunk> => this.#terminal(req, pinned, clean)
    let inner: AsyncIterator<StreamChunk> | undefined
    return StreamPump.passThrough({
      async next() {
        inner ??= (await middleware(request, terminal))[Symbol.asyncIterator]()
        return inner.next()
      },
      async return() {
        await inner?.return?.()
        return DONE
      },
    })
  }

  /** Replay state is adapter-private: strip it from history produced by another adapter. */
  #withoutForeignReplayState(request: GenerateOptions, target: LlmAdapter, clean?: readonly Message[]): GenerateOptions {
    // A middleware that replaced the history is scanned: only the very array the session vouched for is believed.
    if (clean !== undefined && request.messages === clean) return request
    const foreign = (m: Message): boolean =>
      m.source.kind === 'model' && m.source.replayState !== undefined && this.#adapters.get(m.source.provider) !== target
    if (!request.messages.some(foreign)) return request
    const messages = request.messages.map((m) => {
      if (!foreign(m) || m.source.kind !== 'model') return m
      const { replayState: _dropped, ...source } = m.source
      return { ...m, source }
    })
    return { ...request, messages }
  }
}

function noAdapter(request: GenerateOptions): LlmFailure {
  return { message: `no adapter is registered for provider '${request.provider}'`, code: 'NO_ADAPTER' }
}

/**
 * A detached copy of exactly the call-config fields of `config` (anything else it carries, such as a request's
 * messages, is left behind), keys in the canonical order provider, model, reasoningEffort, temperature,
 * maxTokens, stop, absent fields omitted, `stop` copied. The one copy both the registry (a prepared call's
 * config) and the logged request header (`session/request-header.ts`) are built with, so they cannot drift.
 */
export function copyCallConfig(config: LlmCallConfig): { -readonly [K in keyof LlmCallConfig]: LlmCallConfig[K] } {
  return {
    provider: config.provider,
    model: config.model,
    ...(config.reasoningEffort !== undefined ? { reasoningEffort: config.reasoningEffort } : {}),
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(config.maxTokens !== undefined ? { maxTokens: config.maxTokens } : {}),
    ...(config.stop !== undefined ? { stop: [...config.stop] } : {}),
    ...(config.output !== undefined ? { output: copyOutputSpec(config.output) } : {}),
  }
}

/** The canonical copy of an output spec: keys in a fixed order, absent fields omitted. */
function copyOutputSpec(output: OutputSpec): OutputSpec {
  return {
    name: output.name,
    ...(output.description !== undefined ? { description: output.description } : {}),
    schema: output.schema,
    strict: output.strict,
  }
}

/** Field-wise equality of two call configs (`stop` element by element). */
export function callConfigEquals(a: LlmCallConfig, b: LlmCallConfig): boolean {
  if (a.provider !== b.provider || a.model !== b.model || a.reasoningEffort !== b.reasoningEffort) return false
  if (a.temperature !== b.temperature || a.maxTokens !== b.maxTokens) return false
  if (!outputSpecEquals(a.output, b.output)) return false
  const sa = a.stop
  const sb = b.stop
  if (sa === undefined || sb === undefined) return sa === sb
  return sa.length === sb.length && sa.every((s, i) => s === sb[i])
}

// By JSON text of the canonical copies: a schema is a JSON value, and the same object is the common case.
function outputSpecEquals(a: OutputSpec | undefined, b: OutputSpec | undefined): boolean {
  if (a === b) return true
  if (a === undefined || b === undefined) return false
  return JSON.stringify(copyOutputSpec(a)) === JSON.stringify(copyOutputSpec(b))
}

/** The terminal chunk that reports a failure in-band: `aborted` when the signal fired or the code is ABORTED. */
export function failureFinish(failure: LlmFailure, signal: AbortSignal | undefined): StreamChunk {
  const aborted = signal?.aborted === true || failure.code === 'ABORTED'
  return aborted
    ? { type: 'finish', reason: { kind: 'aborted', failure: failure.code === 'ABORTED' ? failure : { message: failure.message, code: 'ABORTED' } } }
    : { type: 'finish', reason: { kind: 'error', failure } }
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined })

/**
 * The one stream pump. Every request's chunks pass through one, read either pulled (`next`/`return`: the
 * iterator `stream()` hands to a `for await`) or pushed (`drain`: the loop), both through the same guard.
 *
 * Guarded — an adapter's own stream, the boundary the registry answers for: a throw (creating the stream or
 * reading it) becomes ONE in-band failure finish, `aborted` when the request signal fired or the code is
 * ABORTED, and nothing follows it; a `finish` is the last chunk and the adapter is closed on the next read
 * (its socket released); an in-band failure that is not a valid {@link LlmFailure} is sanitised (the loop
 * turns it into an LlmError); an early `return()` (cancel) closes the adapter too, unless it already ended.
 *
 * Pass-through — a middleware's stream or another registry's (guarded inside): read exactly as `for await`
 * would, so a throw stays thrown and nothing is closed after it.
 *
 * A plain iterator rather than an async generator: one promise hop per chunk, where a generator costs several.
 */
class StreamPump implements AsyncIterator<StreamChunk> {
  readonly #guarded: boolean
  readonly #signal: AbortSignal | undefined
  #iterator: AsyncIterator<StreamChunk> | undefined
  #pending: StreamChunk | undefined
  #state: 'open' | 'closing' | 'done' = 'open'

  private constructor(guarded: boolean, signal: AbortSignal | undefined) {
    this.#guarded = guarded
    this.#signal = signal
  }

  /** The guarded stream of `adapter` for `request` (the adapter's `stream` is called now). */
  static guarded(adapter: LlmAdapter, request: GenerateOptions): StreamPump {
    const pump = new StreamPump(true, request.signal)
    try {
      pump.#iterator = adapter.stream(request)[Symbol.asyncIterator]()
    } catch (error) {
      pump.#pending = failureFinish(normalizeLlmFailure(error), request.signal)
    }
    return pump
  }

  /** A guarded stream that is one failure finish (there was no adapter to ask). */
  static failed(failure: LlmFailure, signal: AbortSignal | undefined): StreamPump {
    const pump = new StreamPump(true, signal)
    pump.#pending = failureFinish(failure, signal)
    return pump
  }

  /** `iterator` read as `for await` reads it. */
  static passThrough(iterator: AsyncIterator<StreamChunk>): StreamPump {
    const pump = new StreamPump(false, undefined)
    pump.#iterator = iterator
    return pump
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    const iterator = this.#iterator
    if (!this.#guarded) return (iterator as AsyncIterator<StreamChunk>).next()
    if (this.#pending !== undefined) return Promise.resolve(this.#takePending())
    if (this.#state === 'closing') return this.return()
    if (this.#state === 'done' || iterator === undefined) return Promise.resolve(DONE)
    return iterator.next().then(this.#accept, this.#reject)
  }

  async return(): Promise<IteratorResult<StreamChunk>> {
    if (!this.#guarded) {
      await this.#iterator?.return?.()
      return DONE
    }
    const wasOpen = this.#state !== 'done'
    this.#state = 'done'
    this.#pending = undefined
    if (wasOpen) await this.#iterator?.return?.()
    return DONE
  }

  /**
   * Feeds every chunk to `onChunk`, with exactly what `for await` over this pump would see, inline: the
   * adapter's `next()` is awaited directly, no promise of the pump's own per chunk. A throw from `onChunk`
   * closes the stream (an error from the close is dropped: the body's error wins) and is rethrown.
   */
  async drain(onChunk: (chunk: StreamChunk) => void): Promise<void> {
    const iterator = this.#iterator
    const guarded = this.#guarded
    for (;;) {
      let chunk: StreamChunk
      if (this.#pending !== undefined) {
        chunk = this.#takePending().value as StreamChunk
      } else if (this.#state !== 'open' || iterator === undefined) {
        // Nothing may follow a finish: close the adapter (its socket) before the caller goes on.
        if (this.#state === 'closing') await this.return()
        return
      } else {
        let result: IteratorResult<StreamChunk>
        try {
          result = await iterator.next()
        } catch (error) {
          if (!guarded) throw error
          result = this.#reject(error)
        }
        if (result.done === true) {
          if (guarded) this.#state = 'done'
          return
        }
        chunk = result.value
        // `#reject` leaves the pump done: its failure finish is already the guarded value.
        if (guarded && chunk.type === 'finish' && this.#state === 'open') chunk = this.#finish(chunk)
      }
      try {
        onChunk(chunk)
      } catch (error) {
        try {
          await this.return()
        } catch {
          // the body's error wins
        }
        throw error
      }
    }
  }

  #takePending(): IteratorResult<StreamChunk> {
    const chunk = this.#pending as StreamChunk
    this.#pending = undefined
    this.#state = 'done'
    return { done: false, value: chunk }
  }

  /** The guard on an adapter's finish: it is the last chunk (closing), its failure a valid {@link LlmFailure}. */
  #finish(chunk: Extract<StreamChunk, { type: 'finish' }>): StreamChunk {
    this.#state = 'closing'
    const reason = chunk.reason
    if ((reason.kind === 'error' || reason.kind === 'aborted') && !isLlmFailure(reason.failure)) {
      return { ...chunk, reason: { kind: reason.kind, failure: sanitizeLlmFailure(reason.failure) } }
    }
    return chunk
  }

  // Arrow fields: `next()` hands the same two callbacks to every chunk's `then`, no closure per chunk.
  readonly #accept = (result: IteratorResult<StreamChunk>): IteratorResult<StreamChunk> => {
    if (result.done === true) {
      this.#state = 'done'
      return DONE
    }
    const chunk = result.value
    if (chunk.type !== 'finish') return result
    const guarded = this.#finish(chunk)
    return guarded === chunk ? result : { done: false, value: guarded }
  }

  readonly #reject = (error: unknown): IteratorResult<StreamChunk> => {
    this.#state = 'done'
    return { done: false, value: failureFinish(normalizeLlmFailure(error), this.#signal) }
  }
}
