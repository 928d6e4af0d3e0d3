import { describe, expect, it } from 'vitest'
import { anthropicAdapter } from '../../../src/llm/adapters/anthropic.js'
import { createAssistantMessage, createToolResultMessage, createUserMessage } from '../../../src/llm/messages.js'
import type { GenerateOptions } from '../../../src/llm/types.js'
import { allText, collect } from './collect.js'
import { byteOffsetInside, fetchWithExactChunks, fixture, sleep, splitBytes, servePerTest } from './loopback.js'

const KEY = 'sk-ant-api03-SENTINEL-9c0d'
const serve = servePerTest()

function request(extra: Partial<GenerateOptions> = {}): GenerateOptions {
  return { provider: 'anthropic', model: 'claude-sonnet-4-5', messages: [createUserMessage('hi')], maxTokens: 4096, ...extra }
}

const model = { kind: 'model', provider: 'anthropic', model: 'claude-sonnet-4-5' } as const

describe('anthropicAdapter: streaming', () => {
  it('streams signed thinking, text and parallel tool calls with cache read/write usage', async () => {
    const s = await serve([{ chunks: [fixture('anthropic-thinking-tools.sse')] }])
    const out = await collect(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.blocks).toEqual([
      { type: 'reasoning', text: 'Two lookups are independent, so run them in parallel — 并行.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds' },
      { type: 'text', text: 'Let me look both up.' },
      { type: 'tool-call', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'get_weather', arguments: '{"city": "San Francisco"}' },
      { type: 'tool-call', id: 'toolu_01Ab2Cd3Ef4Gh5Ij6Kl7Mn8', name: 'get_time', arguments: '{}' },
    ])
    expect(out.finish).toEqual({ kind: 'tool-calls' })
    expect(out.usage).toEqual({ inputTokens: 24, outputTokens: 89, cacheReadTokens: 4096, cacheWriteTokens: 512 })
    const received = s.requests[0]
    expect(received?.url).toBe('/v1/messages')
    expect(received?.headers['x-api-key']).toBe(KEY)
    expect(received?.headers['anthropic-version']).toBe('2023-06-01')
    expect(received?.headers['user-agent']).toMatch(/^ledgerloop\//)
    expect(received?.headers.authorization).toBeUndefined()
  })

  it('maps stop_reason max_tokens to a max-tokens finish', async () => {
    const s = await serve([{ chunks: [fixture('anthropic-max-tokens.sse')] }])
    const out = await collect(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.finish).toEqual({ kind: 'max-tokens' })
    expect(out.blocks).toEqual([{ type: 'text', text: 'Once upon a time, there' }])
    expect(out.usage).toEqual({ inputTokens: 50, outputTokens: 8 })
  })

  it('maps stop_reason refusal to an error finish CONTENT_FILTER, keeping the text streamed before it', async () => {
    // Written here: Anthropic documents a streaming classifier stopping a reply with `stop_reason: "refusal"` after
    // some text; no public recording of one was found (docs/adapters.md, the quirks table).
    const refused = fixture('anthropic-text.sse').replace('"stop_reason":"end_turn"', '"stop_reason":"refusal"')
    expect(refused).toContain('"stop_reason":"refusal"')
    const s = await serve([{ chunks: [refused] }])
    const out = await collect(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.blocks).toEqual([{ type: 'text', text: 'Grüße aus 東京 🗼!' }])
    expect(out.failure).toEqual({ code: 'CONTENT_FILTER', message: 'anthropic refused to answer' })
  })

  it('turns an error event into a failure finish (overloaded_error → SERVER)', async () => {
    const s = await serve([{ chunks: [fixture('anthropic-overloaded.sse')], headers: { 'content-type': 'text/event-stream', 'request-id': 'req_011CSHoEeqs5C35K2UUqR7Fy' } }])
    const out = await collect(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.finish.kind).toBe('error')
    expect(out.failure).toMatchObject({ code: 'SERVER', requestId: 'req_011CSHoEeqs5C35K2UUqR7Fy' })
    expect(out.failure?.message).toContain('Overloaded')
  })

  it('survives cuts inside UTF-8 characters and inside "data:", with CRLF line ends', async () => {
    const text = fixture('anthropic-text.sse').replace(/\n/g, '\r\n')
    const cuts = [byteOffsetInside(text, '東', 1), byteOffsetInside(text, '🗼', 3), byteOffsetInside(text, 'ü', 1), byteOffsetInside(text, 'data:', 2), byteOffsetInside(text, '\r\n\r\n', 1)]
    const out = await collect(anthropicAdapter({ apiKey: KEY, baseURL: 'http://127.0.0.1:9', fetch: fetchWithExactChunks(splitBytes(text, cuts)) }), request())
    expect(out.blocks).toEqual([{ type: 'text', text: 'Grüße aus 東京 🗼!' }])
    expect(out.finish).toEqual({ kind: 'stop' })
    expect(out.usage).toEqual({ inputTokens: 310, outputTokens: 12, cacheReadTokens: 0, cacheWriteTokens: 0 })
  })

  it('reports a disconnect before message_stop as TRANSPORT and a malformed event as MALFORMED_RESPONSE', async () => {
    const text = fixture('anthropic-thinking-tools.sse')
    const cut = byteOffsetInside(text, 'San', 0)
    const s = await serve([
      { chunks: [Buffer.from(text, 'utf8').subarray(0, cut)], after: 'destroy' },
      { chunks: ['event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1}}}\n\n', 'event: content_block_start\ndata: {"type":"content_block_start","index":0,\n\n'] },
    ])
    const adapter = anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL })
    expect((await collect(adapter, request())).failure?.code).toBe('TRANSPORT')
    expect((await collect(adapter, request())).failure?.code).toBe('MALFORMED_RESPONSE')
  })

  it('ends a stalled stream with TIMEOUT and a cancelled one with ABORTED, closing the socket', async () => {
    const start = 'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":1}}}\n\nevent: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n'
    const s = await serve([
      { chunks: [start], after: 'hang' },
      { chunks: [start], after: 'hang' },
    ])
    const stalled = await collect(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL, idleTimeoutMs: 150 }), request())
    expect(stalled.failure?.code).toBe('TIMEOUT')
    const controller = new AbortController()
    const cancelled = await collect(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), request({ signal: controller.signal }), (chunk) => {
      if (chunk.type === 'text-delta') controller.abort()
    })
    expect(cancelled.finish.kind).toBe('aborted')
    await expect(Promise.race([s.requests[1]?.socketClosed.then(() => 'closed'), sleep(2_000).then(() => 'open')])).resolves.toBe('closed')
  })
})

describe('anthropicAdapter: HTTP failures', () => {
  const body = (type: string, message: string): string => JSON.stringify({ type: 'error', error: { type, message }, request_id: 'req_x' })

  it.each([
    [401, body('authentication_error', 'invalid x-api-key'), 'AUTH'],
    [403, body('permission_error', 'Your API key does not have permission to use the specified resource.'), 'AUTH'],
    [402, body('billing_error', 'Your credit balance is too low to access the Anthropic API.'), 'INSUFFICIENT_BALANCE'],
    [400, body('invalid_request_error', 'prompt is too long: 208315 tokens > 200000 maximum'), 'CONTEXT_WINDOW_EXCEEDED'],
    [400, body('invalid_request_error', 'max_tokens: 64001 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5'), 'BAD_REQUEST'],
    [500, body('api_error', 'Internal server error'), 'SERVER'],
    [529, body('overloaded_error', 'Overloaded'), 'SERVER'],
  ])('maps HTTP %i to its failure code', async (status, text, code) => {
    const s = await serve([{ status, headers: { 'content-type': 'application/json', 'request-id': 'req_011x' }, chunks: [text] }])
    const out = await collect(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), request())
    expect(out.failure).toMatchObject({ code, status, requestId: 'req_011x' })
    expect(out.failure?.message).toContain(JSON.parse(text).error.message.slice(0, 15))
    expect(allText(out)).not.toContain(KEY)
  })

  it('maps 429 with retry-after to RATE_LIMIT, and a spend-cap 429 to INSUFFICIENT_BALANCE', async () => {
    const capped = JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: 'You have reached your specified workspace API usage limits.', details: { error_code: 'enforced_spend_limit_reached' } } })
    const s = await serve([
      { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '12' }, chunks: [body('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit')] },
      { status: 429, headers: { 'content-type': 'application/json' }, chunks: [capped] },
    ])
    const adapter = anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL })
    expect((await collect(adapter, request())).failure).toMatchObject({ code: 'RATE_LIMIT', providerRetryAfterMs: 12_000 })
    expect((await collect(adapter, request())).failure?.code).toBe('INSUFFICIENT_BALANCE')
  })

  it('a missing key is an AUTH failure naming ANTHROPIC_API_KEY', async () => {
    const saved = process.env.ANTHROPIC_API_KEY
    delete process.env.ANTHROPIC_API_KEY
    try {
      const out = await collect(anthropicAdapter({ baseURL: 'http://127.0.0.1:9' }), request())
      expect(out.failure?.code).toBe('AUTH')
      expect(out.failure?.message).toContain('ANTHROPIC_API_KEY')
    } finally {
      if (saved !== undefined) process.env.ANTHROPIC_API_KEY = saved
    }
  })
})

describe('anthropicAdapter: request body', () => {
  const history = [
    createUserMessage('Weather in SF?'),
    createAssistantMessage(
      [
        { type: 'reasoning', text: 'Look it up.', signature: 'sig-1' },
        { type: 'reasoning', text: 'unsigned thought' },
        { type: 'text', text: '' },
        { type: 'tool-call', id: 'toolu_1', name: 'get_weather', arguments: '{"city":"SF"}' },
        { type: 'tool-call', id: 'toolu_2', name: 'get_time', arguments: '' },
      ],
      model,
    ),
    createToolResultMessage({ callId: 'toolu_1', content: [{ type: 'text', text: '18°C, fog' }] }),
    createToolResultMessage({ callId: 'toolu_2', content: [{ type: 'text', text: 'clock broken' }], isError: true }),
    createUserMessage('Also: in Celsius please.'),
  ]
  const tools = [{ name: 'get_weather', description: 'Weather now', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }]

  it('maps system, tools, tool_use/tool_result, signed thinking and merges consecutive user turns (api.anthropic.com)', async () => {
    const s = await serve([{ chunks: [fixture('anthropic-text.sse')] }])
    let sentTo = ''
    const forward: typeof fetch = async (input, init) => {
      sentTo = String(input)
      return fetch(`${s.baseURL}/v1/messages`, init)
    }
    await collect(
      anthropicAdapter({ apiKey: KEY, fetch: forward }),
      request({ system: 'Be brief.', messages: history, tools, reasoningEffort: 'high', temperature: 0.2, maxTokens: 20_000, stop: ['\n\nHuman:'] }),
    )
    expect(sentTo).toBe('https://api.anthropic.com/v1/messages')
    expect(s.requests[0]?.json).toEqual({
      model: 'claude-sonnet-4-5',
      max_tokens: 20_000,
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Weather in SF?' }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Look it up.', signature: 'sig-1' },
            { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'SF' } },
            { type: 'tool_use', id: 'toolu_2', name: 'get_time', input: {} },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: '18°C, fog' },
            { type: 'tool_result', tool_use_id: 'toolu_2', content: 'clock broken', is_error: true },
            { type: 'text', text: 'Also: in Celsius please.' },
          ],
        },
      ],
      stream: true,
      system: 'Be brief.',
      tools: [{ name: 'get_weather', description: 'Weather now', input_schema: tools[0]?.parameters }],
      stop_sequences: ['\n\nHuman:'],
      thinking: { type: 'enabled', budget_tokens: 16_384 },
    })
  })

  it("works against DeepSeek's Anthropic endpoint by base URL alone, sending unsigned thinking back", async () => {
    const s = await serve([{ chunks: [fixture('anthropic-text.sse')] }, { chunks: [fixture('anthropic-text.sse')] }])
    const adapter = anthropicAdapter({ apiKey: KEY, baseURL: `${s.baseURL}/anthropic` })
    await collect(adapter, request({ model: 'deepseek-flash', messages: history, reasoningEffort: 'max', maxTokens: 8000 }))
    const received = s.requests[0]
    expect(received?.url).toBe('/anthropic/v1/messages')
    const json = received?.json as { messages: { content: unknown[] }[]; thinking: unknown; output_config: unknown }
    expect(json.messages[1]?.content.slice(0, 2)).toEqual([
      { type: 'thinking', thinking: 'Look it up.', signature: 'sig-1' },
      { type: 'thinking', thinking: 'unsigned thought' },
    ])
    expect(json.thinking).toEqual({ type: 'enabled', budget_tokens: 7_999 })
    expect(json.output_config).toEqual({ effort: 'max' })
    await collect(adapter, request({ reasoningEffort: 'off', temperature: 0.7 }))
    expect(s.requests[1]?.json).toMatchObject({ thinking: { type: 'disabled' }, temperature: 0.7 })
  })

  it('rejects an effort it cannot map before sending anything', async () => {
    const s = await serve([])
    const out = await collect(anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL }), request({ reasoningEffort: 'extreme' }))
    expect(out.failure?.code).toBe('BAD_REQUEST')
    expect(s.requests).toHaveLength(0)
  })

  it('uses the model table default for max_tokens, and 8192 for unknown models', async () => {
    const s = await serve([{ chunks: [fixture('anthropic-text.sse')] }, { chunks: [fixture('anthropic-text.sse')] }])
    const adapter = anthropicAdapter({ apiKey: KEY, baseURL: s.baseURL, models: { 'claude-x': { defaultMaxTokens: 32_000, contextWindow: 200_000 } } })
    expect(adapter.resolveModel?.('claude-x')?.contextWindow).toBe(200_000)
    expect(adapter.resolveModel?.('other')).toBeUndefined()
    const { maxTokens: _drop, ...noCap } = request({ model: 'claude-x' })
    await collect(adapter, noCap)
    await collect(adapter, { ...noCap, model: 'other' })
    expect((s.requests[0]?.json as { max_tokens: number }).max_tokens).toBe(32_000)
    expect((s.requests[1]?.json as { max_tokens: number }).max_tokens).toBe(8_192)
  })
})
