import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarness } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import type { SessionEvent } from '../../src/session/events.js'
import { defineTool } from '../../src/tools/define-tool.js'
import { canonicalArguments } from '../../src/views/canonical-arguments.js'
import { compareSessions } from '../../src/views/compare-sessions.js'
import { wordDiff } from '../../src/views/word-diff.js'

const tools = [
  defineTool({ name: 'read', description: 'Reads', parameters: z.object({ path: z.string(), lines: z.number().optional() }), execute: ({ path }) => `contents of ${path}` }),
  defineTool({ name: 'write', description: 'Writes', parameters: z.object({ path: z.string() }), execute: () => 'ok' }),
]
const MODELS = { m: { pricing: { currency: 'USD' as const, inputPerMTok: 1, outputPerMTok: 2, asOf: '2026-01-01' } } }

async function session(script: ScriptStep[], prompts = ['do it', 'again']): Promise<SessionEvent[]> {
  const harness = createHarness({ adapters: [scriptedAdapter({ script, models: MODELS })], tools })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  for (const p of prompts) await agent.run(p)
  const events = [...agent.session.events]
  await harness.close()
  return events
}

const BASE: ScriptStep[] = [
  { toolCalls: [{ name: 'read', arguments: { path: 'a', lines: 3 } }, { name: 'write', arguments: { path: 'b' } }], usage: { inputTokens: 100, outputTokens: 10 } },
  { text: 'The file a was read and b written.', usage: { inputTokens: 200, outputTokens: 20 } },
  { text: 'Done again.' },
]

describe('compareSessions', () => {
  it('two runs of the same behaviour compare the same, with steps, tokens, cost and duration reported', async () => {
    const c = compareSessions(await session(BASE), await session(BASE), { pricing: MODELS })
    expect(c.same).toBe(true)
    expect(c.turns.map((t) => [t.turn, t.same, t.differences])).toEqual([[1, true, []], [2, true, []]])
    expect(c.turns[0]?.a).toMatchObject({ steps: 2, usage: { inputTokens: 300, outputTokens: 30 }, cost: { total: 0.00036, currency: 'USD' } })
    expect(c.turns[0]?.a?.toolCalls).toEqual([{ name: 'read', arguments: '{"lines":3,"path":"a"}' }, { name: 'write', arguments: '{"path":"b"}' }])
  })

  it('argument key order and spacing are not a difference', async () => {
    const respaced: ScriptStep[] = [{ ...BASE[0], toolCalls: [{ name: 'read', arguments: '{ "path": "a",  "lines": 3 }' }, { name: 'write', arguments: { path: 'b' } }] } as ScriptStep, ...BASE.slice(1)]
    expect(compareSessions(await session(BASE), await session(respaced)).same).toBe(true)
  })

  it('reports a reordered tool call', async () => {
    const reordered: ScriptStep[] = [{ toolCalls: [{ name: 'write', arguments: { path: 'b' } }, { name: 'read', arguments: { path: 'a', lines: 3 } }] }, ...BASE.slice(1)]
    const c = compareSessions(await session(BASE), await session(reordered))
    expect(c.same).toBe(false)
    expect(c.turns[0]).toMatchObject({ same: false, differences: ['tool calls in another order: read, write in A, write, read in B'] })
    expect(c.turns[1]?.same).toBe(true)
  })

  it('reports a changed argument', async () => {
    const changed: ScriptStep[] = [{ toolCalls: [{ name: 'read', arguments: { path: 'a', lines: 4 } }, { name: 'write', arguments: { path: 'b' } }] }, ...BASE.slice(1)]
    const c = compareSessions(await session(BASE), await session(changed))
    expect(c.turns[0]?.differences).toEqual(['tool call 1 (read) has other arguments: {"lines":3,"path":"a"} in A, {"lines":4,"path":"a"} in B'])
  })

  it('reports an added and a replaced tool call', async () => {
    const more: ScriptStep[] = [{ toolCalls: [{ name: 'write', arguments: { path: 'a' } }, { name: 'write', arguments: { path: 'b' } }, { name: 'read', arguments: { path: 'c' } }] }, ...BASE.slice(1)]
    const c = compareSessions(await session(BASE), await session(more))
    expect(c.turns[0]?.differences).toEqual([
      'tool call 1 differs: read({"lines":3,"path":"a"}) in A, write({"path":"a"}) in B',
      'tool call 3 only in B: read({"path":"c"})',
    ])
  })

  it('reports a changed end reason', async () => {
    const failing: ScriptStep[] = [...BASE.slice(0, 2), { error: { code: 'SERVER', message: 'boom' } }]
    const c = compareSessions(await session(BASE), await session(failing))
    expect(c.turns[1]).toMatchObject({ same: false })
    expect(c.turns[1]?.differences).toContainEqual(expect.stringMatching(/^ended completed in A, error .*SERVER.* in B$/))
  })

  it('texts differ as a word diff, and --ignore-text leaves them out of the verdict but in the report', async () => {
    const reworded: ScriptStep[] = [BASE[0] as ScriptStep, { text: 'The file a was read and c written.' }, BASE[2] as ScriptStep]
    const a = await session(BASE)
    const b = await session(reworded)
    const strict = compareSessions(a, b)
    expect(strict.turns[0]?.differences).toEqual(['final text differs: The file a was read and [-b-] {+c+} written.'])
    const lenient = compareSessions(a, b, { ignoreText: true })
    expect(lenient.same).toBe(true)
    expect(lenient.turns[0]?.textDiff).toBe('The file a was read and [-b-] {+c+} written.')
  })

  it('a turn only one session has makes them differ', async () => {
    const c = compareSessions(await session(BASE), await session(BASE, ['do it']))
    expect(c.same).toBe(false)
    expect(c.turns[1]).toMatchObject({ turn: 2, same: false, differences: ['only session A has an ended turn 2'] })
  })
})

describe('wordDiff and canonicalArguments', () => {
  it('a word diff keeps both texts: dropping one side recovers the other', () => {
    const text = fc.array(fc.constantFrom('a', 'b', 'c', 'dd', 'e'), { maxLength: 12 }).map((w) => w.join(' '))
    fc.assert(
      fc.property(text, text, (a, b) => {
        const d = wordDiff(a, b)
        const side = (keep: '-' | '+'): string =>
          d.replace(keep === '-' ? /\{\+[^+]*\+\}/g : /\[-[^-]*-\]/g, ' ').replace(/\[-([^-]*)-\]|\{\+([^+]*)\+\}/g, (_m, x: string | undefined, y: string | undefined) => x ?? y ?? '').split(/\s+/).filter((t) => t !== '').join(' ')
        expect(side('-')).toBe(a)
        expect(side('+')).toBe(b)
        if (a === b) expect(d).toBe(a)
      }),
    )
  })

  it('canonical arguments sort keys at every depth and leave non-JSON as it is', () => {
    expect(canonicalArguments('{"b":{"y":1,"x":[{"d":1,"c":2}]},"a":0}')).toBe('{"a":0,"b":{"x":[{"c":2,"d":1}],"y":1}}')
    expect(canonicalArguments('not json {')).toBe('not json {')
  })
})
