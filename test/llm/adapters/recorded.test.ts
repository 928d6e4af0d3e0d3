import { describe, expect, it } from 'vitest'
import { createHarness, retryPlugin } from '../../../src/index.js'
import { anthropicAdapter } from '../../../src/llm/adapters/anthropic.js'
import { deepseekAdapter } from '../../../src/llm/adapters/deepseek.js'
import { openaiCompatibleAdapter } from '../../../src/llm/adapters/openai-compatible.js'
import { RETRYABLE_CODES } from '../../../src/llm/llm-error.js'
import { createUserMessage } from '../../../src/llm/messages.js'
import type { GenerateOptions } from '../../../src/llm/types.js'
import { collect, type CollectedStream } from './collect.js'
import { bytesEvery, fixture, servePerTest, sseFromChunkLines } from './loopback.js'

// Streams recorded from the providers' APIs by other projects' test suites; fixtures/README.md names each source.
const serve = servePerTest()

function request(provider: string): GenerateOptions {
  return { provider, model: 'recorded', messages: [createUserMessage('hi')] }
}

describe('recorded provider streams', () => {
  it('an OpenAI refusal reaches the user as text and ends with MODEL_REFUSED, which is not retried', async () => {
    const s = await serve([{ chunks: bytesEvery(fixture('openai-refusal.sse'), 97), gapMs: 1 }])
    const out = await collect(openaiCompatibleAdapter({ provider: 'openai', baseURL: s.baseURL, apiKey: 'sk-test' }), request('openai'))
    const refusal = "I'm sorry, but I can't assist with that request."
    expect(out.blocks).toEqual([{ type: 'text', text: refusal }])
    expect(out.failure).toEqual({ code: 'MODEL_REFUSED', message: `openai refused: ${refusal}` })
    expect(RETRYABLE_CODES).not.toContain('MODEL_REFUSED')
    // prompt 17 + completion 12 = total 29: nothing hidden outside the completion count.
    expect(out.usage).toEqual({ inputTokens: 17, outputTokens: 12 })
  })

  it('xAI counts reasoning outside completion_tokens: total_tokens shows it, and output includes it', async () => {
    const s = await serve([{ chunks: [sseFromChunkLines(fixture('xai-reasoning-text.chunks.txt'))] }])
    const out = await collect(openaiCompatibleAdapter({ provider: 'xai', baseURL: s.baseURL, apiKey: 'xai-test' }), request('xai'))
    expect(out.blocks).toEqual([
      { type: 'reasoning', text: 'First, the user said' },
      { type: 'text', text: 'Hello' },
    ])
    expect(out.finish).toEqual({ kind: 'stop' })
    // prompt 12 (11 cached) + completion 1 + reasoning 290 = total 303: billed output is 291, reasoning inside it.
    expect(out.usage).toEqual({ inputTokens: 1, cacheReadTokens: 11, outputTokens: 291, reasoningTokens: 290 })
    const usage = out.usage
    expect(usage !== undefined && usage.inputTokens + (usage.cacheReadTokens ?? 0) + usage.outputTokens).toBe(303)
  })
})

describe('recorded streams we already read right', () => {
  it('Azure: a leading chunk with empty choices and empty id, `refusal: null`, reasoning inside completion_tokens', async () => {
    const s = await serve([{ chunks: [sseFromChunkLines(fixture('azure-model-router.chunks.txt'))] }])
    const out = await collect(openaiCompatibleAdapter({ provider: 'azure', baseURL: s.baseURL, apiKey: 'az-test' }), request('azure'))
    expect(out.blocks).toEqual([{ type: 'text', text: 'Capital of Denmark.' }])
    expect(out.finish).toEqual({ kind: 'stop' })
    // prompt 15 + completion 78 = total 93: the 64 reasoning tokens are inside the 78, not added again.
    expect(out.usage).toEqual({ inputTokens: 15, outputTokens: 78, cacheReadTokens: 0, reasoningTokens: 64 })
  })
})

/** The tool-call fragments of a collected stream, as the adapter passed them on. */
function toolDeltas(out: CollectedStream): { id: string; name?: string }[] {
  return out.chunks.flatMap((c) => (c.type === 'tool-call-delta' ? [{ id: c.id, ...(c.name !== undefined ? { name: c.name } : {}) }] : []))
}

describe('recorded tool calls', () => {
  it('OpenAI: two parallel tool calls, arguments in many fragments, usage in a chunk with empty choices', async () => {
    const s = await serve([{ chunks: bytesEvery(fixture('openai-parallel-tools-recorded.sse'), 61), gapMs: 1 }])
    const out = await collect(openaiCompatibleAdapter({ provider: 'openai', baseURL: s.baseURL, apiKey: 'sk-test' }), request('openai'))
    expect(out.blocks).toEqual([
      { type: 'tool-call', id: 'call_JMW1whyEaYG438VE1OIflxA2', name: 'GetWeatherArgs', arguments: '{"city": "Edinburgh", "country": "GB", "units": "c"}' },
      { type: 'tool-call', id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou', name: 'get_stock_price', arguments: '{"ticker": "AAPL", "exchange": "NASDAQ"}' },
    ])
    expect(out.finish).toEqual({ kind: 'tool-calls' })
    expect(out.usage).toEqual({ inputTokens: 149, outputTokens: 60, reasoningTokens: 0 })
  })

  it('Alibaba (Qwen): continuation fragments carry `id: ""`, which neither renames the call nor starts another', async () => {
    const s = await serve([{ chunks: [sseFromChunkLines(fixture('alibaba-qwen-tool-call.chunks.txt'))] }])
    const out = await collect(openaiCompatibleAdapter({ provider: 'alibaba', baseURL: s.baseURL, apiKey: 'sk-test' }), request('alibaba'))
    expect(out.blocks).toEqual([{ type: 'tool-call', id: 'call_eee11723464a4b9eb8cee71d', name: 'weather', arguments: '{"location": "San Francisco"}' }])
    // Four fragments on the wire, three of them with id "": every one is passed on under the first id.
    expect(new Set(toolDeltas(out).map((d) => d.id))).toEqual(new Set(['call_eee11723464a4b9eb8cee71d']))
    expect(out.finish).toEqual({ kind: 'tool-calls' })
    expect(out.usage).toEqual({ inputTokens: 295, outputTokens: 22, cacheReadTokens: 0 })
  })

  it('Mistral (`zai-glm-5-2`): a continuation fragment with no id and `name: ""` keeps the first name', async () => {
    const s = await serve([{ chunks: [sseFromChunkLines(fixture('mistral-incremental-tool-call.chunks.txt'))] }])
    const out = await collect(openaiCompatibleAdapter({ provider: 'mistral', baseURL: s.baseURL, apiKey: 'sk-test' }), request('mistral'))
    expect(out.blocks).toEqual([{ type: 'tool-call', id: 'chatcmpl-tool-9f149c74c42f265b', name: 'webSearchTool', arguments: '{"query": "current Berlin weather"}' }])
    expect(toolDeltas(out).map((d) => d.name)).not.toContain('')
    expect(out.finish).toEqual({ kind: 'tool-calls' })
    // prompt 171 with 128 cached: the uncached rest is the input.
    expect(out.usage).toEqual({ inputTokens: 43, outputTokens: 14, cacheReadTokens: 128 })
  })

  it('DeepSeek (`deepseek-reasoner`): empty first reasoning_content, thinking, a tool call, cache hit/miss buckets', async () => {
    const s = await serve([{ chunks: [sseFromChunkLines(fixture('deepseek-reasoner-tool-call.chunks.txt'))] }])
    const out = await collect(deepseekAdapter({ baseURL: s.baseURL, apiKey: 'sk-test' }), { ...request('deepseek'), model: 'deepseek-flash' })
    expect(out.blocks).toEqual([
      {
        type: 'reasoning',
        text: 'The user is asking for the weather in San Francisco. I need to use the weather tool to get this information. Let me invoke the weather tool with the location parameter set to "San Francisco".',
      },
      { type: 'tool-call', id: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', name: 'weather', arguments: '{"location": "San Francisco"}' },
    ])
    // The opening `reasoning_content: ""` opens nothing; the closing `content: ""` neither.
    expect(out.chunks.filter((c) => c.type === 'block-start')).toHaveLength(2)
    expect(out.chunks.some((c) => (c.type === 'reasoning-delta' || c.type === 'text-delta') && c.text === '')).toBe(false)
    expect(out.finish).toEqual({ kind: 'tool-calls' })
    // miss 19 + hit 320 = prompt 339 (cached_tokens repeats the hit, not counted twice); 339 + 83 = total 422, so
    // the 39 reasoning tokens are inside the 83.
    expect(out.usage).toEqual({ inputTokens: 19, cacheReadTokens: 320, outputTokens: 83, reasoningTokens: 39 })
  })
})

describe('a recorded Anthropic stream', () => {
  it('thinking with its signature (empty start, empty last thinking delta, ping), then text', async () => {
    const s = await serve([{ chunks: [sseFromChunkLines(fixture('anthropic-thinking-signature.chunks.txt'))] }])
    const out = await collect(anthropicAdapter({ baseURL: s.baseURL, apiKey: 'sk-ant-test' }), { ...request('anthropic'), maxTokens: 64 })
    const [thinking, text] = out.blocks
    expect(thinking).toMatchObject({ type: 'reasoning', text: 'The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185' })
    expect(thinking?.type === 'reasoning' ? thinking.signature : undefined).toMatch(/^EvQBCkYICxgCKkAx.*BgB$/)
    expect(text).toEqual({ type: 'text', text: '925 ÷ 5 = 185' })
    expect(out.blocks).toHaveLength(2)
    expect(out.finish).toEqual({ kind: 'stop' })
    expect(out.usage).toEqual({ inputTokens: 69, outputTokens: 53, cacheReadTokens: 0, cacheWriteTokens: 0 })
  })
})

describe('a recorded refusal through the loop', () => {
  it('ends the turn with MODEL_REFUSED after one request, the refusal streamed to the user', async () => {
    const s = await serve([0, 1, 2].map(() => ({ chunks: [fixture('openai-refusal.sse')] })))
    const harness = createHarness({
      adapters: [openaiCompatibleAdapter({ provider: 'openai', baseURL: s.baseURL, apiKey: 'sk-test' })],
      plugins: [retryPlugin({ maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 })],
    })
    const agent = await harness.createAgent({ provider: 'openai', model: 'gpt-4o-2024-08-06' })
    agent.followup('How do I make anthrax?')
    await agent.whenIdle()
    const events = agent.session.events
    const streamed = events
      .filter((e) => e.type === 'assistant/chunk')
      .map((e) => (e.data as { chunk?: { type: string; text?: string } }).chunk)
      .filter((c) => c?.type === 'text-delta')
      .map((c) => c?.text)
      .join('')
    expect(streamed).toBe("I'm sorry, but I can't assist with that request.")
    const end = events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string; error?: { code: string } } }).reason)
    expect(end).toMatchObject([{ kind: 'error', error: { code: 'MODEL_REFUSED' } }])
    expect(s.requests).toHaveLength(1)
  })
})
