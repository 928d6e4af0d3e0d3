import { describe, expect, it } from 'vitest'
import {
  compactionPlugin,
  HarnessError,
  PRUNED_NOTE_PREFIX,
  verifySessionLog,
  type GenerateOptions,
  type Message,
  type ScriptStep,
  type SessionEvent,
  type TokenUsage,
} from '../../src/index.js'
import { expectReconstructable, isSummaryCall, pairingProblems, setup, summarizedCount, SYSTEM, toolLoopModel, usageOf } from './compaction-fixture.js'

describe('compactionPlugin', () => {
  it('COMPACTION-ACCEPT: 40 tool turns past a small window compact repeatedly; every request is a fold of its log prefix', async () => {
    const f = await setup(toolLoopModel())
    for (let i = 1; i <= 40; i++) await f.turn(`task ${i}`)
    const events = f.agent.session.events
    const reasons = f.of('turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
    expect(reasons).toEqual(Array(40).fill('completed'))
    expect(summarizedCount(events)).toBeGreaterThanOrEqual(2)
    expect(f.errors).toEqual([])
    expectReconstructable(events, f.seen)
    // No loop request ever exceeded the window: compaction kept it below.
    for (const s of f.seen.filter((x) => x.loop)) expect(usageOf(s.request).inputTokens).toBeLessThan(3000)
    // Each replacement cites its bracket, its request and summary events, and every node it shadows.
    for (const e of events.filter((x) => x.type === 'user/message' && typeof x.surfaceOp === 'object')) {
      const op = e.surfaceOp as { start: number; end: number }
      const cited = new Set(e.sourceEventSeqs)
      expect(cited.has(op.start) && cited.has(op.end)).toBe(true)
      const types = (e.sourceEventSeqs ?? []).map((seq) => events[seq]?.type)
      expect(types).toEqual(expect.arrayContaining(['compaction/start', 'compaction/request', 'compaction/summary']))
      const starts = events.filter((x) => x.type === 'compaction/start' && x.seq < e.seq)
      const ends = events.filter((x) => x.type === 'compaction/end' && x.seq > e.seq)
      expect(starts.length).toBeGreaterThan(0)
      expect(ends[0]?.seq).toBe(e.seq + 1)
    }
    // The summary call replays the loop's logged system prompt and tools and ends with the instruction.
    const summaries = f.seen.filter((s) => !s.loop)
    expect(summaries.length).toBe(f.of('compaction/request').length)
    for (const s of summaries) {
      expect(s.request.system).toBe(SYSTEM)
      expect(s.request.tools?.map((t) => t.name)).toEqual(['echo'])
      expect(pairingProblems(s.request.messages.slice(0, -1))).toEqual([])
    }
    // Usage of every summary call is logged beside the summary.
    for (const e of f.of('compaction/summary')) expect((e.data as unknown as { usage?: TokenUsage }).usage?.inputTokens).toBeGreaterThan(0)
    // The recent turns stay verbatim: the last request ends with the newest prompt, call and result as logged.
    const last = f.seen.filter((s) => s.loop).at(-1)?.request.messages ?? []
    expect(last.slice(-3).map((m) => m.role)).toEqual(['user', 'assistant', 'user'])
    await f.harness.close()
  })

  it('the cheap first stage prunes big old tool results and skips the summary call when that is enough', async () => {
    const f = await setup(toolLoopModel({ resultChars: 3000 }), { pruneToolResultsOver: 1000, threshold: 0.9 }, 4000)
    for (let i = 1; i <= 6; i++) await f.turn(`task ${i}`)
    const events = f.agent.session.events
    expect(f.of('compaction/prune').length).toBeGreaterThan(0)
    // The first compaction is settled by pruning alone: no summary call between its start and end.
    const firstStart = f.of('compaction/start')[0] as SessionEvent
    const firstEnd = f.of('compaction/end')[0] as SessionEvent
    expect(firstEnd.data).toMatchObject({ outcome: 'pruned' })
    expect(events.slice(firstStart.seq, firstEnd.seq).map((e) => e.type)).not.toContain('compaction/request')
    expect((firstEnd.data as { tokensAfter: number }).tokensAfter).toBeLessThan((firstEnd.data as { tokensBefore: number }).tokensBefore)
    // A pruned result is the same node rewritten: same message id and call, only the body is a note.
    const rewrites = f.of('tool/result').filter((e) => typeof e.surfaceOp === 'object')
    expect(rewrites.length).toBeGreaterThan(0)
    for (const r of rewrites) {
      const original = events[(r.surfaceOp as { start: number }).start] as SessionEvent
      const a = (original.data as unknown as { message: Message }).message
      const b = (r.data as unknown as { message: Message }).message
      expect(b.id).toBe(a.id)
      expect(JSON.stringify(b.content)).toContain(PRUNED_NOTE_PREFIX)
    }
    expectReconstructable(events, f.seen)
    await f.harness.close()
  })

  it('CONTEXT_WINDOW_EXCEEDED: compacts and retries the same step when the request shrank', async () => {
    // No pressure trigger (threshold 1 of a huge window): only the provider's overflow error starts a compaction.
    const f = await setup(toolLoopModel({ overflowAbove: 1500 }), { threshold: 1 }, 1_000_000)
    for (let i = 1; i <= 8; i++) await f.turn(`task ${i}`)
    const reasons = f.of('turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
    expect(reasons).toEqual(Array(8).fill('completed'))
    const starts = f.of('compaction/start').map((e) => e.data as { trigger: string; turn: number })
    expect(starts.length).toBeGreaterThan(0)
    expect(starts.every((s) => s.trigger === 'overflow')).toBe(true)
    // The failed attempt and the retry share one step; the retry is smaller.
    const overflowStep = f.of('compaction/start')[0] as SessionEvent
    const loop = f.seen.filter((s) => s.loop)
    const failed = loop.filter((s) => s.logLength < overflowStep.seq).at(-1)
    const retry = loop.find((s) => s.logLength > overflowStep.seq)
    expect(failed).toBeDefined()
    expect(retry).toBeDefined()
    expect(usageOf((retry as { request: GenerateOptions }).request).inputTokens).toBeLessThan(usageOf((failed as { request: GenerateOptions }).request).inputTokens)
    expectReconstructable(f.agent.session.events, f.seen)
    await f.harness.close()
  })

  it('CONTEXT_WINDOW_EXCEEDED with a compaction that does not shrink the request fails the turn, no loop', async () => {
    // The summary comes back longer than what it would replace: nothing is replaced, the failure stands.
    const f = await setup(toolLoopModel({ overflowAbove: 900, summary: () => ({ text: 'y'.repeat(20_000) }) }), { threshold: 1 }, 1_000_000)
    for (let i = 1; i <= 6; i++) await f.turn(`task ${i}`)
    const ends = f.of('turn/end').map((e) => (e.data as { reason: { kind: string; error?: { code: string } } }).reason)
    const failed = ends.filter((r) => r.kind === 'error')
    expect(failed.length).toBeGreaterThan(0)
    expect(failed.every((r) => r.error?.code === 'CONTEXT_WINDOW_EXCEEDED')).toBe(true)
    expect(f.of('compaction/end').map((e) => (e.data as { outcome: string }).outcome)).toContain('not-smaller')
    // At most one compaction per failing step, and one retry-free failure each: no loop.
    const firstFailing = f.of('turn/end').find((e) => (e.data as { reason: { kind: string } }).reason.kind === 'error') as SessionEvent
    const turnNo = (firstFailing.data as { turn: number }).turn
    const bracket = f.of('compaction/start').filter((e) => (e.data as { turn: number }).turn === turnNo)
    expect(bracket).toHaveLength(1)
    // No request was sent again after the compaction that did not help: the failure stood.
    const retried = f.seen.filter((s) => s.loop && s.logLength > (bracket[0] as SessionEvent).seq && s.logLength < firstFailing.seq)
    expect(retried).toEqual([])
    expect(f.of('user/message').filter((e) => typeof e.surfaceOp === 'object')).toEqual([])
    expect(verifySessionLog(f.agent.session.events).ok).toBe(true)
    await f.harness.close()
  })

  it('CONTEXT_WINDOW_EXCEEDED with nothing to compact fails the turn at once', async () => {
    const f = await setup(() => ({ error: { code: 'CONTEXT_WINDOW_EXCEEDED', message: 'too long', status: 400 } }), {}, 1_000_000)
    await f.turn('hello')
    expect(f.of('turn/end').map((e) => e.data)).toEqual([{ turn: 1, reason: { kind: 'error', error: { code: 'CONTEXT_WINDOW_EXCEEDED', message: 'too long', status: 400 } } }])
    expect(f.model.requests).toHaveLength(1)
    expect(f.of('compaction/start')).toEqual([])
    await f.harness.close()
  })

  it('a failed summary call leaves the history untouched, is logged and reported, and the turn goes on', async () => {
    const reported: { code: string }[] = []
    const f = await setup(toolLoopModel({ summary: () => ({ error: { code: 'SERVER', message: 'summary backend down', status: 503 } }) }), {
      onError: (error) => reported.push(error),
    })
    for (let i = 1; i <= 12; i++) await f.turn(`task ${i}`)
    const events = f.agent.session.events
    const reasons = f.of('turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
    expect(reasons).toEqual(Array(12).fill('completed'))
    const ends = f.of('compaction/end').map((e) => e.data as { outcome: string; error?: { code: string }; tokensBefore: number; tokensAfter: number })
    expect(ends.length).toBeGreaterThan(0)
    for (const end of ends) {
      expect(end).toMatchObject({ outcome: 'failed', error: { code: 'SERVER' } })
      expect(end.tokensAfter).toBe(end.tokensBefore)
    }
    expect(reported.map((r) => r.code)).toEqual(ends.map(() => 'SERVER'))
    expect(events.some((e) => typeof e.surfaceOp === 'object')).toBe(false)
    expect(f.of('compaction/summary')).toEqual([])
    expectReconstructable(events, f.seen)
    await f.harness.close()
  })

  it('never separates a tool call from its result, with parallel calls and keepRecentTurns 1', async () => {
    const script = (request: GenerateOptions): ScriptStep => {
      if (isSummaryCall(request)) return { text: 'Summary.' }
      const last = request.messages[request.messages.length - 1] as Message
      if (last.source.kind !== 'user') return { text: 'done', usage: usageOf(request) }
      const calls = [1, 2, 3].map((n) => ({ name: 'echo', arguments: { text: `${n}`.repeat(200) } }))
      return { toolCalls: calls, usage: usageOf(request) }
    }
    const f = await setup(script, { keepRecentTurns: 1 }, 2000)
    for (let i = 1; i <= 15; i++) await f.turn(`task ${i}`)
    expect(summarizedCount(f.agent.session.events)).toBeGreaterThanOrEqual(2)
    expectReconstructable(f.agent.session.events, f.seen)
    await f.harness.close()
  })

  it('compact by hand: summarises an idle agent, refuses a busy one, and a custom summarize replaces the model call', async () => {
    const summarized: number[] = []
    const f = await setup(toolLoopModel(), { summarize: async (messages) => (summarized.push(messages.length), 'Earlier: five echo tasks.') }, 1_000_000)
    for (let i = 1; i <= 5; i++) await f.turn(`task ${i}`)
    const before = f.agent.session.deriveMessages().length
    const outcome = await f.compaction.compact(f.agent, { keepRecentTurns: 1 })
    expect(outcome).toMatchObject({ outcome: 'summarized', turn: null, shrank: true })
    expect(summarized).toHaveLength(1)
    const after = f.agent.session.deriveMessages()
    expect(after.length).toBeLessThan(before)
    expect(after[0]?.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Earlier: five echo tasks.') })
    expect(f.of('compaction/request')).toEqual([]) // no model call was made
    expect(f.of('compaction/summary').map((e) => (e.data as { by: string }).by)).toEqual(['custom'])
    // The next turn's request starts from the summary.
    await f.turn('task 6')
    const next = f.seen.filter((s) => s.loop).at(-2)?.request as GenerateOptions
    expect(next.messages[0]?.id).toBe(after[0]?.id)
    // Busy while a turn runs.
    f.agent.followup('task 7')
    const busy = await f.compaction.compact(f.agent).catch((e: unknown) => e)
    expect(busy).toBeInstanceOf(HarnessError)
    expect((busy as HarnessError).code).toBe('AGENT_BUSY')
    await f.agent.whenIdle()
    expectReconstructable(f.agent.session.events, f.seen)
    await f.harness.close()
  })

  it('input sent during a compaction by hand waits for it: the replace never lands inside a step', async () => {
    let release: (text: string) => void = () => undefined
    const f = await setup(toolLoopModel(), { summarize: () => new Promise<string>((resolve) => (release = resolve)) }, 1_000_000)
    for (let i = 1; i <= 4; i++) await f.turn(`task ${i}`)
    const compacting = f.compaction.compact(f.agent, { keepRecentTurns: 1 })
    f.agent.followup('task 5')
    await new Promise((resolve) => setImmediate(resolve))
    release('Earlier: four echo tasks.')
    expect(await compacting).toMatchObject({ outcome: 'summarized' })
    await f.agent.whenIdle()
    const events = f.agent.session.events
    const replace = events.find((e) => e.type === 'user/message' && typeof e.surfaceOp === 'object') as SessionEvent
    const turn5 = events.find((e) => e.type === 'turn/start' && (e.data as { turn: number }).turn === 5) as SessionEvent
    const step1 = events.find((e) => e.type === 'step/start' && e.seq > turn5.seq) as SessionEvent
    expect(replace.seq).toBeLessThan(step1.seq)
    expect(f.of('turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(Array(5).fill('completed'))
    expectReconstructable(events, f.seen)
    await f.harness.close()
  })

  it('rejects bad options with INVALID_CONFIG', () => {
    for (const bad of [{ threshold: 0 }, { threshold: 1.5 }, { keepRecentTurns: 0 }, { summaryMaxTokens: -1 }, { pruneToolResultsOver: 1.5 }]) {
      expect(() => compactionPlugin(bad)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
    }
  })
})
