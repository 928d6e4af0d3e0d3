import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { rerunSession } from '../../src/app/rerun-session.js'
import { createHarness } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import type { UserMessage } from '../../src/llm/types.js'
import { invariantPlugin } from '../../src/plugins/invariant.js'
import type { SessionEvent } from '../../src/session/events.js'
import { MemoryStore } from '../../src/store/memory-store.js'
import { defineTool } from '../../src/tools/define-tool.js'
import type { TurnComparison } from '../../src/views/compare-sessions.js'

function counting() {
  const runs = { count: 0 }
  const tools = [defineTool({ name: 'lookup', description: 'Looks up', parameters: z.object({ q: z.string() }), execute: ({ q }) => (runs.count++, `found ${q}`) })]
  return { runs, tools }
}

const userTexts = (events: readonly SessionEvent[]): string[] =>
  events.filter((e) => e.type === 'user/message' && (e.data as unknown as UserMessage).source.kind === 'user').map((e) => ((e.data as unknown as UserMessage).content[0] as { text: string }).text)

const chunksOf = (events: readonly SessionEvent[], turn: number, step: number): number =>
  events.filter((e) => e.type === 'assistant/chunk' && (e.data as { turn: number }).turn === turn && (e.data as { step: number }).step === step).length

/** Records into `store` on the `scripted` route, running `drive` against the agent. */
async function record(store: MemoryStore, script: ScriptStep[], drive: (agent: Awaited<ReturnType<ReturnType<typeof createHarness>['createAgent']>>, hooks: ReturnType<typeof createHarness>['hooks']) => Promise<void>) {
  const { runs, tools } = counting()
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script })], tools })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1' })
  await drive(agent, harness.hooks)
  const id = agent.id
  // Not harness.close(): that would close the store the rerun reads.
  await agent.dispose()
  return { id, runs }
}

const ORIGINAL: ScriptStep[] = [
  { toolCalls: [{ name: 'lookup', arguments: { q: 'cats' } }] },
  { text: 'Cats are mammals.' },
  { text: 'You are welcome.' },
]

describe('rerunSession', () => {
  it('reruns onto another model: a new linked session, the same inputs in order, and the turns whose texts or tool calls differ named', async () => {
    const store = new MemoryStore()
    const { id, runs } = await record(store, ORIGINAL, async (agent) => {
      await agent.run('tell me about cats')
      await agent.run('thanks')
    })
    expect(runs.count).toBe(1)
    const other = scriptedAdapter({ provider: 'other', script: [{ toolCalls: [{ name: 'lookup', arguments: { q: 'cats' } }] }, { text: 'Cats are mammals.' }, { text: 'Anytime!' }] })
    const seen: TurnComparison[] = []
    const report = await rerunSession({ store, sessionId: id, adapters: [other], provider: 'other', model: 'm2', toolMode: 'recorded', plugins: [invariantPlugin()], onTurn: (t) => seen.push(t) })

    expect(report.forkedFrom).toBe(id)
    expect(report.sessionId).not.toBe(id)
    const fresh = await store.read(report.sessionId)
    // A rerun is a fork before its first rerun turn that also says whose rerun it is.
    expect(fresh.header.parentSession).toBe(id)
    expect(fresh.header.forkedFrom).toBe(id)
    expect((await store.list()).find((s) => s.id === report.sessionId)).toMatchObject({ parentSession: id, forkedFrom: id })
    expect(userTexts(fresh.events)).toEqual(['tell me about cats', 'thanks'])
    expect(other.requests.map((r) => r.model)).toEqual(['m2', 'm2', 'm2'])
    // Recorded tools: the lookup answered from the log, its body never ran again.
    expect(runs.count).toBe(1)
    expect(report.comparison.same).toBe(false)
    expect(report.comparison.turns.map((t) => [t.turn, t.same])).toEqual([[1, true], [2, false]])
    expect(report.comparison.turns[1]?.differences).toEqual(['final text differs: [-You are welcome.-] {+Anytime!+}'])
    expect(seen.map((t) => [t.turn, t.same])).toEqual([[1, true], [2, false]])
    // The original is untouched.
    expect(userTexts((await store.read(id)).events)).toEqual(['tell me about cats', 'thanks'])
  })

  it("toolMode 'live' runs the live tools; a call the recording never made is a difference, not a side effect of recorded mode", async () => {
    const store = new MemoryStore()
    const { id } = await record(store, ORIGINAL, async (agent) => void (await agent.run('tell me about cats')))
    const live = counting()
    const model = scriptedAdapter({ script: [{ toolCalls: [{ name: 'lookup', arguments: { q: 'dogs' } }] }, { text: 'Cats are mammals.' }] })
    const liveReport = await rerunSession({ store, sessionId: id, adapters: [model], tools: live.tools, toolMode: 'live' })
    expect(live.runs.count).toBe(1)
    expect(liveReport.comparison.turns[0]?.differences).toEqual(['tool call 1 (lookup) has other arguments: {"q":"cats"} in A, {"q":"dogs"} in B'])

    const recorded = await rerunSession({ store, sessionId: id, adapters: [scriptedAdapter({ script: [{ toolCalls: [{ name: 'lookup', arguments: { q: 'dogs' } }] }, { text: 'Cats are mammals.' }] })], toolMode: 'recorded' })
    const call = (await store.read(recorded.sessionId)).events.find((e) => e.type === 'tool/result')
    expect((call?.data as { error?: { code: string } }).error?.code).toBe('REPLAY_DIVERGED')
    expect(live.runs.count).toBe(1)
  })

  it('fromTurn copies the earlier turns and reruns from there', async () => {
    const store = new MemoryStore()
    const { id } = await record(store, ORIGINAL, async (agent) => {
      await agent.run('tell me about cats')
      await agent.run('thanks')
    })
    const model = scriptedAdapter({ script: [{ text: 'You are welcome.' }] })
    const report = await rerunSession({ store, sessionId: id, adapters: [model], toolMode: 'recorded', fromTurn: 2 })
    expect(model.requests).toHaveLength(1)
    expect(report.comparison.same).toBe(true)
    const fresh = await store.read(report.sessionId)
    expect(fresh.header.seedLength).toBeGreaterThan(0)
    expect(userTexts(fresh.events)).toEqual(['tell me about cats', 'thanks'])
  })

  it('steering recorded as entering step 2 enters step 2 of the rerun turn', async () => {
    const store = new MemoryStore()
    const { id } = await record(store, [{ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }], delayMs: 20 }, { text: 'ok, shorter' }], async (agent, hooks) => {
      const off = hooks.on('session/event', ({ event }) => {
        if (event.type === 'step/start') {
          off()
          // Not from inside the listener: an append there is refused.
          setTimeout(() => agent.steer('be brief'), 5)
        }
      })
      await agent.run('explain x')
    })
    const recordedSteps = (await store.read(id)).events.filter((e) => e.type === 'user/message').map((e) => e.seq)
    expect(recordedSteps).toHaveLength(2)
    const model = scriptedAdapter({ script: [{ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] }, { text: 'ok, shorter' }] })
    const report = await rerunSession({ store, sessionId: id, adapters: [model], toolMode: 'recorded' })
    expect(report.comparison.same).toBe(true)
    // The second request (step 2) is the first to carry the steer, right after the tool result.
    const texts = (r: (typeof model.requests)[number]) => r.messages.map((m) => m.content.map((b) => ('text' in b ? b.text : b.type)).join(''))
    expect(texts(model.requests[0] as (typeof model.requests)[number])).toEqual(['explain x'])
    expect(texts(model.requests[1] as (typeof model.requests)[number]).at(-1)).toBe('be brief')
  })

  it('a cancel recorded mid-turn is replayed after the same number of chunks of the interrupted step', async () => {
    const store = new MemoryStore()
    const { id } = await record(store, [{ text: ['one ', 'two ', 'three ', 'four ', 'five '], delayMs: 15 }, { text: 'next' }], async (agent, hooks) => {
      let deltas = 0
      const off = hooks.on('session/event', ({ event }) => {
        if (event.type === 'assistant/chunk' && (event.data as { chunk: { type: string } }).chunk.type === 'text-delta' && ++deltas === 3) {
          off()
          agent.cancel()
        }
      })
      await agent.run('count')
      await agent.run('go on')
    })
    const original = (await store.read(id)).events
    const cut = chunksOf(original, 1, 1)
    expect(cut).toBeGreaterThan(2)
    // The rerun's model streams many chunks at once: the cancel must still land after exactly `cut`.
    const model = scriptedAdapter({ script: [{ text: Array.from({ length: 40 }, (_, i) => `w${i} `) }, { text: 'next' }] })
    const report = await rerunSession({ store, sessionId: id, adapters: [model], toolMode: 'recorded' })
    const fresh = (await store.read(report.sessionId)).events
    expect(chunksOf(fresh, 1, 1)).toBe(cut)
    expect(report.comparison.turns.map((t) => t.a?.reason.kind === 'aborted' && t.b?.reason.kind === 'aborted')).toEqual([true, false])
    expect(report.comparison.turns[0]?.differences).toEqual([expect.stringMatching(/^final text differs/)])
    expect(userTexts(fresh)).toEqual(['count', 'go on'])
  })

  it('refuses a bad fromTurn, a bad toolMode and a session without turns to rerun', async () => {
    const store = new MemoryStore()
    const { id } = await record(store, ORIGINAL, async (agent) => void (await agent.run('tell me about cats')))
    await expect(rerunSession({ store, sessionId: id, toolMode: 'recorded', fromTurn: 0 })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    await expect(rerunSession({ store, sessionId: id, toolMode: 'both' as never })).rejects.toMatchObject({ code: 'INVALID_CONFIG' })
    await expect(rerunSession({ store, sessionId: id, toolMode: 'recorded', fromTurn: 5 })).rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringContaining('no ended turn from turn 5') })
    await expect(rerunSession({ store, sessionId: 'nope', toolMode: 'recorded' })).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
  })
})
