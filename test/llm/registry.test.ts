// The adapter registry: routes, call preparation, and the one stream pump read both ways (pulled by
// `stream()`, pushed by `pump`) with the same guard.
import { describe, expect, it } from 'vitest'
import { HarnessError } from '../../src/errors/harness-error.js'
import { LlmError } from '../../src/llm/llm-error.js'
import { DEFAULT_RETRY_POLICY, LlmRegistry, callConfigEquals, type StreamMiddleware } from '../../src/llm/registry.js'
import { createAssistantMessage, createUserMessage } from '../../src/llm/messages.js'
import type { GenerateOptions, LlmAdapter, ModelInfo, RetryPolicy, StreamChunk } from '../../src/llm/types.js'

const stop: StreamChunk = { type: 'finish', reason: { kind: 'stop' } }

function adapter(provider: string, chunks: StreamChunk[] = [stop], models: Record<string, ModelInfo> = {}) {
  const requests: GenerateOptions[] = []
  const a: LlmAdapter = {
    provider,
    resolveModel: (model) => models[model],
    async *stream(request) {
      requests.push(request)
      yield* chunks
    },
  }
  return { adapter: a, requests }
}

async function collect(stream: AsyncIterable<StreamChunk>): Promise<StreamChunk[]> {
  const out: StreamChunk[] = []
  for await (const c of stream) out.push(c)
  return out
}

async function rejection(promise: Promise<unknown>): Promise<HarnessError> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(HarnessError)
    return error as HarnessError
  }
  throw new Error('expected a rejection')
}

function thrown(fn: () => unknown): HarnessError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(HarnessError)
    return error as HarnessError
  }
  throw new Error('expected a throw')
}

const req = (provider: string, model = 'm', extra: Partial<GenerateOptions> = {}): GenerateOptions => ({ provider, model, messages: [], ...extra })

describe('register', () => {
  it('registers a route and its disposer removes it (idempotent, and never removes a later registration)', async () => {
    const r = new LlmRegistry()
    const first = adapter('p')
    const off = r.register(first.adapter)
    expect(r.providers()).toEqual(['p'])
    expect(r.adapter('p')).toBe(first.adapter)
    off()
    expect(r.providers()).toEqual([])
    const second = adapter('p')
    r.register(second.adapter)
    off()
    expect(r.adapter('p')).toBe(second.adapter)
  })

  it('refuses a second adapter for the same route with DUPLICATE_ADAPTER', () => {
    const r = new LlmRegistry()
    r.register(adapter('p').adapter)
    const e = thrown(() => r.register(adapter('p').adapter))
    expect(e.code).toBe('DUPLICATE_ADAPTER')
    expect(e.message).toMatch(/provider 'p' is already registered/)
  })

  it.each([
    ['no stream method', { provider: 'p' }, /stream\(request\) method/],
    ['an empty provider', { provider: '', stream: () => [] }, /non-empty provider name/],
    ['a non-string provider', { provider: 7, stream: () => [] }, /non-empty provider name/],
    ['null', null, /stream\(request\) method/],
  ])('refuses an adapter with %s with INVALID_ADAPTER', (_, value, pattern) => {
    const e = thrown(() => new LlmRegistry().register(value as unknown as LlmAdapter))
    expect(e.code).toBe('INVALID_ADAPTER')
    expect(e.message).toMatch(pattern)
  })
})

describe('prepareCall', () => {
  const models: Record<string, ModelInfo> = {
    big: { contextWindow: 128_000, defaultMaxTokens: 4096 },
    thinker: { reasoningEfforts: ['low', 'high'], defaultReasoningEffort: 'low' },
    plain: { contextWindow: 8000 },
  }
  const registry = () => {
    const r = new LlmRegistry()
    r.register(adapter('p', [stop], models).adapter)
    return r
  }

  it('materialises defaultMaxTokens and marks it as an adapter default', async () => {
    const call = await registry().prepareCall({ provider: 'p', model: 'big' })
    expect(call.config).toEqual({ provider: 'p', model: 'big', maxTokens: 4096 })
    expect(call.adapterDefaults).toEqual({ maxTokens: true })
    expect(call.context).toEqual({ contextWindow: 128_000 })
    expect(Object.isFrozen(call)).toBe(true)
    expect(Object.isFrozen(call.config)).toBe(true)
    expect(Object.isFrozen(call.adapterDefaults)).toBe(true)
    expect(call.retryPolicy).toBe(DEFAULT_RETRY_POLICY)
  })

  it('leaves explicit values untouched and marks nothing', async () => {
    const call = await registry().prepareCall({ provider: 'p', model: 'big', maxTokens: 10, temperature: 0.2 })
    expect(call.config).toEqual({ provider: 'p', model: 'big', maxTokens: 10, temperature: 0.2 })
    expect(call.adapterDefaults).toEqual({})
  })

  it('does not alias the caller config', async () => {
    const config = { provider: 'p', model: 'big', stop: ['x'] }
    const call = await registry().prepareCall(config)
    expect(Object.isFrozen(config.stop)).toBe(false)
    config.stop.push('y')
    expect(call.config.stop).toEqual(['x'])
    // Only call-config fields are kept (a whole request passed as config does not leak its messages).
    const fromRequest = await registry().prepareCall(req('p', 'big', { messages: [createUserMessage('hi')] }))
    expect(Object.keys(fromRequest.config)).toEqual(['provider', 'model', 'maxTokens'])
  })

  it('fills the default reasoning effort with a marker and accepts an advertised one', async () => {
    const r = registry()
    const d = await r.prepareCall({ provider: 'p', model: 'thinker' })
    expect(d.config.reasoningEffort).toBe('low')
    expect(d.adapterDefaults).toEqual({ reasoningEffort: true })
    const e = await r.prepareCall({ provider: 'p', model: 'thinker', reasoningEffort: 'high' })
    expect(e.config.reasoningEffort).toBe('high')
    expect(e.adapterDefaults).toEqual({})
  })

  it('refuses an effort the model does not advertise, or any effort for a model without efforts', async () => {
    const r = registry()
    const e1 = await rejection(r.prepareCall({ provider: 'p', model: 'thinker', reasoningEffort: 'max' }))
    expect(e1.code).toBe('UNSUPPORTED_REASONING_EFFORT')
    expect(e1.message).toMatch(/does not accept reasoning effort 'max' \(accepted: low, high\)/)
    const e2 = await rejection(r.prepareCall({ provider: 'p', model: 'plain', reasoningEffort: 'low' }))
    expect(e2.code).toBe('UNSUPPORTED_REASONING_EFFORT')
    expect(e2.message).toMatch(/it takes none/)
  })

  it('passes an unknown model through with no defaults and no context', async () => {
    const call = await registry().prepareCall({ provider: 'p', model: 'mystery', reasoningEffort: 'whatever' })
    expect(call.config).toEqual({ provider: 'p', model: 'mystery', reasoningEffort: 'whatever' })
    expect(call.adapterDefaults).toEqual({})
    expect(call.context).toBeUndefined()
  })

  it('throws LlmError NO_ADAPTER for an unknown provider', async () => {
    const e = await rejection(registry().prepareCall({ provider: 'nope', model: 'm' }))
    expect(e).toBeInstanceOf(LlmError)
    expect(e.code).toBe('NO_ADAPTER')
    expect((e as LlmError).failure.code).toBe('NO_ADAPTER')
    expect(e.message).toMatch(/provider 'nope'/)
  })

  it('throws INVALID_CONFIG without provider or model, and rejects when the signal is already aborted', async () => {
    const e = await rejection(registry().prepareCall({ provider: 'p', model: '' }))
    expect(e.code).toBe('INVALID_CONFIG')
    const ac = new AbortController()
    ac.abort(new Error('stop now'))
    await expect(registry().prepareCall({ provider: 'p', model: 'big' }, ac.signal)).rejects.toThrow('stop now')
  })

  it('hands out the adapter retry policy when it declares one', async () => {
    const policy: RetryPolicy = { maxRetries: 1, retryableCodes: ['SERVER'], initialDelayMs: 1, maxDelayMs: 2, jitterRatio: 0 }
    const r = new LlmRegistry()
    r.register({ ...adapter('q').adapter, retryPolicy: policy })
    expect((await r.prepareCall({ provider: 'q', model: 'm' })).retryPolicy).toBe(policy)
  })
})

describe('prepared stream()', () => {
  it('streams once only: a second call throws INVALID_PREPARED_CALL', async () => {
    const r = new LlmRegistry()
    const a = adapter('p')
    r.register(a.adapter)
    const call = await r.prepareCall({ provider: 'p', model: 'm' })
    expect(await collect(call.stream(req('p')))).toEqual([stop])
    const e = thrown(() => call.stream(req('p')))
    expect(e.code).toBe('INVALID_PREPARED_CALL')
    expect(e.message).toMatch(/once only/)
    expect(a.requests).toHaveLength(1)
  })

  it('refuses a request whose call config differs from the prepared one, and stays usable afterwards', async () => {
    const r = new LlmRegistry()
    r.register(adapter('p', [stop], { m: { defaultMaxTokens: 50 } }).adapter)
    const call = await r.prepareCall({ provider: 'p', model: 'm' })
    for (const bad of [req('p', 'm'), req('p', 'other', { maxTokens: 50 }), req('p', 'm', { maxTokens: 50, temperature: 1 }), req('p', 'm', { maxTokens: 50, stop: ['x'] })]) {
      const e = thrown(() => call.stream(bad))
      expect(e.code).toBe('INVALID_PREPARED_CALL')
      expect(e.message).toMatch(/does not match the prepared call config/)
    }
    expect(await collect(call.stream(req('p', 'm', { maxTokens: 50 })))).toEqual([stop])
  })

  it('uses the pinned adapter even when the route is re-registered between prepare and stream', async () => {
    const r = new LlmRegistry()
    const first = adapter('p', [{ type: 'finish', reason: { kind: 'stop' } }])
    const off = r.register(first.adapter)
    const call = await r.prepareCall({ provider: 'p', model: 'm' })
    off()
    const second = adapter('p', [{ type: 'finish', reason: { kind: 'max-tokens' } }])
    r.register(second.adapter)
    expect(await collect(call.stream(req('p')))).toEqual([stop])
    expect(first.requests).toHaveLength(1)
    expect(second.requests).toHaveLength(0)
  })
})

/** Two ways to consume a request: `for await` over `stream()`, and the loop's `pump` (the same pump, pushed). */
interface Consumer {
  readonly name: string
  /** Feeds each chunk to `body` until it returns false (an early exit) or the stream ends. */
  each(r: LlmRegistry, request: GenerateOptions, body: (chunk: StreamChunk) => boolean): Promise<void>
}
class EarlyExit extends Error {}
const consumers: Consumer[] = [
  {
    name: 'stream()',
    async each(r, request, body) {
      for await (const c of r.stream(request)) if (!body(c)) break
    },
  },
  {
    name: 'the loop (pump)',
    async each(r, request, body) {
      try {
        await r.pump(request, undefined, (c) => {
          if (!body(c)) throw new EarlyExit()
        })
      } catch (error) {
        if (!(error instanceof EarlyExit)) throw error
      }
    },
  },
]

describe.each(consumers)('$name: adapter failures become one terminal in-band finish', (consumer) => {
  const collect = async (r: LlmRegistry, request: GenerateOptions): Promise<StreamChunk[]> => {
    const out: StreamChunk[] = []
    await consumer.each(r, request, (c) => (out.push(c), true))
    return out
  }
  const failing = (provider: string, stream: LlmAdapter['stream']): LlmAdapter => ({ provider, stream })

  it('a throw while creating the stream becomes finish {error} with the normalised failure', async () => {
    const r = new LlmRegistry()
    r.register(
      failing('p', () => {
        throw new LlmError({ message: 'unauthorised', code: 'AUTH', status: 401 })
      }),
    )
    expect(await collect(r, req('p'))).toEqual([{ type: 'finish', reason: { kind: 'error', failure: { message: 'unauthorised', code: 'AUTH', status: 401 } } }])
  })

  it('a throw mid-iteration keeps the chunks before it and ends with exactly one finish {error}', async () => {
    const r = new LlmRegistry()
    const delta: StreamChunk = { type: 'text-delta', index: 0, text: 'hi' }
    r.register(
      failing('p', async function* () {
        yield { type: 'block-start', index: 0, blockType: 'text' }
        yield delta
        throw new Error('socket hang up')
      }),
    )
    const chunks = await collect(r, req('p'))
    expect(chunks.slice(0, 2)).toEqual([{ type: 'block-start', index: 0, blockType: 'text' }, delta])
    expect(chunks.slice(2)).toEqual([{ type: 'finish', reason: { kind: 'error', failure: { message: 'socket hang up', code: 'UNKNOWN' } } }])
  })

  it('a throw after the request signal fired becomes finish {aborted} with code ABORTED', async () => {
    const r = new LlmRegistry()
    const ac = new AbortController()
    r.register(
      failing('p', async function* (request) {
        yield { type: 'text-delta', index: 0, text: 'a' }
        request.signal?.throwIfAborted()
        throw new Error('unreachable')
      }),
    )
    const out: StreamChunk[] = []
    await consumer.each(r, req('p', 'm', { signal: ac.signal }), (c) => {
      out.push(c)
      ac.abort(new Error('user cancelled'))
      return true
    })
    expect(out[1]).toEqual({ type: 'finish', reason: { kind: 'aborted', failure: { message: 'user cancelled', code: 'ABORTED' } } })
    expect(out).toHaveLength(2)
  })

  it('a thrown ABORTED failure becomes finish {aborted} even without a signal', async () => {
    const r = new LlmRegistry()
    r.register(
      failing('p', () => {
        throw new LlmError({ message: 'gone', code: 'ABORTED' })
      }),
    )
    expect(await collect(r, req('p'))).toEqual([{ type: 'finish', reason: { kind: 'aborted', failure: { message: 'gone', code: 'ABORTED' } } }])
  })

  it('nothing follows the adapter finish and the adapter iterator is closed', async () => {
    const r = new LlmRegistry()
    let closed = false
    r.register(
      failing('p', async function* () {
        try {
          yield stop
          yield { type: 'text-delta', index: 0, text: 'after finish' }
        } finally {
          closed = true
        }
      }),
    )
    expect(await collect(r, req('p'))).toEqual([stop])
    expect(closed).toBe(true)
  })

  it('an adapter in-band failure that is not a valid LlmFailure is sanitised, keeping its code', async () => {
    const r = new LlmRegistry()
    r.register(adapter('p', [{ type: 'finish', reason: { kind: 'error', failure: { message: 'm', code: 'SERVER', status: 42 } } }]).adapter)
    expect(await collect(r, req('p'))).toEqual([{ type: 'finish', reason: { kind: 'error', failure: { message: 'm', code: 'SERVER' } } }])
  })

  it('an unknown provider becomes finish {error} NO_ADAPTER in-band when streamed unprepared', async () => {
    const chunks = await collect(new LlmRegistry(), req('ghost'))
    expect(chunks).toHaveLength(1)
    const finish = chunks[0] as Extract<StreamChunk, { type: 'finish' }>
    expect(finish.reason.kind).toBe('error')
    expect(finish.reason.kind === 'error' && finish.reason.failure.code).toBe('NO_ADAPTER')
  })

  it('early consumer exit calls the adapter iterator return()', async () => {
    const r = new LlmRegistry()
    let returned = false
    const iterator: AsyncIterator<StreamChunk> = {
      next: async () => ({ done: false, value: { type: 'text-delta', index: 0, text: 'x' } }),
      return: async () => {
        returned = true
        return { done: true, value: undefined }
      },
    }
    r.register(failing('p', () => ({ [Symbol.asyncIterator]: () => iterator })))
    const seen: string[] = []
    await consumer.each(r, req('p'), (chunk) => (seen.push(chunk.type), false))
    expect(seen).toEqual(['text-delta'])
    expect(returned).toBe(true)
  })
})

describe('stream(): middleware', () => {
  it('middleware throws stay thrown (no in-band conversion)', async () => {
    const mw: StreamMiddleware = async () => {
      throw new Error('middleware broke')
    }
    const r = new LlmRegistry(mw)
    r.register(adapter('p').adapter)
    await expect(collect(r.stream(req('p')))).rejects.toThrow('middleware broke')
  })

  it('a middleware iterable that throws mid-stream also stays thrown', async () => {
    const mw: StreamMiddleware = async () =>
      (async function* () {
        yield { type: 'text-delta', index: 0, text: 'x' } as StreamChunk
        throw new Error('observer broke')
      })()
    const r = new LlmRegistry(mw)
    r.register(adapter('p').adapter)
    await expect(collect(r.stream(req('p')))).rejects.toThrow('observer broke')
  })

  it('middleware may change the provider before the adapter is selected (unprepared calls)', async () => {
    const target = adapter('real')
    const r = new LlmRegistry(async (request, terminal) => terminal({ ...request, provider: 'real' }))
    r.register(target.adapter)
    expect(await collect(r.stream(req('alias')))).toEqual([stop])
    expect(target.requests[0]?.provider).toBe('real')
  })
})

describe('pump (the loop\'s reading of the one stream pump)', () => {
  const pumped = async (r: LlmRegistry, request: GenerateOptions, prepared?: Awaited<ReturnType<LlmRegistry['prepareCall']>>): Promise<StreamChunk[]> => {
    const out: StreamChunk[] = []
    await r.pump(request, prepared, (c) => out.push(c))
    return out
  }

  it('claims a prepared call once, pinned to its adapter, as prepared.stream does', async () => {
    const r = new LlmRegistry()
    const first = adapter('p')
    const off = r.register(first.adapter)
    const call = await r.prepareCall({ provider: 'p', model: 'm' })
    off()
    r.register(adapter('p', [{ type: 'finish', reason: { kind: 'max-tokens' } }]).adapter)
    expect(await pumped(r, req('p'), call)).toEqual([stop])
    expect(first.requests).toHaveLength(1)
    const e = await rejection(pumped(r, req('p'), call))
    expect(e.code).toBe('INVALID_PREPARED_CALL')
  })

  it('runs the middleware around the guarded adapter; a middleware throw stays thrown', async () => {
    const seen: string[] = []
    const r = new LlmRegistry(async (request, terminal) => {
      seen.push(request.provider)
      return terminal(request)
    })
    r.register(failing('p'))
    expect(await pumped(r, req('p'))).toEqual([{ type: 'finish', reason: { kind: 'error', failure: { message: 'boom', code: 'UNKNOWN' } } }])
    expect(seen).toEqual(['p'])
    const broken = new LlmRegistry(async () => {
      throw new Error('middleware broke')
    })
    broken.register(adapter('p').adapter)
    await expect(pumped(broken, req('p'))).rejects.toThrow('middleware broke')
  })

  it('reads another registry\'s prepared call through its own stream', async () => {
    const other = new LlmRegistry()
    other.register(adapter('p').adapter)
    const call = await other.prepareCall({ provider: 'p', model: 'm' })
    expect(await pumped(new LlmRegistry(), req('p'), call)).toEqual([stop])
  })

  function failing(provider: string): LlmAdapter {
    return {
      provider,
      async *stream() {
        throw new Error('boom')
      },
    }
  }
})

describe('replay state', () => {
  const withReplay = (provider: string) => createAssistantMessage([{ type: 'text', text: 'hi' }], { kind: 'model', provider, model: 'm', replayState: { secret: provider } })

  it('is stripped from history produced by another adapter, keeping provider and model', async () => {
    const r = new LlmRegistry()
    const target = adapter('b')
    r.register(adapter('a').adapter)
    r.register(target.adapter)
    const foreign = withReplay('a')
    const user = createUserMessage('go')
    await collect(r.stream(req('b', 'm', { messages: [user, foreign] })))
    const sent = target.requests[0]?.messages ?? []
    expect(sent[0]).toBe(user)
    expect(sent[1]?.source).toEqual({ kind: 'model', provider: 'a', model: 'm' })
    expect(sent[1]?.id).toBe(foreign.id)
    expect(foreign.source).toHaveProperty('replayState') // the logged message itself is untouched
  })

  it('is kept for history produced by the same adapter, and the request object is passed as-is', async () => {
    const r = new LlmRegistry()
    const target = adapter('b')
    r.register(target.adapter)
    const own = withReplay('b')
    const request = req('b', 'm', { messages: [own] })
    await collect(r.stream(request))
    expect(target.requests[0]).toBe(request)
  })

  it('is stripped when the historical provider is no longer registered', async () => {
    const r = new LlmRegistry()
    const target = adapter('b')
    r.register(target.adapter)
    await collect(r.stream(req('b', 'm', { messages: [withReplay('gone')] })))
    expect(target.requests[0]?.messages[0]?.source).toEqual({ kind: 'model', provider: 'gone', model: 'm' })
  })

  it("pump: a history the session vouches is free of replay state is sent as-is; one a middleware put in its place is still checked", async () => {
    const r = new LlmRegistry()
    const target = adapter('b')
    r.register(adapter('a').adapter)
    r.register(target.adapter)
    const clean = Object.freeze([createUserMessage('go')])
    const request = req('b', 'm', { messages: clean })
    await r.pump(request, undefined, () => {}, { messages: clean, hasReplayState: false })
    expect(target.requests[0]).toBe(request)
    // The vouch is what skips the scan: taken at its word even for a history it misdescribes, ignored without it.
    const misdescribed = Object.freeze([createUserMessage('go'), withReplay('a')])
    const trusted = req('b', 'm', { messages: misdescribed })
    await r.pump(trusted, undefined, () => {}, { messages: misdescribed, hasReplayState: false })
    expect(target.requests[1]).toBe(trusted)
    await r.pump(trusted, undefined, () => {})
    expect(target.requests[2]?.messages[1]?.source).toEqual({ kind: 'model', provider: 'a', model: 'm' })
    // An llm/stream middleware swaps in a history with another adapter's replay state: the vouch no longer applies.
    const swap: StreamMiddleware = async (req2, next) => next({ ...req2, messages: [...req2.messages, withReplay('a')] })
    const swapped = new LlmRegistry(swap)
    const second = adapter('b')
    swapped.register(adapter('a').adapter)
    swapped.register(second.adapter)
    await swapped.pump(request, undefined, () => {}, { messages: clean, hasReplayState: false })
    expect(second.requests[0]?.messages[1]?.source).toEqual({ kind: 'model', provider: 'a', model: 'm' })
  })
})

describe('callConfigEquals', () => {
  it('compares field by field and stop element by element', () => {
    expect(callConfigEquals({ provider: 'p', model: 'm', stop: ['a', 'b'] }, { provider: 'p', model: 'm', stop: ['a', 'b'] })).toBe(true)
    expect(callConfigEquals({ provider: 'p', model: 'm', stop: ['a'] }, { provider: 'p', model: 'm', stop: ['a', 'b'] })).toBe(false)
    expect(callConfigEquals({ provider: 'p', model: 'm', stop: [] }, { provider: 'p', model: 'm' })).toBe(false)
    expect(callConfigEquals({ provider: 'p', model: 'm', temperature: 0 }, { provider: 'p', model: 'm' })).toBe(false)
  })
})
