import { describe, expect, it } from 'vitest'
import { createHarness, MemoryStore, scriptedAdapter, subagentTool, type GenerateOptions, type ModelPricing, type ScriptStep } from '../../src/index.js'
import { attachChildTrees } from '../../src/app/child-sessions.js'
import { sessionCost } from '../../src/views/cost.js'
import { buildSessionTree } from '../../src/views/session-tree.js'

const isChild = (request: GenerateOptions): boolean => (request.system ?? '').includes('You are a sub-agent')
const lastIsToolResult = (request: GenerateOptions): boolean => request.messages.at(-1)?.content[0]?.type === 'tool-result'

describe('sub-agent roll-ups', () => {
  it('a parent tree carries its children\'s cost as a separate figure, priced per child from its own log', async () => {
    const pricing: ModelPricing = { currency: 'USD', inputPerMTok: 1, outputPerMTok: 10, asOf: '2026-12-01' }
    const model = scriptedAdapter({
      models: { m1: { pricing } },
      script: (request: GenerateOptions): ScriptStep => {
        const usage = isChild(request) ? { inputTokens: 2_000_000, outputTokens: 100_000 } : { inputTokens: 1_000_000, outputTokens: 0 }
        if (lastIsToolResult(request) || isChild(request)) return { text: 'done', usage }
        return { toolCalls: [{ id: 'c1', name: 'task', arguments: { task: 'one' } }, { id: 'c2', name: 'task', arguments: { task: 'two' } }], usage }
      },
    })
    const store = new MemoryStore()
    const harness = createHarness({ store, adapters: [model], tools: [subagentTool()] })
    const parent = await harness.createAgent({ provider: 'scripted', model: 'm1' })
    parent.followup('split it')
    await parent.whenIdle()
    const stored = await store.read(parent.id)
    const catalogue = { m1: { pricing } }
    const tree = await attachChildTrees(buildSessionTree(stored.header, stored.events), stored.header, store, (s) => buildSessionTree(s.header, s.events), catalogue)
    // Each child: 2M input at $1/M + 0.1M output at $10/M = $3; two children = $6. The parent's own two
    // responses (1M input each) are $2 and stay out of the roll-up.
    expect(tree.subagentCost).toEqual({ total: 6, currency: 'USD', unpriced: 0 })
    expect(sessionCost(stored.events, catalogue).total).toBe(2)
    expect(tree.subagentUsage).toMatchObject({ inputTokens: 4_000_000, outputTokens: 200_000 })
    const untouched = await attachChildTrees(buildSessionTree(stored.header, stored.events), stored.header, store, (s) => buildSessionTree(s.header, s.events))
    expect(untouched.subagentCost).toBeUndefined()
    await harness.close()
  })
})
