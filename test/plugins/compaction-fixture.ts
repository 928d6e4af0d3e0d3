import { expect } from 'vitest'
import {
  COMPACTION_PLUGIN,
  compactionPlugin,
  createHarness,
  foldSession,
  invariantPlugin,
  isLoopRequest,
  scriptedAdapter,
  verifySessionLog,
  type Agent,
  type CompactionOptions,
  type GenerateOptions,
  type Harness,
  type Message,
  type ScriptStep,
  type SessionEvent,
  type TokenUsage,
  type ToolDefinition,
} from '../../src/index.js'
import { echoTool } from '../support/loop-fixture.js'
import { reconstructionProblems } from '../../src/views/request-reconstruction.js'
import { buildSessionTree } from '../../src/views/session-tree.js'

/** One request as an `llm/stream` listener saw it, with the log length at dispatch. */
export interface SeenRequest {
  readonly request: GenerateOptions
  readonly loop: boolean
  readonly logLength: number
}

/** Records every request of `agentOf()`'s session that goes through the registry (loop and summary calls). */
export function recordRequests(harness: Harness, agentOf: () => Agent | undefined): SeenRequest[] {
  const seen: SeenRequest[] = []
  harness.hooks.on('llm/stream', async (request, next) => {
    const agent = agentOf()
    seen.push({ request, loop: isLoopRequest(request), logLength: agent?.session.length ?? -1 })
    return next()
  })
  return seen
}

/** Problems with tool-call/result pairing in one request's history (what every provider refuses). */
export function pairingProblems(messages: readonly Message[]): string[] {
  const problems: string[] = []
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as Message
    for (const block of m.content) {
      if (block.type !== 'tool-call') continue
      const answered = messages.slice(i + 1).some((n) => n.content.some((b) => b.type === 'tool-result' && b.toolCallId === block.id))
      if (!answered) problems.push(`call ${block.id} has no result`)
    }
    for (const block of m.content) {
      if (block.type !== 'tool-result') continue
      const called = messages.slice(0, i).some((n) => n.content.some((b) => b.type === 'tool-call' && b.id === block.toolCallId))
      if (!called) problems.push(`result ${block.toolCallId} has no call before it`)
    }
  }
  return problems
}

/** Number of completed compactions (a summary replaced history) in a log. */
export function summarizedCount(events: readonly SessionEvent[]): number {
  return events.filter((e) => e.type === 'compaction/end' && (e.data as { outcome: string }).outcome === 'summarized').length
}

/**
 * The acceptance checks every compacting session must pass: each loop request equals a fold of the log prefix it
 * was built from (messages, system, tools), keeps every tool call with its result, and carries the same system
 * prompt and tools as the first; the log verifies; the CLI's reconstruction and inspect tree see exactly the loop
 * requests (summary calls are not mistaken for them).
 */
export function expectReconstructable(events: readonly SessionEvent[], seen: readonly SeenRequest[]): void {
  const loop = seen.filter((s) => s.loop)
  expect(loop.length).toBeGreaterThan(0)
  const first = loop[0]?.request as GenerateOptions
  for (const { request, logLength } of loop) {
    const { messages, header } = foldSession(events.slice(0, logLength))
    expect(JSON.stringify(request.messages)).toBe(JSON.stringify(messages))
    expect(request.system).toBe(header?.system)
    expect(JSON.stringify(request.tools)).toBe(JSON.stringify(header?.tools))
    expect(pairingProblems(request.messages)).toEqual([])
    // Byte-identical prefix material before and after every compaction (the prompt cache keeps it).
    expect(request.system).toBe(first.system)
    expect(JSON.stringify(request.tools)).toBe(JSON.stringify(first.tools))
  }
  expect(verifySessionLog(events)).toEqual({ ok: true, problems: [] })
  expect(reconstructionProblems(events)).toEqual([])
  const tree = buildSessionTree({ version: 1, id: 's', createdAt: 0 }, events)
  const treeRequests = tree.turns.flatMap((t) => t.steps.flatMap((s) => s.requests))
  expect(treeRequests).toHaveLength(loop.length)
}

/** The system prompt of the scripted fixtures. */
export const SYSTEM = 'You are the compaction test agent.'

/** True for the built-in summary call (its last message is the compaction instruction). */
export function isSummaryCall(request: GenerateOptions): boolean {
  const last = request.messages[request.messages.length - 1]
  return last?.source.kind === 'plugin' && last.source.plugin === COMPACTION_PLUGIN
}

/** Usage as a provider would report it: roughly the request's size in tokens. */
export function usageOf(request: GenerateOptions): TokenUsage {
  const chars = JSON.stringify(request.messages).length + (request.system?.length ?? 0) + JSON.stringify(request.tools ?? []).length
  return { inputTokens: Math.ceil(chars / 4), outputTokens: 20 }
}

/** A model that answers each user prompt with one echo call, then "done"; summary calls get a short summary. */
export function toolLoopModel(options: { resultChars?: number; summary?: (request: GenerateOptions) => ScriptStep; overflowAbove?: number } = {}) {
  return (request: GenerateOptions): ScriptStep => {
    if (isSummaryCall(request)) return options.summary?.(request) ?? { text: `Summary: ${request.messages.length - 1} earlier messages, all echo calls.`, usage: usageOf(request) }
    if (options.overflowAbove !== undefined && usageOf(request).inputTokens > options.overflowAbove) {
      return { error: { code: 'CONTEXT_WINDOW_EXCEEDED', message: "This model's maximum context length is 3000 tokens", status: 400 } }
    }
    const last = request.messages[request.messages.length - 1] as Message
    if (last.source.kind === 'user') return { toolCalls: [{ name: 'echo', arguments: { text: 'x'.repeat(options.resultChars ?? 600) } }], usage: usageOf(request) }
    return { text: 'done', usage: usageOf(request) }
  }
}

export async function setup(script: (request: GenerateOptions, index: number) => ScriptStep, options: CompactionOptions = {}, contextWindow = 3000, tools: ToolDefinition<never>[] = [echoTool()]) {
  const model = scriptedAdapter({ script, models: { m1: { contextWindow, defaultMaxTokens: 100 } } })
  const compaction = compactionPlugin({ keepRecentTurns: 2, ...options })
  const harness = createHarness({ adapters: [model], tools, plugins: [invariantPlugin(), compaction], system: SYSTEM })
  const errors: unknown[] = []
  harness.hooks.on('agent/error', ({ error }) => {
    errors.push(error)
  })
  let agent: Agent | undefined
  const seen = recordRequests(harness, () => agent)
  agent = await harness.createAgent({ provider: 'scripted', model: 'm1' })
  const a = agent
  const of = (type: string): SessionEvent[] => a.session.events.filter((e) => e.type === type)
  const turn = async (text: string): Promise<void> => {
    a.followup(text)
    await a.whenIdle()
  }
  return { harness, agent: a, model, compaction, seen, of, turn, errors }
}

