import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarness, deepseekAdapter, defineTool, invariantPlugin, JsonlStore, retryPlugin, type SessionEvent } from '../../src/index.js'
import { deepseekReply } from '../llm/adapters/deepseek-wire.js'
import { startLoopback, type Loopback } from '../llm/adapters/loopback.js'

const SENTINEL = 'sk-SENTINEL-9f8e7d6c5b4a'

let server: Loopback | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

describe('DeepSeek through the real loop (loopback server)', () => {
  it('thinking mode: reasoning_content of a tool-calling turn is sent back in every later request, same turn and later turns', async () => {
    server = await startLoopback([
      deepseekReply({ reasoning: 'R1: need the weather', toolCalls: [{ id: 'call_1', name: 'weather', args: '{"city":"Hangzhou"}' }] }),
      deepseekReply({ reasoning: 'R2: summarise', text: 'Sunny in Hangzhou.' }),
      deepseekReply({ reasoning: 'R3', text: 'Bye.' }),
    ])
    const weather = defineTool({ name: 'weather', description: 'weather by city', parameters: z.object({ city: z.string() }), execute: ({ city }) => `${city}: sunny` })
    const harness = createHarness({ adapters: [deepseekAdapter({ apiKey: SENTINEL, baseURL: server.baseURL })], tools: [weather], plugins: [invariantPlugin()] })
    const agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-flash' })
    agent.followup('Weather in Hangzhou?')
    await agent.whenIdle()
    agent.followup('Thanks!')
    await agent.whenIdle()
    const ends = agent.session.events.filter((e) => e.type === 'turn/end').map((e) => e.data)
    expect(ends).toEqual([{ turn: 1, reason: { kind: 'completed' } }, { turn: 2, reason: { kind: 'completed' } }])
    expect(server.requests).toHaveLength(3)
    type Wire = { messages: { role: string; reasoning_content?: string; tool_calls?: unknown[] }[]; thinking?: unknown }
    for (const index of [1, 2]) {
      const body = server.requests[index]?.json as Wire
      const toolTurn = body.messages.find((m) => m.role === 'assistant' && m.tool_calls !== undefined)
      expect(toolTurn?.reasoning_content).toBe('R1: need the weather')
      expect(body.messages.some((m) => m.role === 'tool')).toBe(true)
    }
    // Usage buckets do not overlap: cache hits are not counted as input again.
    const usage = (agent.session.events.find((e) => e.type === 'assistant/message')?.data as { usage: unknown }).usage
    expect(usage).toMatchObject({ inputTokens: 4, cacheReadTokens: 6, outputTokens: 5 })
    await harness.close()
  })

  it('429 then 200 with the retry plugin: retried in the same step, failed attempt uncited, no tool runs twice', async () => {
    server = await startLoopback([
      deepseekReply({ toolCalls: [{ id: 'call_1', name: 'count', args: '{}' }] }),
      { status: 429, headers: { 'content-type': 'application/json', 'retry-after-ms': '15' }, chunks: ['{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}'] },
      deepseekReply({ text: 'done' }),
    ])
    let executions = 0
    const count = defineTool({ name: 'count', description: 'counts', parameters: z.object({}), execute: () => String(++executions) })
    const harness = createHarness({
      adapters: [deepseekAdapter({ apiKey: SENTINEL, baseURL: server.baseURL })],
      tools: [count],
      plugins: [invariantPlugin(), retryPlugin({ baseDelayMs: 1, maxDelayMs: 100, random: () => 0 })],
    })
    const agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-flash' })
    agent.followup('count once')
    await agent.whenIdle()
    const events = agent.session.events
    const of = (t: string): SessionEvent[] => events.filter((e) => e.type === t)
    expect(of('turn/end').map((e) => e.data)).toEqual([{ turn: 1, reason: { kind: 'completed' } }])
    expect(executions).toBe(1)
    expect(of('step/start')).toHaveLength(2)
    expect(of('llm/retry').map((e) => e.data)).toMatchObject([{ turn: 1, step: 2, attempt: 1, code: 'RATE_LIMIT', providerRetryAfterMs: 15, delayMs: 15 }])
    const cited = new Set(of('assistant/message').flatMap((e) => e.sourceEventSeqs ?? []))
    const failedFinish = of('assistant/chunk').filter((e) => (e.data as { chunk: { type: string; reason?: { kind: string } } }).chunk.reason?.kind === 'error')
    expect(failedFinish).toHaveLength(1)
    expect(cited.has(failedFinish[0]?.seq as number)).toBe(false)
    await harness.close()
  })

  it('the API key never appears in any stored byte, even when the provider echoes it in an error', async () => {
    server = await startLoopback([
      deepseekReply({ toolCalls: [{ id: 'call_1', name: 'count', args: '{}' }] }),
      { status: 401, headers: { 'content-type': 'application/json' }, chunks: [`{"error":{"message":"Authentication Fails, Your api key: ${SENTINEL} is invalid"}}`] },
    ])
    const dir = mkdtempSync(join(tmpdir(), 'll-key-'))
    const count = defineTool({ name: 'count', description: 'counts', parameters: z.object({}), execute: () => '1' })
    const harness = createHarness({
      store: new JsonlStore({ dir }),
      tools: [count],
      adapters: [deepseekAdapter({ apiKey: SENTINEL, baseURL: server.baseURL })],
    })
    const agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-flash' })
    agent.followup('hi')
    await agent.whenIdle()
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${SENTINEL}`)
    const log = JSON.stringify(agent.session.events)
    expect(log).toContain('AUTH')
    expect(log).not.toContain(SENTINEL)
    expect(log).not.toContain('9f8e7d6c5b4a')
    await harness.close()
    // Every stored byte: the session logs and the session index beside them.
    const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name))
    expect(files.some((f) => f.endsWith('.jsonl'))).toBe(true)
    for (const file of files) {
      const bytes = readFileSync(file)
      expect(bytes.includes(SENTINEL)).toBe(false)
      expect(bytes.includes('9f8e7d6c5b4a')).toBe(false)
    }
    rmSync(dir, { recursive: true, force: true })
  })
})
