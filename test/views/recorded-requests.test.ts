import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarness } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import { retryPlugin } from '../../src/plugins/retry.js'
import type { SessionEvent } from '../../src/session/events.js'
import { foldSession } from '../../src/session/fold.js'
import { defineTool } from '../../src/tools/define-tool.js'
import { historyMessages, recordedRequests } from '../../src/views/recorded-requests.js'
import { recordedSteps } from '../../src/views/replay-recording.js'

const echo = defineTool({ name: 'echo', description: 'Echoes', parameters: z.object({ s: z.string() }), execute: ({ s }) => `echo ${s}` })

const step = fc.oneof(
  fc.record({ text: fc.array(fc.string({ maxLength: 6 }), { minLength: 1, maxLength: 3 }) }),
  fc.record({ toolCalls: fc.array(fc.record({ name: fc.constant('echo'), arguments: fc.record({ s: fc.string({ maxLength: 5 }) }) }), { minLength: 1, maxLength: 2 }) }),
  fc.constant({ error: { code: 'SERVER' } }),
) as fc.Arbitrary<ScriptStep>

/** Runs `turns` prompts over `script`; with `prune`, rewrites the first tool result between turns (a surface replace). */
async function session(script: ScriptStep[], turns: number, prune: boolean): Promise<SessionEvent[]> {
  const harness = createHarness({ adapters: [scriptedAdapter({ script })], tools: [echo], plugins: [retryPlugin({ maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 1 })] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  for (let t = 0; t < turns; t++) {
    await agent.run(`prompt ${t}`)
    const result = agent.session.events.find((e) => e.type === 'tool/result')
    if (prune && t === 0 && result !== undefined) {
      const data = result.data as { message: { content: { content: unknown }[] } }
      const block = data.message.content[0] as object
      agent.session.append('tool/result', { ...data, message: { ...data.message, content: [{ ...block, content: [{ type: 'text', text: '(pruned)' }] }] } }, { surfaceOp: { op: 'replace', start: result.seq, end: result.seq }, sourceEventSeqs: [result.seq] })
    }
  }
  const events = [...agent.session.events]
  await harness.close()
  return events
}

describe('recordedRequests', () => {
  it('each request is rebuilt from the log before it, in one pass: the same history and header as a full fold, the chunks of the step’s last attempt', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), fc.integer({ min: 1, max: 3 }), fc.boolean(), async (script, turns, prune) => {
        const events = await session(script, turns, prune)
        const requests = recordedRequests(events)
        const reference = [...recordedSteps(events).values()]
        expect(requests.map((r) => r.firstSeq)).toEqual(reference.map((r) => r.firstSeq))
        requests.forEach((r, i) => {
          expect(r.request).toBe(i + 1)
          const full = foldSession(events.slice(0, r.firstSeq))
          expect(historyMessages(r.history)).toEqual(full.messages)
          expect(r.header).toEqual(full.header)
          expect(r.chunks).toEqual(reference[i]?.chunks)
          expect(r.finished).toBe(reference[i]?.finished)
        })
      }),
      { numRuns: 40 },
    )
  })

  it('after a surface replace, later requests see the replaced history and earlier ones keep theirs', async () => {
    const events = await session([{ toolCalls: [{ name: 'echo', arguments: { s: 'x' } }] }, { text: 'one' }, { text: 'two' }], 2, true)
    const requests = recordedRequests(events)
    const text = (r: (typeof requests)[number]) => JSON.stringify(historyMessages(r.history))
    expect(text(requests[1] as (typeof requests)[number])).toContain('echo x')
    expect(text(requests[2] as (typeof requests)[number])).toContain('(pruned)')
    expect(text(requests[2] as (typeof requests)[number])).not.toContain('echo x')
  })
})
