import { describe, expect, it } from 'vitest'
import { createHarness, type HarnessOptions } from '../../src/harness/harness.js'
import { scriptedAdapter } from '../../src/llm/adapters/scripted.js'
import { retryPlugin } from '../../src/plugins/retry.js'
import { turnBudgetPlugin } from '../../src/plugins/turn-budget.js'
import type { SessionEvent } from '../../src/session/events.js'
import { builtinTools } from '../../src/tools/builtin/index.js'
import { replaySession } from '../../src/app/replay-session.js'
import { reconstructionProblems } from '../../src/views/request-reconstruction.js'
import { tmpdir } from 'node:os'
import type { ScriptStep } from '../../src/llm/adapters/scripted.js'

const MODELS = { m: { defaultMaxTokens: 100, contextWindow: 1000 } }

async function record(script: ScriptStep[], prompts: string[], plugins: HarnessOptions['plugins'] = []): Promise<SessionEvent[]> {
  const harness = createHarness({ adapters: [scriptedAdapter({ script, models: MODELS })], tools: builtinTools({ root: tmpdir() }), plugins })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  for (const prompt of prompts) {
    agent.followup(prompt)
    await agent.whenIdle()
  }
  const events = [...agent.session.events]
  await harness.close()
  return events
}

const facts = (info: typeof MODELS) => () => (model: string) => info[model as 'm']

describe('replaySession', () => {
  it('rebuilds every request identically across turns, tool calls, a retried attempt and a budget stop', async () => {
    const events = await record(
      [
        { toolCalls: [{ name: 'glob', arguments: { pattern: 'nothing-*.none' } }] },
        { error: { code: 'SERVER' } },
        { text: 'first done' },
        { toolCalls: [{ name: 'list', arguments: {} }] },
        { toolCalls: [{ name: 'list', arguments: {} }] },
      ],
      ['one', 'two'],
      [retryPlugin({ baseDelayMs: 1, maxDelayMs: 1 }), turnBudgetPlugin({ maxSteps: 2 })],
    )
    const ends = events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)
    expect(ends).toEqual(['completed', 'aborted'])
    expect(reconstructionProblems(events)).toEqual([])
    const report = await replaySession(events, facts(MODELS))
    expect(report.problems).toEqual([])
    expect(report.compared).toBe(4)
  })

  it('reports a request that comes out different, naming turn, step, seq and field', async () => {
    const events = await record([{ text: 'hello' }], ['hi'])
    const report = await replaySession(events, facts({ m: { defaultMaxTokens: 200, contextWindow: 1000 } }))
    expect(report.problems).toHaveLength(1)
    expect(report.problems[0]).toMatch(/^turn 1 step 1 \(original request at seq \d+\): maxTokens differs: 100 originally, 200 in the replay$/)
  })
})
