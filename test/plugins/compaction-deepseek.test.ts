import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  compactionPlugin,
  createHarness,
  DEEPSEEK_MODELS,
  deepseekAdapter,
  defineTool,
  DEFAULT_SUMMARY_INSTRUCTION,
  invariantPlugin,
  type Agent,
  type CompactionOptions,
  type SessionEvent,
} from '../../src/index.js'
import { deepseekContextOverflow, deepseekReply } from '../llm/adapters/deepseek-wire.js'
import { startLoopback, type Loopback, type LoopbackReply, type ReceivedRequest } from '../llm/adapters/loopback.js'
import { expectReconstructable, recordRequests, summarizedCount } from './compaction-fixture.js'
import { afterEach } from 'vitest'

type WireMessage = { role: string; content?: string | null; reasoning_content?: string; tool_calls?: { id: string }[]; tool_call_id?: string }
type WireBody = { messages: WireMessage[]; tools?: unknown[] }

const SYSTEM = 'You are the DeepSeek compaction test agent.'
const KEY = 'sk-compaction-test'

let server: Loopback | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const bodyOf = (r: ReceivedRequest): WireBody => r.json as WireBody
const isSummary = (body: WireBody): boolean => body.messages.at(-1)?.content === DEFAULT_SUMMARY_INSTRUCTION
/** Prompt tokens the way a tokenizer would roughly count this body. */
const promptTokens = (r: ReceivedRequest): number => Math.ceil(r.body.length / 4)

/**
 * A DeepSeek server: each user prompt gets one thinking tool call, each tool result a short answer, each summary
 * request a summary; usage reports the body's size with half of it served from the cache. `overflowAbove` answers
 * a bigger loop request with DeepSeek's real context-length 400.
 */
function deepseekServer(options: { overflowAbove?: number; summary?: string } = {}) {
  let calls = 0
  return (index: number): LoopbackReply => {
    const request = server?.requests[index] as ReceivedRequest
    const body = bodyOf(request)
    const prompt = promptTokens(request)
    const usage = { promptTokens: prompt, cacheHitTokens: Math.floor(prompt / 2), completionTokens: 30 }
    if (isSummary(body)) return deepseekReply({ reasoning: 'Condense.', text: options.summary ?? 'Summary: earlier echo tasks, all done.' }, usage)
    if (options.overflowAbove !== undefined && prompt > options.overflowAbove) return deepseekContextOverflow(prompt, options.overflowAbove)
    const last = body.messages.at(-1) as WireMessage
    if (last.role === 'user') {
      calls++
      return deepseekReply({ reasoning: `R${calls}: echo it`, toolCalls: [{ id: `call_${calls}`, name: 'echo', args: JSON.stringify({ text: 'z'.repeat(500) }) }] }, usage)
    }
    return deepseekReply({ reasoning: 'Done thinking.', text: 'done' }, usage)
  }
}

async function setup(options: CompactionOptions, contextWindow: number, replies: (index: number) => LoopbackReply) {
  server = await startLoopback(replies)
  const models = { 'deepseek-flash': { ...DEEPSEEK_MODELS['deepseek-flash'], contextWindow, defaultMaxTokens: 100 } }
  const echo = defineTool({ name: 'echo', description: 'Echoes its text', parameters: z.object({ text: z.string() }), execute: ({ text }) => `echo: ${text}` })
  const harness = createHarness({
    adapters: [deepseekAdapter({ apiKey: KEY, baseURL: server.baseURL, models })],
    tools: [echo],
    plugins: [invariantPlugin(), compactionPlugin({ keepRecentTurns: 2, ...options })],
    system: SYSTEM,
  })
  let agent: Agent | undefined
  const seen = recordRequests(harness, () => agent)
  agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-flash' })
  const a = agent
  const turn = async (text: string): Promise<void> => {
    a.followup(text)
    await a.whenIdle()
  }
  const of = (type: string): SessionEvent[] => a.session.events.filter((e) => e.type === type)
  return { harness, agent: a, seen, turn, of }
}

describe('compaction through the DeepSeek adapter (loopback server, DeepSeek SSE)', () => {
  it('COMPACTION-ACCEPT (DeepSeek): 40 tool turns compact at least twice; system and tools bytes never change', async () => {
    const f = await setup({}, 3000, deepseekServer())
    for (let i = 1; i <= 40; i++) await f.turn(`task ${i}`)
    const events = f.agent.session.events
    expect(f.of('turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(Array(40).fill('completed'))
    expect(summarizedCount(events)).toBeGreaterThanOrEqual(2)
    expectReconstructable(events, f.seen)

    const wire = (server as Loopback).requests.map(bodyOf)
    const loop = wire.filter((b) => !isSummary(b))
    const summaries = wire.filter(isSummary)
    expect(summaries.length).toBe(f.of('compaction/request').length)
    // The system message and the tools are the same bytes in every request, summary calls included.
    const systemBytes = new Set(wire.map((b) => JSON.stringify(b.messages[0])))
    const toolBytes = new Set(wire.map((b) => JSON.stringify(b.tools)))
    expect([...systemBytes]).toEqual([JSON.stringify({ role: 'system', content: SYSTEM })])
    expect(toolBytes.size).toBe(1)
    for (const body of loop) {
      // DeepSeek refuses a tool-call turn without its reasoning, and a tool message without its call.
      const calls = new Set<string>()
      for (const m of body.messages) {
        if (m.role === 'assistant' && m.tool_calls !== undefined) {
          expect(m.reasoning_content).toMatch(/^R\d+: echo it$/)
          for (const c of m.tool_calls) calls.add(c.id)
        }
        if (m.role === 'tool') expect(calls.has(m.tool_call_id as string)).toBe(true)
      }
      const answered = new Set(body.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id))
      for (const id of calls) expect(answered.has(id)).toBe(true)
    }
    // Usage of the summary calls is logged in DeepSeek's buckets (cache hits apart).
    for (const e of f.of('compaction/summary')) expect((e.data as { usage: { cacheReadTokens: number } }).usage.cacheReadTokens).toBeGreaterThan(0)
    // A later loop request starts with the summary, then the verbatim recent turns.
    const lastLoop = loop.at(-1) as WireBody
    expect(lastLoop.messages[1]?.content).toContain('<compacted-summary>')
    await f.harness.close()
  })

  it('a real DeepSeek context-length 400 compacts and retries the step when the request shrank', async () => {
    const f = await setup({ threshold: 1 }, 1_000_000, deepseekServer({ overflowAbove: 1800 }))
    for (let i = 1; i <= 8; i++) await f.turn(`task ${i}`)
    expect(f.of('turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(Array(8).fill('completed'))
    const overflowed = (server as Loopback).requests.filter((r) => promptTokens(r) > 1800)
    expect(overflowed.length).toBeGreaterThan(0)
    expect(f.of('compaction/start').map((e) => (e.data as { trigger: string }).trigger)).toContain('overflow')
    expectReconstructable(f.agent.session.events, f.seen)
    await f.harness.close()
  })

  it('a context-length 400 whose compaction does not shrink the request fails the turn instead of looping', async () => {
    const f = await setup({ threshold: 1 }, 1_000_000, deepseekServer({ overflowAbove: 1200, summary: 'w'.repeat(40_000) }))
    for (let i = 1; i <= 4; i++) await f.turn(`task ${i}`)
    const reasons = f.of('turn/end').map((e) => (e.data as { reason: { kind: string; error?: { code: string } } }).reason)
    const failed = reasons.filter((r) => r.kind === 'error')
    expect(failed.length).toBeGreaterThan(0)
    expect(failed.map((r) => r.error?.code)).toEqual(failed.map(() => 'CONTEXT_WINDOW_EXCEEDED'))
    // Per failing turn: the failed request, one summary call, nothing else.
    const overflowed = (server as Loopback).requests.filter((r) => !isSummary(bodyOf(r)) && promptTokens(r) > 1200)
    expect(overflowed).toHaveLength(failed.length)
    expect(f.of('compaction/end').map((e) => (e.data as { outcome: string }).outcome)).toEqual(failed.map(() => 'not-smaller'))
    await f.harness.close()
  })
})
