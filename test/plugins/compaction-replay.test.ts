import { describe, expect, it } from 'vitest'
import { replaySession } from '../../src/app/replay-session.js'
import { setup, summarizedCount, toolLoopModel } from './compaction-fixture.js'

const facts = (contextWindow: number) => () => () => ({ contextWindow, defaultMaxTokens: 100 })

describe('ledgerloop replay of a compacted session', () => {
  it('re-enacts summaries and pruned tool results at the same history positions: every request compares equal', async () => {
    const f = await setup(toolLoopModel({ resultChars: 3000 }), { pruneToolResultsOver: 1000 }, 4000)
    for (let i = 1; i <= 12; i++) await f.turn(`task ${i}`)
    const events = f.agent.session.events
    expect(summarizedCount(events)).toBeGreaterThanOrEqual(1)
    expect(events.some((e) => e.type === 'compaction/prune')).toBe(true)
    await f.harness.close()
    const report = await replaySession(events, facts(4000))
    expect(report.problems).toEqual([])
    expect(report.compared).toBe(24)
  })

  it('re-enacts an overflow compaction inside a step: the failed attempt, the compaction, then the retry', async () => {
    const f = await setup(toolLoopModel({ overflowAbove: 1500 }), { threshold: 1 }, 1_000_000)
    for (let i = 1; i <= 8; i++) await f.turn(`task ${i}`)
    const events = f.agent.session.events
    expect(events.filter((e) => e.type === 'compaction/start').map((e) => (e.data as { trigger: string }).trigger)).toContain('overflow')
    await f.harness.close()
    const report = await replaySession(events, facts(1_000_000))
    expect(report.problems).toEqual([])
    expect(report.compared).toBe(16)
  })
})
