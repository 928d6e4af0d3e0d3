// Durable execution (issue 24): a crash at any point of a session, then resume — the continuation finishes the
// work, every prompt is answered exactly once, `never` bodies never run again, `safe` ones may, `keyed` ones see
// the same key, and every log verifies. A crash is a prefix of the log: group commit writes events in order,
// so whatever a kill -9 leaves is one of the prefixes of the log the uninterrupted run wrote. The tests cut a
// real run's log at every position, store the prefix in each store kind, and resume it.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createHarness,
  defineTool,
  invariantPlugin,
  MemoryStore,
  scriptedAdapter,
  verifySessionLog,
  type Agent,
  type ScriptStep,
  type SessionEvent,
  type SessionStore,
} from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { idempotencyKeyOf } from '../../src/loop/tool-pipeline.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { STORE_KINDS } from '../store/store-kits.js'

interface Run {
  readonly tool: string
  readonly callId: string
  readonly key: string
}

/** Three tools, one per replay policy; each records its runs. */
function tools(runs: Run[], onPoke?: () => void) {
  const make = (name: string, replay: 'never' | 'safe' | 'keyed', after?: () => void) =>
    defineTool({
      name,
      description: `${name} (replay ${replay})`,
      parameters: z.object({ what: z.string() }),
      replay,
      concurrencySafe: replay === 'safe',
      execute: ({ what }, ctx) => {
        runs.push({ tool: name, callId: ctx.callId, key: ctx.idempotencyKey })
        after?.()
        return `${name} ${what}: ok`
      },
    })
  return [make('peek', 'safe'), make('poke', 'never', onPoke), make('pay', 'keyed')]
}

/** A prompt gets one step of three calls (one per tool), then an answer in chunks. Ids carry `prefix`. */
function model(prefix: string) {
  let n = 0
  return scriptedAdapter({
    script: (request: GenerateOptions): ScriptStep => {
      const last = request.messages[request.messages.length - 1]
      if (last?.role !== 'user' || last.content[0]?.type === 'tool-result') return { reasoning: ['so'], text: ['all ', 'done', '.'] }
      n++
      return {
        reasoning: ['let me', ' see'],
        toolCalls: [
          { id: `${prefix}-peek-${n}`, name: 'peek', arguments: { what: 'a' } },
          { id: `${prefix}-poke-${n}`, name: 'poke', arguments: { what: 'b' } },
          { id: `${prefix}-pay-${n}`, name: 'pay', arguments: { what: 'c' } },
        ],
      }
    },
    models: { m1: { contextWindow: 100_000, defaultMaxTokens: 100 } },
  })
}

interface Original {
  readonly id: string
  readonly header: Parameters<SessionStore['create']>[0]
  readonly events: readonly SessionEvent[]
  readonly runs: readonly Run[]
}

/** The uninterrupted run: two queued prompts, and a steer sent while the first turn's tools run. */
async function originalRun(): Promise<Original> {
  const runs: Run[] = []
  let agent: Agent | undefined
  let steered = false
  const harness = createHarness({
    store: new MemoryStore(),
    adapters: [model('o')],
    tools: tools(runs, () => {
      if (!steered) agent?.steer('mind the gap')
      steered = true
    }),
    onListenerError: () => {},
  })
  agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'durable' })
  agent.followup('one')
  agent.followup('two')
  await agent.whenIdle()
  const events = [...agent.session.events]
  const header = agent.session.header
  await harness.close()
  return { id: 'durable', header, events, runs }
}

const turnOf = (e: SessionEvent): number => (e.data as { turn: number }).turn

/** Every turn that ended `interrupted` has a continuation, and each chain of them ends with this reason. */
function chainEnds(events: readonly SessionEvent[]): Map<number, string> {
  const end = new Map<number, string>()
  const continuedBy = new Map<number, number>()
  for (const e of events) {
    if (e.type === 'turn/end') end.set(turnOf(e), (e.data as { reason: { kind: string } }).reason.kind)
    const continues = e.type === 'turn/start' ? (e.data as { continues?: number }).continues : undefined
    if (continues !== undefined) continuedBy.set(continues, turnOf(e))
  }
  const final = new Map<number, string>()
  for (const turn of end.keys()) {
    let t = turn
    while (end.get(t) === 'interrupted' && continuedBy.has(t)) t = continuedBy.get(t) as number
    final.set(turn, end.get(t) as string)
  }
  return final
}

/** The ids of the prompts and steers the user sent (inserted into the inbox by a send, not by repair). */
function sentInput(events: readonly SessionEvent[]): string[] {
  return events.flatMap((e) => {
    if (e.type !== 'agent/inbox/spliced') return []
    const d = e.data as { inserted: { id: string }[]; restores?: number }
    return d.restores === undefined ? d.inserted.map((m) => m.id) : []
  })
}

function expectAllAnsweredOnce(events: readonly SessionEvent[], sent: readonly string[], where: string, continued = true): void {
  const final = chainEnds(events)
  for (const id of sent) {
    const messages = events.filter((e) => e.type === 'user/message' && (e.data as { id: string }).id === id)
    expect(messages.length, `${where}: input ${id} reached the model ${messages.length} times`).toBe(1)
    const turn = turnOf(events.filter((e) => e.seq < (messages[0] as SessionEvent).seq && e.type === 'turn/start').at(-1) as SessionEvent)
    expect(final.get(turn), `${where}: the turn that took input ${id} (turn ${turn}) ended`).toBe('completed')
  }
  if (continued) for (const [turn, reason] of final) expect(reason, `${where}: turn ${turn}'s work`).not.toBe('interrupted')
}

describe.each(STORE_KINDS)('DURABLE-CONTINUE on $name: a crash at every point, then resume', (kind) => {
  let original: Original
  beforeAll(async () => {
    await kind.setup?.()
    original = await originalRun()
  })
  afterAll(async () => {
    await kind.teardown?.()
  })

  it('the continuation finishes the work: every prompt answered once by a completed turn, never-bodies not run again, keyed re-runs keep their key, every log verifies', async () => {
    const kit = kind.make()
    const events = original.events
    // Every cut on the fast stores; every third one (and the last few) on the slower ones keeps the file quick.
    const step = kind.name === 'MemoryStore' || kind.name === 'JsonlStore' ? 1 : 3
    const afterCalls = events.filter((e) => e.type === 'tool/call').map((e) => e.seq + 1)
    const cuts = [...new Set([...Array.from({ length: Math.ceil(events.length / step) }, (_, i) => 1 + i * step), ...afterCalls, events.length - 2, events.length - 1])].sort((a, b) => a - b)
    let continued = 0
    let reran = 0
    try {
      for (const cut of cuts) {
        const where = `cut after seq ${cut - 1} (${events[cut - 1]?.type})`
        const id = `c${cut}`
        const prefix = events.slice(0, cut).map((e) => ({ ...e })) as SessionEvent[]
        const writer = await kit.store.create({ ...original.header, id }, prefix)
        await writer.close()
        const runs: Run[] = []
        const harness = createHarness({ store: kit.another(), adapters: [model('r')], tools: tools(runs), plugins: [invariantPlugin()], onListenerError: () => {} })
        try {
          const agent = await harness.resumeAgent(id, { provider: 'scripted', model: 'm1' })
          await agent.whenIdle()
          if (agent.session.events.some((e) => e.type === 'turn/start' && (e.data as { continues?: number }).continues !== undefined)) continued++
          // Queued prompts wait for a waking send, as before a crash: the next one drains them.
          agent.followup('after the crash')
          await agent.whenIdle()
          const final = agent.session.events
          expect(verifySessionLog(final).problems, where).toEqual([])
          expectAllAnsweredOnce(final, sentInput(final), where)
          // A call whose tool/call is in the prefix ran in the first life; afterwards only `safe`/`keyed` ones run again.
          const loggedBefore = new Set(prefix.filter((e) => e.type === 'tool/call').map((e) => (e.data as { callId: string }).callId))
          for (const r of runs.filter((r) => loggedBefore.has(r.callId))) {
            expect(r.tool, `${where}: ${r.callId} ran again`).not.toBe('poke')
            expect(r.key, where).toBe(idempotencyKeyOf(id, r.callId))
            reran++
          }
          // No re-run is logged without naming its original call.
          for (const e of final.slice(cut)) {
            const d = e.data as { callId?: string; of?: number }
            if (e.type === 'tool/call' && loggedBefore.has(d.callId as string)) expect(prefix[d.of as number]?.type, where).toBe('tool/call')
          }
        } finally {
          await harness.close()
        }
      }
    } finally {
      await kit.cleanup()
    }
    expect(continued).toBeGreaterThan(cuts.length / 3)
    expect(reran).toBeGreaterThan(0)
  })
})

describe('DURABLE-CONTINUE: what the continuation does', () => {
  it('a crash while a safe body runs: the continuation re-runs it (tool/call of: SEQ) and the model reads the re-run result, not "outcome unknown"', async () => {
    const original = await originalRun()
    const callSeq = original.events.find((e) => e.type === 'tool/call' && (e.data as { name: string }).name === 'peek')?.seq as number
    const store = new MemoryStore()
    await (await store.create(original.header, original.events.slice(0, callSeq + 1))).close()
    const runs: Run[] = []
    const replier = model('r')
    const harness = createHarness({ store, adapters: [replier], tools: tools(runs), onListenerError: () => {} })
    const agent = await harness.resumeAgent('durable', { provider: 'scripted', model: 'm1' })
    await agent.whenIdle()
    const events = agent.session.events
    const start = events.find((e) => e.seq > callSeq && e.type === 'turn/start')
    expect(start?.data).toEqual({ turn: 2, continues: 1 })
    const rerun = events.find((e) => e.type === 'tool/call' && (e.data as { of?: number }).of === callSeq)
    expect(rerun?.data).toMatchObject({ turn: 2, step: 1, name: 'peek', of: callSeq })
    // The re-run first; then the queued second prompt's own calls.
    expect(runs.filter((r) => r.callId.startsWith('o-'))).toEqual([{ tool: 'peek', callId: 'o-peek-1', key: idempotencyKeyOf('durable', 'o-peek-1') }])
    expect(runs[0]?.callId).toBe('o-peek-1')
    const request = replier.requests[0] as GenerateOptions
    const results = request.messages.flatMap((m) => m.content).filter((b) => b.type === 'tool-result')
    expect(JSON.stringify(results)).toContain('peek a: ok')
    // poke and pay never had their tool/call logged: the model reads that they never ran.
    expect(JSON.stringify(results)).toContain('never ran')
    expect(verifySessionLog(events).problems).toEqual([])
    await harness.close()
  })

  it('a crash while a keyed body runs: the re-run sees the same idempotency key as the first run', async () => {
    const original = await originalRun()
    const callSeq = original.events.find((e) => e.type === 'tool/call' && (e.data as { name: string }).name === 'pay')?.seq as number
    const store = new MemoryStore()
    await (await store.create(original.header, original.events.slice(0, callSeq + 1))).close()
    const runs: Run[] = []
    const harness = createHarness({ store, adapters: [model('r')], tools: tools(runs), onListenerError: () => {} })
    const agent = await harness.resumeAgent('durable', { provider: 'scripted', model: 'm1' })
    await agent.whenIdle()
    const first = original.runs.find((r) => r.tool === 'pay')
    const again = runs.filter((r) => r.callId === first?.callId)
    expect(again).toHaveLength(1)
    expect(again[0]?.key).toBe(first?.key)
    // poke (never) was logged before pay and may have run: it is not run again.
    expect(runs.filter((r) => r.callId.startsWith('o-') && r.tool === 'poke')).toEqual([])
    expect(verifySessionLog(agent.session.events).problems).toEqual([])
    await harness.close()
  })

  it("interrupted: 'close' keeps the old behaviour: closers only, nothing runs until the next input", async () => {
    const original = await originalRun()
    const callSeq = original.events.find((e) => e.type === 'tool/call')?.seq as number
    const store = new MemoryStore()
    await (await store.create(original.header, original.events.slice(0, callSeq + 1))).close()
    const replier = model('r')
    const harness = createHarness({ store, adapters: [replier], tools: tools([]), onListenerError: () => {} })
    const agent = await harness.resumeAgent('durable', { provider: 'scripted', model: 'm1', interrupted: 'close' })
    await agent.whenIdle()
    expect(replier.requests).toHaveLength(0)
    expect(agent.session.events.at(-1)?.data).toEqual({ turn: 1, reason: { kind: 'interrupted' } })
    await harness.close()
  })

  it('a turn whose answer was committed and only its end was missing: the continuation ends completed without a request', async () => {
    const original = await originalRun()
    const answer = original.events.findLastIndex((e) => e.type === 'assistant/message')
    const store = new MemoryStore()
    await (await store.create(original.header, original.events.slice(0, answer + 1))).close()
    const replier = model('r')
    const harness = createHarness({ store, adapters: [replier], tools: tools([]), onListenerError: () => {} })
    const agent = await harness.resumeAgent('durable', { provider: 'scripted', model: 'm1' })
    await agent.whenIdle()
    expect(replier.requests).toHaveLength(0)
    const tail = agent.session.events.slice(answer + 1).map((e) => [e.type, e.data])
    expect(tail).toEqual([
      ['step/end', { turn: 2, step: 2 }],
      ['turn/end', { turn: 2, reason: { kind: 'interrupted' } }],
      // Nothing else runs in this harness: the continuation runs alone, and a crash of it would count.
      ['session/continued-alone', { continues: 2 }],
      ['turn/start', { turn: 3, continues: 2 }],
      ['turn/end', { turn: 3, reason: { kind: 'completed' } }],
    ])
    await harness.close()
  })
})

describe('DURABLE-RESTORE: no prompt is ever swallowed', () => {
  it('a prompt claimed by a turn that crashed before its user/message goes back to the head of the inbox (restores: SEQ), also under close', async () => {
    const original = await originalRun()
    // The second turn's claim of "two", cut right after it.
    const turn2 = original.events.findIndex((e) => e.type === 'turn/start' && turnOf(e) === 2)
    const claim = original.events.findIndex((e, i) => i > turn2 && e.type === 'agent/inbox/spliced')
    for (const interrupted of ['close', 'continue'] as const) {
      const store = new MemoryStore()
      await (await store.create(original.header, original.events.slice(0, claim + 1))).close()
      const harness = createHarness({ store, adapters: [model('r')], tools: tools([]), onListenerError: () => {} })
      const agent = await harness.resumeAgent('durable', { provider: 'scripted', model: 'm1', interrupted })
      const restore = agent.session.events.find((e) => e.type === 'agent/inbox/spliced' && (e.data as { restores?: number }).restores !== undefined)
      expect(restore?.data).toMatchObject({ target: 'next-turn', start: 0, restores: claim, inserted: [{ content: [{ type: 'text', text: 'two' }] }] })
      if (interrupted === 'close') {
        expect(agent.inbox.nextTurn.map((m) => m.content)).toEqual([[{ type: 'text', text: 'two' }]])
        agent.followup('three')
      }
      await agent.whenIdle()
      const events = agent.session.events
      expectAllAnsweredOnce(events, sentInput(events), interrupted, interrupted === 'continue')
      const prompts = events.filter((e) => e.type === 'user/message').map((e) => JSON.stringify((e.data as { content: unknown }).content))
      expect(prompts.filter((p) => p.includes('"two"'))).toHaveLength(1)
      await harness.close()
      // Resuming the repaired log again restores nothing twice.
      const again = createHarness({ store: new MemoryStore(), adapters: [model('q')], tools: tools([]), onListenerError: () => {} })
      await (await again.store.create(original.header, events)).close()
      const agent2 = await again.resumeAgent('durable', { provider: 'scripted', model: 'm1' })
      expect(agent2.session.length).toBe(events.length)
      await again.close()
    }
  })
})

describe('DURABLE-QUARANTINE: poison work stops after K interruptions in a row', () => {
  it('a tool that kills its process every time: quarantined after 3 interruptions (the original counts), refused without force, lifted with it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'll-poison-'))
    // The "kill": the store is closed under the agent while the poison body hangs, so the log ends after its
    // tool/call, as a process killed inside the body leaves it.
    const poison = defineTool({ name: 'poison', description: 'dies', parameters: z.object({}), execute: () => new Promise<string>(() => {}) })
    const poisoned = scriptedAdapter({
      script: (request: GenerateOptions) => ({ toolCalls: [{ id: `p${request.messages.length}`, name: 'poison', arguments: {} }] }),
      models: { m1: { contextWindow: 100_000 } },
    })
    const life = async (open: (h: ReturnType<typeof createHarness>) => Promise<Agent>): Promise<string | undefined> => {
      const store = new JsonlStore({ dir })
      const harness = createHarness({ store, adapters: [poisoned], tools: [poison], onListenerError: () => {} })
      try {
        const agent = await open(harness)
        for (let i = 0; i < 500 && agent.session.events.at(-1)?.type !== 'tool/call'; i++) await new Promise((r) => setTimeout(r, 2))
        expect(agent.session.events.at(-1)?.type).toBe('tool/call')
        return undefined
      } catch (error) {
        return (error as { code?: string }).code
      } finally {
        await store.close()
      }
    }
    try {
      expect(await life(async (h) => {
        const agent = await h.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'poisoned' })
        agent.followup('go')
        return agent
      })).toBeUndefined()
      expect(await life((h) => h.resumeAgent('poisoned'))).toBeUndefined() // interruption 1 → continuation (turn 2)
      expect(await life((h) => h.resumeAgent('poisoned'))).toBeUndefined() // interruption 2 → continuation (turn 3)
      expect(await life((h) => h.resumeAgent('poisoned'))).toBe('SESSION_QUARANTINED') // interruption 3: quarantined
      const stored = await new JsonlStore({ dir }).read('poisoned')
      expect(stored.events.find((e) => e.type === 'session/quarantined')?.data).toMatchObject({ turn: 3, interruptions: [1, 2, 3] })
      expect(verifySessionLog(stored.events).problems).toEqual([])
      expect(await life((h) => h.resumeAgent('poisoned'))).toBe('SESSION_QUARANTINED') // still refused
      expect(await life((h) => h.resumeAgent('poisoned', { force: true }))).toBeUndefined() // lifted: continued once more
      const after = await new JsonlStore({ dir }).read('poisoned')
      expect(after.events.filter((e) => e.type === 'session/quarantine-lifted')).toHaveLength(1)
      expect(after.events.filter((e) => e.type === 'turn/start').at(-1)?.data).toEqual({ turn: 4, continues: 3 })
      // Counted afresh after the lift: one more crash is the first in a row, so the work is continued again.
      expect(await life((h) => h.resumeAgent('poisoned'))).toBeUndefined()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('DURABLE-KEYS: submission keys make a retried send idempotent', () => {
  it('followup/steer with a key already in the log is ignored (false, agent/inbox/duplicate); run with it resolves with the original turn, across a resume', async () => {
    const store = new MemoryStore()
    const runs: Run[] = []
    const harness = createHarness({ store, adapters: [model('k')], tools: tools(runs), onListenerError: () => {} })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'keyed' })
    const duplicates: string[] = []
    harness.hooks.on('agent/inbox/duplicate', ({ key }) => void duplicates.push(key))
    const first = await agent.run('book the room', { key: 'req-1' })
    expect(first.reason.kind).toBe('completed')
    expect(agent.followup('book the room', { key: 'req-1' })).toBe(false)
    expect(agent.steer('book the room', { key: 'req-1' })).toBe(false)
    const again = await agent.run('book the room', { key: 'req-1' })
    expect(again.turn).toBe(first.turn)
    expect(again.events).toEqual(first.events)
    expect(duplicates).toEqual(['req-1', 'req-1'])
    expect(agent.session.events.filter((e) => e.type === 'turn/start')).toHaveLength(1)
    expect(() => agent.followup('x', { key: '' })).toThrow(/submission key/)
    await harness.close()
    // The key is in the log: a resumed agent (another process) still knows it.
    const later = createHarness({ store: await storeWith(agent.session.events, agent.session.header), adapters: [model('k2')], tools: tools([]), onListenerError: () => {} })
    const resumed = await later.resumeAgent('keyed', { provider: 'scripted', model: 'm1' })
    expect(resumed.followup('book the room', { key: 'req-1' })).toBe(false)
    const retried = await resumed.run('book the room', { key: 'req-1' })
    expect(retried.turn).toBe(first.turn)
    expect(resumed.followup('book another', { key: 'req-2' })).toBe(true)
    await resumed.whenIdle()
    expect(resumed.session.events.filter((e) => e.type === 'turn/start')).toHaveLength(2)
    await later.close()
  })

  it('a run retried with its key after a crash that interrupted its turn resolves with the continuation', async () => {
    const store = new MemoryStore()
    const harness = createHarness({ store, adapters: [model('c')], tools: tools([]), onListenerError: () => {} })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'crashed-keyed' })
    await agent.run('one', { key: 'k-one' })
    const events = agent.session.events
    await harness.close()
    // Cut inside the turn, after its first tool/call: the crash.
    const cut = events.findIndex((e) => e.type === 'tool/call') + 1
    const later = createHarness({ store: await storeWith(events.slice(0, cut), agent.session.header), adapters: [model('r')], tools: tools([]), onListenerError: () => {} })
    const resumed = await later.resumeAgent('crashed-keyed', { provider: 'scripted', model: 'm1' })
    const result = await resumed.run('one', { key: 'k-one' })
    expect(result.turn).toBe(2)
    expect(result.reason.kind).toBe('completed')
    await later.close()
  })
})

async function storeWith(events: readonly SessionEvent[], header: Parameters<SessionStore['create']>[0]): Promise<MemoryStore> {
  const store = new MemoryStore()
  await (await store.create(header, events.map((e) => ({ ...e })) as SessionEvent[])).close()
  return store
}
