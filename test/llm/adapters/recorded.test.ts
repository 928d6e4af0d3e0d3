import { describe, expect, it } from 'vitest'
import { createHarness, retryPlugin } from '../../../src/index.js'
import { anthropicAdapter } from '../../../src/llm/adapters/anthropic.js'
import { openaiCompatibleAdapter } from '../../../src/llm/adapters/openai-compatible.js'
import { RETRYABLE_CODES } from '../../../src/llm/llm-error.js'
import { createUserMessage } from '../../../src/llm/messages.js'
import type { GenerateOptions } from '../../../src/llm/types.js'
import { collect } from './collect.js'
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
