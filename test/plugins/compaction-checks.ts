import { expect } from 'vitest'
import { foldSession, isLoopRequest, verifySessionLog, type Agent, type GenerateOptions, type Harness, type Message, type SessionEvent } from '../../src/index.js'
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
