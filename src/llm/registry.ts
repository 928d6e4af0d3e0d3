import { HarnessError } from '../errors/harness-error.js'
import { LlmError, RETRYABLE_CODES, isLlmFailure, normalizeLlmFailure, sanitizeLlmFailure } from './llm-error.js'
import type { AdapterDefaults, GenerateOptions, LlmAdapter, LlmCallConfig, LlmFailure, Message, ModelInfo, RetryPolicy, StreamChunk } from './types.js'

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

/** @internal What the loop iterates (see {@link LlmRegistry.openForLoop}). */
export interface LoopStream {
  readonly iterator: AsyncIterator<StreamChunk>
  /** True for an adapter's own iterator: {@link pumpLoopStream} guards it as the registry's stream would. */
  readonly raw: boolean
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
  /** The once-only claim of each prepared call this registry made (see {@link openForLoop}). */
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
    // Every field is a primitive but `stop`, a fresh copy: freezing the two is a deep freeze.
    if (effective.stop !== undefined) Object.freeze(effective.stop)
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
      stream: (request: GenerateOptions) => this.#run(request, claim(request)),
    })
    this.#claims.set(prepared, claim)
    return prepared
  }

  /**
   * @internal The loop's way to stream a request (`prepared` from this registry, or none): with no `llm/stream`
   * middleware at work it hands out the adapter's own iterator, marked `raw`, and {@link pumpLoopStream} applies
   * the adapter guard inline, so a chunk costs no extra promise hop; otherwise the same guarded stream as
   * `prepared.stream(request)` / `stream(request)`.
   */
  openForLoop(request: GenerateOptions, prepared: PreparedCall | undefined): LoopStream {
    const claim = prepared === undefined ? undefined : this.#claims.get(prepared)
    if (prepared !== undefined && claim === undefined) return { iterator: prepared.stream(request)[Symbol.asyncIterator](), raw: false }
    const pinned = claim?.(request)
    if (this.#middlewareActive()) return { iterator: this.#run(request, pinned)[Symbol.asyncIterator](), raw: false }
    const adapter = pinned ?? this.#adapters.get(request.provider)
    if (adapter === undefined) {
      return { iterator: single(failureFinish({ message: `no adapter is registered for provider '${request.provider}'`, code: 'NO_ADAPTER' }, request.signal)), raw: false }
    }
    const req = this.#withoutForeignReplayState(request, adapter)
    try {
      return { iterator: adapter.stream(req)[Symbol.asyncIterator](), raw: true }
    } catch (error) {
      return { iterator: single(failureFinish(normalizeLlmFailure(error), req.signal)), raw: false }
    }
  }

  /** Streams a request through `llm/stream` to whichever adapter serves its provider at dispatch time. */
  stream(request: GenerateOptions): AsyncIterable<StreamChunk> {
    return this.#run(request, undefined)
  }

  #run(request: GenerateOptions, pinned: LlmAdapter | undefined): AsyncIterable<StreamChunk> {
    const terminal = (req: GenerateOptions): AsyncIterable<StreamChunk> => {
      const adapter = pinned ?? this.#adapters.get(req.provider)
      if (adapter === undefined) {
        return single(failureFinish({ message: `no adapter is registered for provider '${req.provider}'`, code: 'NO_ADAPTER' }, req.signal))
      }
      return guardAdapter(adapter, this.#withoutForeignReplayState(req, adapter))
    }
    if (!this.#middlewareActive()) return terminal(request)
    const middleware = this.#middleware
    return {
      [Symbol.asyncIterator]() {
        let inner: AsyncIterator<StreamChunk> | undefined
        return {
          async next() {
            inner ??= (await middleware(request, terminal))[Symbol.asyncIterator]()
            return inner.next()
          },
          async return() {
            await inner?.return?.()
            return { done: true, value: undefined }
          },
        }
      },
    }
  }

  /** Replay state is adapter-private: strip it from history produced by another adapter. */
  #withoutForeignReplayState(request: GenerateOptions, target: LlmAdapter): GenerateOptions {
    if (replayStateFree.has(request.messages)) return request
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

const replayStateFree = new WeakSet<readonly Message[]>()

/**
 * Marks a frozen history array as carrying no replay state, so requests built on it skip the foreign
 * replay-state scan (the session log knows this incrementally; a scan would cost O(history) per request).
 */
export function markReplayStateFree(messages: readonly Message[]): void {
  if (Object.isFrozen(messages)) replayStateFree.add(messages)
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
  }
}

/** Field-wise equality of two call configs (`stop` element by element). */
export function callConfigEquals(a: LlmCallConfig, b: LlmCallConfig): boolean {
  if (a.provider !== b.provider || a.model !== b.model || a.reasoningEffort !== b.reasoningEffort) return false
  if (a.temperature !== b.temperature || a.maxTokens !== b.maxTokens) return false
  const sa = a.stop
  const sb = b.stop
  if (sa === undefined || sb === undefined) return sa === sb
  return sa.length === sb.length && sa.every((s, i) => s === sb[i])
}

/** The terminal chunk that reports a failure in-band: `aborted` when the signal fired or the code is ABORTED. */
export function failureFinish(failure: LlmFailure, signal: AbortSignal | undefined): StreamChunk {
  const aborted = signal?.aborted === true || failure.code === 'ABORTED'
  return aborted
    ? { type: 'finish', reason: { kind: 'aborted', failure: failure.code === 'ABORTED' ? failure : { message: failure.message, code: 'ABORTED' } } }
    : { type: 'finish', reason: { kind: 'error', failure } }
}

async function* single(chunk: StreamChunk): AsyncGenerator<StreamChunk> {
  yield chunk
}

/** Converts every throw of the adapter (creation, iteration) into one terminal in-band finish chunk. */
function guardAdapter(adapter: LlmAdapter, request: GenerateOptions): AsyncIterable<StreamChunk> {
  return { [Symbol.asyncIterator]: () => new GuardedStream(adapter, request) }
}

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined })

/**
 * The adapter boundary as a plain iterator (one promise hop per chunk, where an async generator wrapper costs
 * several): a throw becomes one in-band failure finish; after a finish the adapter is closed on the next call;
 * an early `return()` (cancel) closes it too, so its socket is released.
 */
class GuardedStream implements AsyncIterator<StreamChunk> {
  readonly #signal: AbortSignal | undefined
  #iterator: AsyncIterator<StreamChunk> | undefined
  #pending: StreamChunk | undefined
  #state: 'open' | 'closing' | 'done' = 'open'

  constructor(adapter: LlmAdapter, request: GenerateOptions) {
    this.#signal = request.signal
    try {
      this.#iterator = adapter.stream(request)[Symbol.asyncIterator]()
    } catch (error) {
      this.#pending = failureFinish(normalizeLlmFailure(error), request.signal)
    }
  }

  next(): Promise<IteratorResult<StreamChunk>> {
    if (this.#pending !== undefined) {
      const chunk = this.#pending
      this.#pending = undefined
      this.#state = 'done'
      return Promise.resolve({ done: false, value: chunk })
    }
    if (this.#state === 'closing') return this.return()
    const iterator = this.#iterator
    if (this.#state === 'done' || iterator === undefined) return Promise.resolve(DONE)
    return iterator.next().then(
      (result) => {
        if (result.done === true) {
          this.#state = 'done'
          return DONE
        }
        const chunk = result.value
        if (chunk.type !== 'finish') return result
        // Nothing may follow a finish: close the adapter on the next call (the consumer's loop makes one).
        this.#state = 'closing'
        const reason = chunk.reason
        // An in-band failure must carry a valid LlmFailure (the loop turns it into an LlmError).
        if ((reason.kind === 'error' || reason.kind === 'aborted') && !isLlmFailure(reason.failure)) {
          return { done: false, value: { ...chunk, reason: { kind: reason.kind, failure: sanitizeLlmFailure(reason.failure) } } }
        }
        return result
      },
      (error: unknown) => {
        this.#state = 'done'
        return { done: false, value: failureFinish(normalizeLlmFailure(error), this.#signal) }
      },
    )
  }

  async return(): Promise<IteratorResult<StreamChunk>> {
    const wasOpen = this.#state !== 'done'
    this.#state = 'done'
    this.#pending = undefined
    if (wasOpen) await this.#iterator?.return?.()
    return DONE
  }
}

/**
 * @internal Feeds every chunk of `stream` to `onChunk`, as `for await` over the registry's stream would: a raw
 * adapter iterator gets the same guard as {@link GuardedStream} (a throw becomes one in-band failure finish, a
 * finish is the last chunk and closes the adapter, an invalid failure is sanitised), inline, without a promise
 * per chunk. When `onChunk` throws (a cancel), the stream is closed and the error rethrown.
 */
export async function pumpLoopStream(stream: LoopStream, signal: AbortSignal | undefined, onChunk: (chunk: StreamChunk) => void): Promise<void> {
  const iterator = stream.iterator
  for (;;) {
    let result: IteratorResult<StreamChunk>
    try {
      result = await iterator.next()
    } catch (error) {
      if (!stream.raw) throw error
      // The adapter is done for (it threw): nothing to close, as with the guarded stream.
      onChunk(failureFinish(normalizeLlmFailure(error), signal))
      return
    }
    if (result.done === true) return
    let chunk = result.value
    let last = false
    if (stream.raw && chunk.type === 'finish') {
      last = true
      const reason = chunk.reason
      if ((reason.kind === 'error' || reason.kind === 'aborted') && !isLlmFailure(reason.failure)) {
        chunk = { ...chunk, reason: { kind: reason.kind, failure: sanitizeLlmFailure(reason.failure) } }
      }
    }
    try {
      onChunk(chunk)
    } catch (error) {
      // As `for await` closes its iterator on a throw from its body (an error from the close is dropped).
      try {
        await iterator.return?.()
      } catch {
        // the body's error wins
      }
      throw error
    }
    if (last) {
      // Nothing may follow a finish: close the adapter (its socket) before the loop goes on.
      await iterator.return?.()
      return
    }
  }
}
