import { expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool } from '../../src/index.js'
import type { GenerateOptions, Message, ScriptStep } from '../../src/index.js'
import { expectReconstructable, isSummaryCall, setup, usageOf } from './compaction-fixture.js'

it('recent turns that alone fill the window: old results are pruned, and a summary call is made only when worth it', async () => {
  const dump = defineTool({ name: 'dump', description: 'prints a big file', parameters: z.object({}), execute: () => 'd'.repeat(14_000) })
  const script = (request: GenerateOptions): ScriptStep => {
    if (isSummaryCall(request)) return { text: 'Summary.' }
    const last = request.messages[request.messages.length - 1] as Message
    return last.source.kind === 'user' && last.content[0]?.type === 'text' ? { toolCalls: [{ name: 'dump', arguments: {} }], usage: usageOf(request) } : { text: 'done', usage: usageOf(request) }
  }
  const f = await setup(script, { pruneToolResultsOver: 1000 }, 4000, [dump])
  for (let i = 1; i <= 8; i++) await f.turn(`task ${i}`)
  expect(f.of('turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(Array(8).fill('completed'))
  // Every turn's big result is pruned once it is old; the little that is left is rarely worth a summary call
  // (without the minimum gain, each of the 16 steps but the first few would call the model: 13 calls measured).
  const runs = f.of('compaction/end').map((e) => (e.data as { outcome: string }).outcome)
  expect(runs.filter((o) => o === 'pruned').length).toBeGreaterThanOrEqual(5)
  expect(f.of('compaction/request').length).toBeLessThanOrEqual(2)
  expectReconstructable(f.agent.session.events, f.seen)
  await f.harness.close()
})
