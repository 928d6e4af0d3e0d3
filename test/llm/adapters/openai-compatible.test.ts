import { describe, expect, it } from 'vitest'
import { openaiCompatibleAdapter } from '../../../src/llm/adapters/openai-compatible.js'
import { createAssistantMessage, createUserMessage } from '../../../src/llm/messages.js'
import type { GenerateOptions } from '../../../src/llm/types.js'
import { allText, collect } from './collect.js'
import { bytesEvery, fixture, servePerTest } from './loopback.js'

const KEY = 'sk-proj-SENTINEL-openai-77e1'
const serve = servePerTest()

function request(provider: string, extra: Partial<GenerateOptions> = {}): GenerateOptions {
  return { provider, model: 'some-model', messages: [createUserMessage('hi')], ...extra }
}

describe('openaiCompatibleAdapter', () => {
  it('streams OpenAI parallel tool calls with cached-token usage as non-overlapping buckets', async () => {
    const s = await serve([{ chunks: bytesEvery(fixture('openai-parallel-tools.sse'), 61), gapMs: 1 }])
    const adapter = openaiCompatibleAdapter({ provider: 'openai', baseURL: `${s.baseURL}/v1`, apiKey: KEY })
    const out = await collect(adapter, request('openai', { maxTokens: 1000, reasoningEffort: 'low' }))
    expect(out.blocks).toEqual([
      { type: 'text', text: 'Checking both files.' },
      { type: 'tool-call', id: 'call_a1B2c3D4e5F6g7H8i9J0', name: 'read_file', arguments: '{"path": "README.md"}' },
      { type: 'tool-call', id: 'call_K1l2M3n4O5p6Q7r8S9t0', name: 'read_file', arguments: '{"path": "package.json"}' },
    ])
    expect(out.finish).toEqual({ kind: 'tool-calls' })
    expect(out.usage).toEqual({ inputTokens: 952, outputTokens: 120, cacheReadTokens: 2048, reasoningTokens: 64 })
    const received = s.requests[0]
    expect(received?.url).toBe('/v1/chat/completions')
    expect(received?.headers.authorization).toBe(`Bearer ${KEY}`)
    // OpenAI's newer models take max_completion_tokens; reasoning_effort is passed as given.
    expect(received?.json).toMatchObject({ max_completion_tokens: 1000, reasoning_effort: 'low', stream: true, stream_options: { include_usage: true } })
    expect((received?.json as Record<string, unknown>).max_tokens).toBeUndefined()
  })

  it('copes with a local server: `reasoning` field, tool call without id or index, no usage, no [DONE]', async () => {
    const s = await serve([{ chunks: [fixture('openai-local-quirks.sse')] }])
    const adapter = openaiCompatibleAdapter({ provider: 'llamacpp', baseURL: s.baseURL, quirks: { streamUsage: false } })
    const out = await collect(adapter, request('llamacpp', { maxTokens: 256 }))
    expect(out.blocks).toEqual([
      { type: 'reasoning', text: 'The user wants ls.' },
      { type: 'tool-call', id: 'call-1', name: 'list', arguments: '{"path":"."}' },
    ])
    expect(out.finish).toEqual({ kind: 'tool-calls' })
    expect(out.usage).toBeUndefined()
    expect(out.chunks.some((c) => c.type === 'usage')).toBe(false)
    const received = s.requests[0]
    expect(received?.headers.authorization).toBeUndefined()
    expect(received?.json).toMatchObject({ max_tokens: 256 })
    expect((received?.json as Record<string, unknown>).stream_options).toBeUndefined()
  })

  it('sends custom headers and, when asked, reasoning back under the chosen field', async () => {
    const s = await serve([{ chunks: [fixture('deepseek-text.sse')] }])
    const adapter = openaiCompatibleAdapter({
      provider: 'vllm',
      baseURL: `${s.baseURL}/v1/`,
      headers: { 'x-title': 'ledgerloop tests' },
      quirks: { sendReasoningAs: 'reasoning', maxTokensField: 'max_completion_tokens' },
    })
    const history = [
      createUserMessage('hi'),
      createAssistantMessage([{ type: 'reasoning', text: 'greet' }, { type: 'text', text: 'Hello' }], { kind: 'model', provider: 'vllm', model: 'm' }),
      createUserMessage('again'),
    ]
    await collect(adapter, request('vllm', { messages: history, maxTokens: 10 }))
    const received = s.requests[0]
    expect(received?.url).toBe('/v1/chat/completions')
    expect(received?.headers['x-title']).toBe('ledgerloop tests')
    expect(received?.json).toMatchObject({
      max_completion_tokens: 10,
      messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'Hello', reasoning: 'greet' }, { role: 'user', content: 'again' }],
    })
  })

  it('leaves reasoning out of history by default', async () => {
    const s = await serve([{ chunks: [fixture('deepseek-text.sse')] }])
    const adapter = openaiCompatibleAdapter({ provider: 'ollama', baseURL: s.baseURL })
    const history = [createAssistantMessage([{ type: 'reasoning', text: 'x' }], { kind: 'model', provider: 'ollama', model: 'm' }), createUserMessage('go on')]
    await collect(adapter, request('ollama', { messages: history }))
    expect((s.requests[0]?.json as { messages: unknown[] }).messages[0]).toEqual({ role: 'assistant', content: '' })
  })

  it('reads OPENAI_API_KEY at request time for provider openai only', async () => {
    const saved = process.env.OPENAI_API_KEY
    process.env.OPENAI_API_KEY = KEY
    try {
      const s = await serve([{ chunks: [fixture('deepseek-text.sse')] }, { chunks: [fixture('deepseek-text.sse')] }])
      await collect(openaiCompatibleAdapter({ provider: 'openai', baseURL: s.baseURL }), request('openai'))
      await collect(openaiCompatibleAdapter({ provider: 'openrouter', baseURL: s.baseURL }), request('openrouter'))
      expect(s.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`)
      expect(s.requests[1]?.headers.authorization).toBeUndefined()
    } finally {
      if (saved === undefined) delete process.env.OPENAI_API_KEY
      else process.env.OPENAI_API_KEY = saved
    }
  })

  it('maps an error object inside a 200 stream (OpenRouter style) to a failure finish', async () => {
    const chunks = [
      'data: {"choices":[{"index":0,"delta":{"content":"Par"},"finish_reason":null}]}\n\n',
      'data: {"error":{"message":"Provider returned error: upstream overloaded","code":502}}\n\n',
    ]
    const s = await serve([{ chunks }])
    const out = await collect(openaiCompatibleAdapter({ provider: 'openrouter', baseURL: s.baseURL, apiKey: KEY }), request('openrouter'))
    expect(out.finish.kind).toBe('error')
    expect(out.failure?.message).toContain('upstream overloaded')
  })

  it.each([
    [429, { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota', code: 'insufficient_quota' } }, 'INSUFFICIENT_BALANCE'],
    [429, { error: { message: 'Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM).', type: 'tokens', code: 'rate_limit_exceeded' } }, 'RATE_LIMIT'],
    [400, { error: { message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens.", type: 'invalid_request_error', code: 'context_length_exceeded' } }, 'CONTEXT_WINDOW_EXCEEDED'],
    [400, { error: { message: 'the request exceeds the available context size, try increasing it', type: 'exceed_context_size_error', code: 400 } }, 'CONTEXT_WINDOW_EXCEEDED'],
    [404, { error: { message: 'The model `gpt-9` does not exist', type: 'invalid_request_error', code: 'model_not_found' } }, 'BAD_REQUEST'],
    [401, { error: { message: `Incorrect API key provided: ${KEY}.`, type: 'invalid_request_error', code: 'invalid_api_key' } }, 'AUTH'],
  ])('maps HTTP %i (%#) to its failure code, never leaking the key', async (status, body, code) => {
    const s = await serve([{ status, headers: { 'content-type': 'application/json', 'x-request-id': 'req_abc123' }, chunks: [JSON.stringify(body)] }])
    const out = await collect(openaiCompatibleAdapter({ provider: 'openai', baseURL: s.baseURL, apiKey: KEY }), request('openai'))
    expect(out.failure).toMatchObject({ code, status, requestId: 'req_abc123' })
    expect(allText(out)).not.toContain(KEY)
  })
})
