import { describe, expect, it } from 'vitest'
import { deepseekAdapter, DEEPSEEK_MODELS } from '../../../src/llm/adapters/deepseek.js'
import { createAssistantMessage, createToolResultMessage, createUserMessage } from '../../../src/llm/messages.js'
import { LlmRegistry } from '../../../src/llm/registry.js'
import type { GenerateOptions } from '../../../src/llm/types.js'
import { allText, collect } from './collect.js'
import { byteOffsetInside, bytesEvery, fetchWithExactChunks, fixture, sleep, splitBytes, type LoopbackReply, servePerTest } from './loopback.js'

const KEY = 'sk-test-SENTINEL-4f9a2c7e1b'
const serve = servePerTest()

function request(extra: Partial<GenerateOptions> = {}): GenerateOptions {
  return { provider: 'deepseek', model: 'deepseek-flash', messages: [createUserMessage('hi')], ...extra }
}

function sse(name: string, transform: (text: string) => string = (t) => t): LoopbackReply {
  return { chunks: [transform(fixture(name))] }
}

describe('deepseekAdapter: streaming', () => {
  it('streams reasoning then text, with cache usage buckets; the empty first reasoning delta opens no block', async () => {
    const s = await serve([sse('deepseek-text.sse')])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.blocks).toEqual([
      { type: 'reasoning', text: '用户在打招呼, answer briefly.' },
      { type: 'text', text: 'Hello, wörld — 你好 👋' },
    ])
    expect(out.chunks.filter((c) => c.type === 'block-start')).toHaveLength(2)
    expect(out.chunks.some((c) => c.type === 'reasoning-delta' && c.text === '')).toBe(false)
    expect(out.finish).toEqual({ kind: 'stop' })
    expect(out.usage).toEqual({ inputTokens: 58, outputTokens: 42, cacheReadTokens: 1152, reasoningTokens: 17 })
    expect(out.chunks.at(-2)?.type).toBe('usage')
  })

  it('keeps parallel tool calls apart by wire index, ids and names from the first fragment only', async () => {
    const s = await serve([sse('deepseek-thinking-tools.sse')])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.blocks).toEqual([
      { type: 'reasoning', text: 'Need the weather in two cities; call both tools.' },
      { type: 'tool-call', id: 'call_00_QdVn6Ddk3AUtqbGrkdl8x2', name: 'get_weather', arguments: '{"city": "Hangzhou"}' },
      { type: 'tool-call', id: 'call_01_Xb2mTq8rLs9PwE4vYc7nHj', name: 'get_weather', arguments: '{"city": "Zürich"}' },
    ])
    expect(out.finish).toEqual({ kind: 'tool-calls' })
    expect(out.usage).toEqual({ inputTokens: 128, outputTokens: 96, cacheReadTokens: 1920, reasoningTokens: 31 })
    const deltas = out.chunks.filter((c) => c.type === 'tool-call-delta')
    expect(deltas.filter((c) => c.name !== undefined)).toHaveLength(2)
  })

  it('maps finish_reason length to max-tokens (the assembler then drops the truncated tool call)', async () => {
    const s = await serve([sse('deepseek-length.sse')])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.finish).toEqual({ kind: 'max-tokens' })
    expect(out.blocks).toEqual([{ type: 'text', text: 'The list goes on: one, two,' }])
    expect(out.usage).toEqual({ inputTokens: 30, outputTokens: 16, cacheReadTokens: 0 })
  })

  it('reports a stop with no content as EMPTY_RESPONSE', async () => {
    const s = await serve([sse('deepseek-empty.sse')])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.finish.kind).toBe('error')
    expect(out.failure?.code).toBe('EMPTY_RESPONSE')
  })

  it.each([
    ['content_filter', 'CONTENT_FILTER'],
    ['insufficient_system_resource', 'SERVER'],
  ])('maps finish_reason %s to an error finish %s', async (reason, code) => {
    const body = `data: {"choices":[{"index":0,"delta":{"content":"partial"},"finish_reason":"${reason}"}]}\n\ndata: [DONE]\n\n`
    const s = await serve([{ chunks: [body] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.finish.kind).toBe('error')
    expect(out.failure?.code).toBe(code)
  })
})

describe('deepseekAdapter: SSE framing', () => {
  const expected = [
    { type: 'reasoning', text: '用户在打招呼, answer briefly.' },
    { type: 'text', text: 'Hello, wörld — 你好 👋' },
  ]

  it('survives cuts inside a UTF-8 character and inside "data:" (exact chunk boundaries)', async () => {
    const text = fixture('deepseek-text.sse')
    const cuts = [byteOffsetInside(text, '你', 1), byteOffsetInside(text, '👋', 2), byteOffsetInside(text, 'ö', 1), byteOffsetInside(text, '\n\ndata:', 4), 3]
    const pieces = splitBytes(text, cuts)
    expect(pieces.length).toBeGreaterThan(4)
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: 'http://127.0.0.1:9', fetch: fetchWithExactChunks(pieces) }), request())
    expect(out.blocks).toEqual(expected)
  })

  it('survives a stream cut every few bytes, over a real socket and with exact boundaries', async () => {
    const s = await serve([{ chunks: bytesEvery(fixture('deepseek-text.sse'), 97), gapMs: 1 }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.blocks).toEqual(expected)
    const pieces = bytesEvery(fixture('deepseek-text.sse'), 3)
    const exact = await collect(deepseekAdapter({ apiKey: KEY, baseURL: 'http://127.0.0.1:9', fetch: fetchWithExactChunks(pieces) }), request())
    expect(exact.blocks).toEqual(expected)
  })

  it('accepts CRLF line ends, with a cut between CR and LF', async () => {
    const crlf = fixture('deepseek-text.sse').replace(/\n/g, '\r\n')
    const pieces = splitBytes(crlf, [byteOffsetInside(crlf, '\r\n\r\ndata:', 1), byteOffsetInside(crlf, '\r\n\r\ndata:', 3)])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: 'http://127.0.0.1:9', fetch: fetchWithExactChunks(pieces) }), request())
    expect(out.blocks).toEqual(expected)
    const s = await serve([{ chunks: [crlf] }])
    const live = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(live.blocks).toEqual(expected)
  })

  it('treats keep-alive comments as activity: a slow stream with comments never trips the watchdog', async () => {
    const events = fixture('deepseek-text.sse').split('\n\n').filter((e) => e !== '').map((e) => `${e}\n\n`)
    const chunks = events.flatMap((e) => [': keep-alive\n\n', e])
    const s = await serve([{ chunks, gapMs: 80 }])
    // Data events are 160 ms apart (> idleTimeoutMs); only the comments in between keep the watchdog quiet.
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL, idleTimeoutMs: 140 }), request())
    expect(out.blocks).toEqual(expected)
  })

  it('reports a malformed JSON event as MALFORMED_RESPONSE without crashing', async () => {
    const good = 'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
    const s = await serve([{ chunks: [good, 'data: {"choices":[{"index":0,"delta":{"content":\n\n', 'data: [DONE]\n\n'] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.finish.kind).toBe('error')
    expect(out.failure?.code).toBe('MALFORMED_RESPONSE')
  })

  it('reports a mid-stream disconnect as TRANSPORT', async () => {
    const text = fixture('deepseek-thinking-tools.sse')
    const cut = byteOffsetInside(text, '"index":1,"id"', 0)
    const s = await serve([{ chunks: [Buffer.from(text, 'utf8').subarray(0, cut)], after: 'destroy' }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.finish.kind).toBe('error')
    expect(out.failure?.code).toBe('TRANSPORT')
  })

  it('reports a clean EOF before [DONE] and before any finish_reason as TRANSPORT', async () => {
    const s = await serve([{ chunks: ['data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.failure?.code).toBe('TRANSPORT')
  })
})

describe('deepseekAdapter: watchdog and cancellation', () => {
  it('ends a stalled stream with TIMEOUT after idleTimeoutMs', async () => {
    const first = 'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
    const s = await serve([{ chunks: [first], after: 'hang' }])
    const started = Date.now()
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL, idleTimeoutMs: 150 }), request())
    expect(out.finish.kind).toBe('error')
    expect(out.failure?.code).toBe('TIMEOUT')
    expect(Date.now() - started).toBeLessThan(5_000)
    await s.requests[0]?.socketClosed
  })

  it('times out a server that accepts the connection but never answers', async () => {
    const { createServer } = await import('node:net')
    const silent = createServer(() => undefined)
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const port = (silent.address() as { port: number }).port
    try {
      const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: `http://127.0.0.1:${port}`, idleTimeoutMs: 120 }), request())
      expect(out.failure?.code).toBe('TIMEOUT')
    } finally {
      silent.close()
    }
  })

  it('cancel mid-stream ends with an aborted finish and closes the socket', async () => {
    const first = 'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
    const s = await serve([{ chunks: [first], after: 'hang' }])
    const controller = new AbortController()
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request({ signal: controller.signal }), (chunk) => {
      if (chunk.type === 'text-delta') controller.abort()
    })
    expect(out.finish.kind).toBe('aborted')
    expect(out.failure?.code).toBe('ABORTED')
    await expect(Promise.race([s.requests[0]?.socketClosed.then(() => 'closed'), sleep(2_000).then(() => 'open')])).resolves.toBe('closed')
  })

  it('closes the socket when the consumer stops iterating early', async () => {
    const first = 'data: {"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}\n\n'
    const s = await serve([{ chunks: [first], after: 'hang' }])
    for await (const chunk of deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }).stream(request())) {
      if (chunk.type === 'text-delta') break
    }
    await expect(Promise.race([s.requests[0]?.socketClosed.then(() => 'closed'), sleep(2_000).then(() => 'open')])).resolves.toBe('closed')
  })

  it('an already-aborted signal sends nothing', async () => {
    const s = await serve([sse('deepseek-text.sse')])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request({ signal: AbortSignal.abort() }))
    expect(out.finish.kind).toBe('aborted')
    expect(s.requests).toHaveLength(0)
  })

  it('reports a refused connection as TRANSPORT', async () => {
    const s = await serve([])
    const url = s.baseURL
    await s.close()
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: url }), request())
    expect(out.failure?.code).toBe('TRANSPORT')
    expect(out.failure?.message).toContain(url)
  })
})

describe('deepseekAdapter: HTTP failures', () => {
  const errorBody = (message: string, type = 'invalid_request_error', code: string | null = 'invalid_request_error'): string =>
    JSON.stringify({ error: { message, type, param: null, code } })

  it.each([
    [401, errorBody(`Authentication Fails, Your api key: ****${KEY.slice(-4)} is invalid`, 'authentication_error', 'invalid_request_error'), 'AUTH'],
    [402, errorBody('Insufficient Balance', 'unknown_error', 'invalid_request_error'), 'INSUFFICIENT_BALANCE'],
    [400, errorBody("This model's maximum context length is 1000000 tokens. However, you requested 1000420 tokens (1000000 in the messages, 420 in the completion). Please reduce the length of the messages or completion."), 'CONTEXT_WINDOW_EXCEEDED'],
    [400, errorBody('The `reasoning_content` in the thinking mode must be passed back to the API.'), 'BAD_REQUEST'],
    [400, errorBody('Invalid max_tokens value, the valid range of max_tokens is [1, 393216]'), 'BAD_REQUEST'],
    [422, errorBody('Failed to deserialize the JSON body into the target type: messages[0]: missing field `content`'), 'BAD_REQUEST'],
    [500, errorBody('Internal server error', 'api_error', null), 'SERVER'],
    [503, errorBody('Server overloaded, please try again later', 'service_unavailable_error', null), 'SERVER'],
  ])('maps HTTP %i to its failure code', async (status, body, code) => {
    const s = await serve([{ status, headers: { 'content-type': 'application/json', 'x-request-id': 'req-7f3a' }, chunks: [body] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.finish.kind).toBe('error')
    expect(out.failure).toMatchObject({ code, status, requestId: 'req-7f3a' })
    expect(out.failure?.message).toContain(JSON.parse(body).error.message.slice(0, 20))
  })

  it('maps 429 with Retry-After in seconds', async () => {
    const s = await serve([{ status: 429, headers: { 'content-type': 'application/json', 'retry-after': '7' }, chunks: [errorBody('Rate Limit Reached', 'rate_limit_error', null)] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.failure).toMatchObject({ code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 7000 })
  })

  it('maps 429 with Retry-After as an HTTP date', async () => {
    const at = new Date(Date.now() + 30_000).toUTCString()
    const s = await serve([{ status: 429, headers: { 'content-type': 'application/json', 'retry-after': at }, chunks: [errorBody('Rate Limit Reached', 'rate_limit_error', null)] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.failure?.code).toBe('RATE_LIMIT')
    expect(out.failure?.providerRetryAfterMs).toBeGreaterThan(25_000)
    expect(out.failure?.providerRetryAfterMs).toBeLessThanOrEqual(30_000)
  })

  it('prefers retry-after-ms over Retry-After', async () => {
    const s = await serve([{ status: 429, headers: { 'retry-after-ms': '1500', 'retry-after': '2' }, chunks: ['{}'] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.failure).toMatchObject({ code: 'RATE_LIMIT', providerRetryAfterMs: 1500 })
  })

  it('keeps a non-JSON error page as the message (a proxy in the way)', async () => {
    const s = await serve([{ status: 502, headers: { 'content-type': 'text/html' }, chunks: ['<html><body>502 Bad Gateway</body></html>'] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.failure).toMatchObject({ code: 'SERVER', status: 502 })
    expect(out.failure?.message).toContain('502 Bad Gateway')
  })

  it('sends the key only in the Authorization header and never in an error message, even when echoed', async () => {
    const s = await serve([{ status: 401, chunks: [errorBody(`Incorrect API key provided: ${KEY}`, 'authentication_error')] }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(s.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(s.requests[0]?.body).not.toContain(KEY)
    expect(out.failure?.code).toBe('AUTH')
    expect(out.failure?.message).toContain('[redacted]')
    expect(allText(out)).not.toContain(KEY)
  })

  it('a missing key is an AUTH failure naming DEEPSEEK_API_KEY, and nothing is sent', async () => {
    const saved = process.env.DEEPSEEK_API_KEY
    delete process.env.DEEPSEEK_API_KEY
    try {
      const s = await serve([sse('deepseek-text.sse')])
      const adapter = deepseekAdapter({ baseURL: s.baseURL })
      const out = await collect(adapter, request())
      expect(out.failure?.code).toBe('AUTH')
      expect(out.failure?.message).toContain('DEEPSEEK_API_KEY')
      expect(s.requests).toHaveLength(0)
      // The environment is read per request, so a key set later is picked up by the same adapter.
      process.env.DEEPSEEK_API_KEY = KEY
      const ok = await collect(adapter, request())
      expect(ok.finish).toEqual({ kind: 'stop' })
      expect(s.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`)
    } finally {
      if (saved === undefined) delete process.env.DEEPSEEK_API_KEY
      else process.env.DEEPSEEK_API_KEY = saved
    }
  })
})

describe('deepseekAdapter: request body', () => {
  it('maps history exactly: system first, tool messages, reasoning_content sent back, content never null', async () => {
    const s = await serve([sse('deepseek-text.sse')])
    const model = { kind: 'model', provider: 'deepseek', model: 'deepseek-flash' } as const
    const messages = [
      createUserMessage('Weather in Hangzhou and Zürich?'),
      createAssistantMessage(
        [
          { type: 'reasoning', text: 'Need both.' },
          { type: 'tool-call', id: 'call_0', name: 'get_weather', arguments: '{"city":"Hangzhou"}' },
          { type: 'tool-call', id: 'call_1', name: 'get_weather', arguments: '{"city": "Zürich"}' },
        ],
        model,
      ),
      createToolResultMessage({ callId: 'call_0', content: [{ type: 'text', text: 'sunny, 24°C' }] }),
      createToolResultMessage({ callId: 'call_1', content: [], isError: true }),
      createAssistantMessage([{ type: 'reasoning', text: 'Both in.' }, { type: 'text', text: 'Sunny and cloudy.' }], model),
      createUserMessage('And tomorrow?'),
      createAssistantMessage([{ type: 'text', text: 'Unknown.' }], model),
      createUserMessage([
        { type: 'text', text: 'What is this?' },
        { type: 'image', attachment: { attachmentId: 'sha256:abcdef0123', mediaType: 'image/png', bytes: 10, url: 'https://example.invalid/cat.png' } },
      ]),
    ]
    const tools = [{ name: 'get_weather', description: 'Current weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }]
    await collect(
      deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }),
      request({ system: 'You are terse.', messages, tools, maxTokens: 4096, reasoningEffort: 'max', temperature: 0.3, stop: ['END'] }),
    )
    const received = s.requests[0]
    expect(received?.method).toBe('POST')
    expect(received?.url).toBe('/chat/completions')
    expect(received?.headers['user-agent']).toMatch(/^ledgerloop\/\d+\.\d+\.\d+/)
    expect(received?.headers.accept).toBe('text/event-stream')
    expect(received?.json).toEqual({
      model: 'deepseek-flash',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Weather in Hangzhou and Zürich?' },
        {
          role: 'assistant',
          content: '',
          reasoning_content: 'Need both.',
          tool_calls: [
            { id: 'call_0', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Hangzhou"}' } },
            { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Zürich"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_0', content: 'sunny, 24°C' },
        { role: 'tool', tool_call_id: 'call_1', content: '(no output)' },
        { role: 'assistant', content: 'Sunny and cloudy.', reasoning_content: 'Both in.' },
        { role: 'user', content: 'And tomorrow?' },
        { role: 'assistant', content: 'Unknown.', reasoning_content: '' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'https://example.invalid/cat.png' } },
          ],
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: tools[0] }],
      max_tokens: 4096,
      stop: ['END'],
      thinking: { type: 'enabled' },
      reasoning_effort: 'max',
    })
  })

  it.each([
    [undefined, {}, true],
    ['off', { thinking: { type: 'disabled' } }, true],
    ['low', { thinking: { type: 'enabled' }, reasoning_effort: 'low' }, false],
    ['high', { thinking: { type: 'enabled' }, reasoning_effort: 'high' }, false],
    ['medium', { thinking: { type: 'enabled' }, reasoning_effort: 'high' }, false],
    ['ultra', { thinking: { type: 'enabled' }, reasoning_effort: 'max' }, false],
  ])('maps reasoningEffort %s onto thinking parameters', async (effort, fields, keepsTemperature) => {
    const s = await serve([sse('deepseek-text.sse')])
    await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }), request({ temperature: 0.5, ...(effort !== undefined ? { reasoningEffort: effort } : {}) }))
    const body = s.requests[0]?.json as Record<string, unknown>
    expect({ thinking: body.thinking, reasoning_effort: body.reasoning_effort }).toEqual({ thinking: undefined, reasoning_effort: undefined, ...fields })
    expect(body.temperature).toBe(keepsTemperature ? 0.5 : undefined)
  })
})

describe('deepseekAdapter: model table and registry', () => {
  it('knows the current models and passes unknown names through with no defaults', () => {
    const adapter = deepseekAdapter()
    expect(adapter.provider).toBe('deepseek')
    expect(adapter.resolveModel?.('deepseek-flash')).toEqual(DEEPSEEK_MODELS['deepseek-flash'])
    expect(adapter.resolveModel?.('deepseek-v4-pro')?.contextWindow).toBe(1_000_000)
    expect(adapter.resolveModel?.('deepseek-v4-pro')?.maxOutputTokens).toBe(384_000)
    expect(adapter.resolveModel?.('deepseek-chat')).toBeUndefined()
    expect(adapter.resolveModel?.('toString')).toBeUndefined()
  })

  it('works through the registry: defaults materialised, thinking on by default, offline construction', async () => {
    const s = await serve([sse('deepseek-thinking-tools.sse')])
    const registry = new LlmRegistry()
    registry.register(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL }))
    const prepared = await registry.prepareCall({ provider: 'deepseek', model: 'deepseek-flash' })
    expect(prepared.config).toMatchObject({ maxTokens: 65_536, reasoningEffort: 'high' })
    expect(prepared.context).toEqual({ contextWindow: 1_000_000 })
    const chunks = []
    for await (const chunk of prepared.stream({ ...prepared.config, messages: [createUserMessage('weather?')] })) chunks.push(chunk)
    expect(chunks.at(-1)).toEqual({ type: 'finish', reason: { kind: 'tool-calls' } })
    expect(s.requests[0]?.json).toMatchObject({ max_tokens: 65_536, thinking: { type: 'enabled' }, reasoning_effort: 'high' })
  })
})
