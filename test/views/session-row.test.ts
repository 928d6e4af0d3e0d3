import { describe, expect, it } from 'vitest'
import { createHarness, scriptedAdapter, type SessionEvent } from '../../src/index.js'
import { addTokenUsage, addUsage, emptyTokenTotals, emptyUsage } from '../../src/llm/token-usage.js'
import { sessionRowFacts, unreadableSessionRow } from '../../src/views/session-row.js'

const PRICED = { m: { contextWindow: 10_000, defaultMaxTokens: 100, pricing: { currency: 'USD' as const, inputPerMTok: 1, outputPerMTok: 2, asOf: '2026-01-01' } } }

async function recorded(): Promise<SessionEvent[]> {
  const model = scriptedAdapter({ script: [{ text: 'hi', usage: { inputTokens: 1000, outputTokens: 10, cacheReadTokens: 500 } }], models: PRICED })
  const harness = createHarness({ adapters: [model], tools: [], system: 'Be brief.' })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  agent.followup('Say   hi\nplease')
  await agent.whenIdle()
  const events = [...agent.session.events]
  await harness.close()
  return events
}

describe('the session-row builder the CLI and the server share', () => {
  const listed = { id: 's1', updatedAt: 1_000, sizeBytes: 42, parentSession: 'p', parentCallId: 'c', agentProfile: 'explorer', title: 'from the index', turns: 7, lastReason: 'error' }

  it('takes title, turns, last reason, usage and cost from the log, links and size from the listing', async () => {
    const facts = sessionRowFacts(listed, await recorded(), PRICED)
    expect(facts).toEqual({
      id: 's1',
      updatedAt: 1_000,
      sizeBytes: 42,
      parentSession: 'p',
      parentCallId: 'c',
      agentProfile: 'explorer',
      title: 'Say hi please',
      turns: 1,
      lastReason: 'completed',
      usage: { input: 1500, output: 10, cacheRead: 500 },
      cost: { total: 0.00152, currency: 'USD', asOf: '2026-01-01' },
    })
  })

  it('has no cost without a catalogue, and an unreadable log keeps what the listing knew, without usage', async () => {
    expect(sessionRowFacts(listed, await recorded(), undefined).cost).toBeUndefined()
    expect(unreadableSessionRow(listed, 'damaged')).toEqual({
      id: 's1',
      updatedAt: 1_000,
      sizeBytes: 42,
      parentSession: 'p',
      parentCallId: 'c',
      agentProfile: 'explorer',
      title: 'from the index',
      turns: 7,
      lastReason: 'error',
      problem: 'damaged',
    })
    expect(unreadableSessionRow({ id: 's2', updatedAt: 0 }, 'gone')).toEqual({ id: 's2', updatedAt: 0, title: '', turns: 0, lastReason: null, problem: 'gone' })
  })

  it('shows a running TokenTotals as the same figure as the completions it summed', () => {
    const usages = [{ inputTokens: 100, outputTokens: 5, cacheReadTokens: 40, cacheWriteTokens: 3 }, { inputTokens: 7, outputTokens: 1, reasoningTokens: 9 }]
    const running = emptyTokenTotals()
    const shown = emptyUsage()
    for (const u of usages) {
      addTokenUsage(running, u)
      addUsage(shown, u)
    }
    const fromTotals = emptyUsage()
    addUsage(fromTotals, running)
    expect(fromTotals).toEqual(shown)
    expect(shown).toEqual({ input: 150, output: 6, cacheRead: 40 })
  })
})
