import { afterEach, describe, expect, it } from 'vitest'
import { deepseekAdapter, DEEPSEEK_MODELS } from '../../../src/llm/adapters/deepseek.js'
import { createAssistantMessage, createToolResultMessage, createUserMessage } from '../../../src/llm/messages.js'
import { LlmRegistry } from '../../../src/llm/registry.js'
import type { GenerateOptions } from '../../../src/llm/types.js'
import { allText, collect } from './collect.js'
import { byteOffsetInside, bytesEvery, fetchWithExactChunks, fixture, sleep, splitBytes, startLoopback, type Loopback, type LoopbackReply } from './loopback.js'

const KEY = 'sk-test-SENTINEL-4f9a2c7e1b'
let server: Loopback | undefined

afterEach(async () => {
  await server?.close()
  server = undefined
})

async function serve(replies: readonly LoopbackReply[]): Promise<Loopback> {
  server = await startLoopback(replies)
  return server
}

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
    const s = await serve([{ chunks, gapMs: 60 }])
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: s.baseURL, idleTimeoutMs: 100 }), request())
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
    server = undefined
    const out = await collect(deepseekAdapter({ apiKey: KEY, baseURL: url }), request())
    expect(out.failure?.code).toBe('TRANSPORT')
    expect(out.failure?.message).toContain(url)
  })
})
