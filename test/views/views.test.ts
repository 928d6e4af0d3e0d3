import { describe, expect, it } from 'vitest'
import {
  buildTimeline,
  checkSession,
  createHarness,
  diffRequests,
  rebuildRequest,
  requestCount,
  requestWithDiff,
  scriptedAdapter,
  sessionUsage,
  type ScriptStep,
  type SessionEvent,
} from '../../src/index.js'
import { echoTool } from '../support/loop-fixture.js'

const MODELS = { m: { contextWindow: 10_000, defaultMaxTokens: 100 } }

// Records a session: each prompt is one turn; `between` runs before each turn after the first.
async function record(script: ScriptStep[], prompts: string[], between?: (harness: ReturnType<typeof createHarness>, turn: number) => void) {
  const model = scriptedAdapter({ script, models: MODELS })
  const harness = createHarness({ adapters: [model], tools: [echoTool()], system: 'Be brief.' })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  for (const [i, prompt] of prompts.entries()) {
    if (i > 0) between?.(harness, i + 1)
    agent.followup(prompt)
    await agent.whenIdle()
  }
  const events: SessionEvent[] = [...agent.session.events]
  const header = agent.session.header
  await harness.close()
  return { events, header, sent: model.requests }
}

describe('views: requests rebuilt from the log', () => {
  it('rebuilds every request exactly as the adapter received it (system, tools, messages, config)', async () => {
    const { events, sent } = await record(
      [{ toolCalls: [{ name: 'echo', arguments: { text: 'a' } }], usage: { inputTokens: 5, outputTokens: 1 } }, { text: 'done', usage: { inputTokens: 9, outputTokens: 2, cacheReadTokens: 4 } }, { text: 'again' }],
      ['first', 'second'],
    )
    expect(requestCount(events)).toBe(3)
    expect(sent).toHaveLength(3)
    for (let n = 1; n <= 3; n++) {
      const rebuilt = rebuildRequest(events, n)
      const actual = sent[n - 1]
      expect(rebuilt?.messages).toEqual(actual?.messages)
      expect(rebuilt?.system).toBe(actual?.system)
      expect(rebuilt?.tools).toEqual(actual?.tools)
      expect(rebuilt?.config).toMatchObject({ provider: actual?.provider, model: actual?.model })
    }
    expect(rebuildRequest(events, 0)).toBeUndefined()
    expect(rebuildRequest(events, 4)).toBeUndefined()
    expect(sessionUsage(events)).toEqual({ input: 18, output: 3, cacheRead: 4 })
  })

  it('diffs consecutive requests: a growing history keeps its whole prefix stable; a changed system prompt ends it', async () => {
    const { events } = await record([{ text: 'one' }, { text: 'two' }, { text: 'three' }], ['a', 'b', 'c'], (harness, turn) => {
      if (turn === 3) harness.prompt.section('late', { order: 5, text: 'A rule added before turn 3.' })
    })
    const second = requestWithDiff(events, 2)
    expect(second?.diff).toMatchObject({ from: 1, to: 2, systemChanged: false, commonMessages: 1, removedMessages: 0, stablePrefix: { tools: true, system: true, messages: 1 } })
    expect(second?.diff?.addedMessages.map((m) => m.role)).toEqual(['assistant', 'user'])
    const third = requestWithDiff(events, 3)
    expect(third?.diff?.systemChanged).toBe(true)
    expect(third?.diff?.commonMessages).toBe(3)
    // The cache is keyed tools → system → messages: a new system prompt leaves no reusable message prefix.
    expect(third?.diff?.stablePrefix).toEqual({ tools: true, system: false, messages: 0 })
    expect(requestWithDiff(events, 1)?.diff).toBeUndefined()
  })

  it('names config and tool changes between two requests', () => {
    const base = { n: 1, turn: 1, step: 1, firstSeq: 5, lastSeq: 9, finish: 'stop', system: 's', messages: [] }
    const before = { ...base, config: { provider: 'p', model: 'a' }, tools: [{ name: 'x', description: 'x', parameters: {} }] }
    const after = { ...base, n: 2, config: { provider: 'p', model: 'b', temperature: 0.2 }, tools: [{ name: 'x', description: 'changed', parameters: {} }, { name: 'y', description: 'y', parameters: {} }] }
    const diff = diffRequests(before, after)
    expect(diff.config).toEqual([
      { key: 'model', before: 'a', after: 'b' },
      { key: 'temperature', before: undefined, after: 0.2 },
    ])
    expect(diff.tools).toEqual({ added: ['y'], removed: [], changed: ['x'] })
    // Another model has another cache.
    expect(diff.stablePrefix).toEqual({ tools: false, system: false, messages: 0 })
  })
})

describe('views: timeline and check', () => {
  it('lays out turns, steps, requests and tool calls in order with times from the log and end reasons', async () => {
    const { events, header } = await record(
      [{ toolCalls: [{ name: 'echo', arguments: { text: 'hi' } }], usage: { inputTokens: 3, outputTokens: 1 } }, { text: 'ok', usage: { inputTokens: 4, outputTokens: 1 } }, { error: { code: 'SERVER', status: 500 } }],
      ['one', 'two'],
    )
    const timeline = buildTimeline(header, events)
    expect(timeline.rows.map((r) => `${r.kind}:${r.status}`)).toEqual([
      'turn:completed',
      'step:done',
      'request:tool-calls',
      'tool:ok',
      'step:done',
      'request:stop',
      'turn:error',
      'step:done',
      'request:error',
    ])
    expect(timeline.rows.filter((r) => r.kind === 'request').map((r) => r.request)).toEqual([1, 2, 3])
    expect(timeline.rows[8]?.detail).toBe('error SERVER')
    expect(timeline.rows[0]?.usage).toEqual({ input: 7, output: 2, cacheRead: 0 })
    for (const row of timeline.rows) {
      expect(row.start).toBe(row.kind === 'request' ? row.start : events[row.firstSeq]?.time)
      expect(row.end).toBeGreaterThanOrEqual(row.start)
      expect(row.start).toBeGreaterThanOrEqual(timeline.start)
      expect(row.end).toBeLessThanOrEqual(timeline.end)
    }
    expect(timeline).toMatchObject({ turns: 2, requests: 3, events: events.length })
  })

  it('checks a good log as ok and names the seqs of a damaged one', async () => {
    const { events } = await record([{ text: 'fine' }], ['go'])
    expect(checkSession(events)).toMatchObject({ ok: true, problems: [], requests: 1, events: events.length })
    const withoutEnd = events.slice(0, -1)
    expect(checkSession(withoutEnd).ok).toBe(false)
    expect(checkSession(withoutEnd, { allowOpenTurn: true }).ok).toBe(true)
    const gap = [...events.slice(0, 3), ...events.slice(4)]
    const damaged = checkSession(gap)
    expect(damaged.ok).toBe(false)
    expect(damaged.problems.join('\n')).toMatch(/seq/)
  })
})
