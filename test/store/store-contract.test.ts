import fc from 'fast-check'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createHarness,
  defineTool,
  invariantPlugin,
  scriptedAdapter,
  Session,
  verifySessionLog,
  type Harness,
  type ScriptStep,
  type SessionEvent,
  type SessionStore,
} from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { echoTool } from '../support/loop-fixture.js'
import { arbitraryStoredLog } from './chunk-arbitraries.js'
import { STORE_KINDS, type StoreKit } from './store-kits.js'

/** Events of a small balanced-free log (log-only types only): enough to test storage mechanics. */
function titleEvents(id: string, count: number): { session: Session; events: SessionEvent[] } {
  const session = new Session({ id })
  for (let i = 0; i < count; i++) session.append('session/title', { title: `t${i}` })
  return { session, events: [...session.events] }
}

async function expectCode(promise: Promise<unknown>, code: string): Promise<Error> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error, `expected ${code}`).toBeInstanceOf(Error)
  expect((error as { code?: string }).code).toBe(code)
  return error as Error
}


/** A model that calls echo once per turn, then answers in chunks. */
function echoModel(prefix: string): ReturnType<typeof scriptedAdapter> {
  return scriptedAdapter({
    script: (request: GenerateOptions, index: number): ScriptStep => {
      const last = request.messages[request.messages.length - 1]
      if (last?.content[0]?.type === 'tool-result') return { text: ['do', 'ne', ' wi', 'th ', 'it'] }
      return { toolCalls: [{ id: `${prefix}-${index}`, name: 'echo', arguments: { text: `${prefix}${index}` } }] }
    },
    models: { m1: { contextWindow: 10_000, defaultMaxTokens: 100 } },
  })
}

function harnessOver(store: SessionStore, prefix = 'x'): {
  harness: Harness
  model: ReturnType<typeof scriptedAdapter>
  calls: string[]
} {
  const calls: string[] = []
  const model = echoModel(prefix)
  const harness = createHarness({ store, adapters: [model], tools: [echoTool(calls)], plugins: [invariantPlugin()], onListenerError: () => {} })
  return { harness, model, calls }
}

const types = (events: readonly SessionEvent[]): string[] => events.map((e) => e.type)

describe.each(STORE_KINDS)('store contract: $name', (kind) => {
  let kit: StoreKit
  beforeAll(async () => {
    await kind.setup?.()
  })
  afterAll(async () => {
    await kind.teardown?.()
  })
  beforeEach(() => {
    kit = kind.make()
  })
  afterEach(async () => {
    await kit.cleanup()
  })

  it('create, append, flush, read, has, list', async () => {
    const { session, events } = titleEvents('s1', 5)
    expect(await kit.store.has('s1')).toBe(false)
    const writer = await kit.store.create(session.header)
    for (const e of events) writer.append(e)
    await writer.flush()
    expect(await kit.store.has('s1')).toBe(true)
    const read = await kit.store.read('s1')
    expect(read.header).toEqual(session.header)
    expect(read.events.map((e) => JSON.stringify(e))).toEqual(events.map((e) => JSON.stringify(e)))
    const list = await kit.store.list()
    expect(list.map((s) => s.id)).toEqual(['s1'])
    expect(list[0]?.createdAt).toBe(session.header.createdAt)
    await writer.close()
  })

  it('create with a seed stores it', async () => {
    const { session, events } = titleEvents('seeded', 3)
    const writer = await kit.store.create(session.header, events)
    await writer.close()
    expect(types((await kit.another().read('seeded')).events)).toEqual(['session/title', 'session/title', 'session/title'])
  })

  it('SESSION_EXISTS for a taken id, SESSION_NOT_FOUND for a missing one', async () => {
    const { session } = titleEvents('dup', 0)
    await (await kit.store.create(session.header)).close()
    await expectCode(kit.store.create(session.header), 'SESSION_EXISTS')
    await expectCode(kit.another().create(session.header), 'SESSION_EXISTS')
    await expectCode(kit.store.open('missing'), 'SESSION_NOT_FOUND')
    await expectCode(kit.store.read('missing'), 'SESSION_NOT_FOUND')
  })

  it('SESSION_LOCKED for a second writer, until the first closes', async () => {
    const { session } = titleEvents('locked', 0)
    const writer = await kit.store.create(session.header)
    const error = await expectCode(kit.another().open('locked'), 'SESSION_LOCKED')
    if (kit.durable) expect(error.message).toContain(String(process.pid))
    await writer.close()
    const reopened = await kit.another().open('locked')
    await expectCode(kit.store.open('locked'), 'SESSION_LOCKED')
    await reopened.writer.close()
  })

  it('a flushed append is durable: a new store instance reads it while the writer is still open', async () => {
    const { session, events } = titleEvents('durable', 4)
    const writer = await kit.store.create(session.header)
    for (const e of events.slice(0, 2)) writer.append(e)
    await writer.flush()
    expect((await kit.another().read('durable')).events).toHaveLength(2)
    for (const e of events.slice(2)) writer.append(e)
    await Promise.all([writer.flush(), writer.flush()])
    expect((await kit.another().read('durable')).events).toHaveLength(4)
    await writer.close()
  })

  it('seq continuity: an append must carry the next seq, also after reopening', async () => {
    const { session, events } = titleEvents('seqs', 3)
    const writer = await kit.store.create(session.header)
    expect(() => writer.append(events[1] as SessionEvent)).toThrow(expect.objectContaining({ code: 'SESSION_CORRUPT' }))
    writer.append(events[0] as SessionEvent)
    writer.append(events[1] as SessionEvent)
    await writer.close()
    expect(() => writer.append(events[2] as SessionEvent)).toThrow(expect.objectContaining({ code: 'SESSION_CLOSED' }))
    const opened = await kit.another().open('seqs')
    expect(opened.events).toHaveLength(2)
    expect(() => opened.writer.append(events[0] as SessionEvent)).toThrow(expect.objectContaining({ code: 'SESSION_CORRUPT' }))
    opened.writer.append(events[2] as SessionEvent)
    await opened.writer.close()
    expect((await kit.store.read('seqs')).events).toHaveLength(3)
  })

  it('harness round trip: create → turn with a tool → close → new harness → resume → another turn', async () => {
    const first = harnessOver(kit.store)
    const agent = await first.harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'trip' })
    agent.followup('go')
    await agent.whenIdle()
    expect(first.calls).toEqual(['x0'])
    // Queue input without waking, then let the store go as a dying process would (flushed, not disposed).
    agent.inject('queued for later')
    await first.harness.store.close()

    const second = harnessOver(kit.another(), 'y')
    const resumed = await second.harness.resumeAgent('trip')
    expect(resumed.session.lastTurn).toBe(1)
    expect(resumed.inbox.nextStep.map((m) => m.content[0])).toEqual([{ type: 'text', text: 'queued for later' }])
    const before = resumed.session.length
    resumed.followup('again')
    await resumed.whenIdle()
    const added = resumed.session.events.slice(before)
    expect(added.find((e) => e.type === 'turn/start')?.data).toEqual({ turn: 2 })
    expect(added.find((e) => e.type === 'request/header')?.data).toMatchObject({ reason: 'resume' })
    const firstRequest = second.model.requests[0]
    expect(firstRequest?.messages.some((m) => m.content.some((c) => c.type === 'text' && c.text === 'queued for later'))).toBe(true)
    expect(second.calls).toEqual(['y0'])
    await second.harness.close()

    const stored = await kit.another().read('trip')
    expect(verifySessionLog(stored.events).problems).toEqual([])
    expect(stored.events.filter((e) => e.type === 'turn/end').map((e) => e.data)).toEqual([
      { turn: 1, reason: { kind: 'completed' } },
      { turn: 2, reason: { kind: 'completed' } },
    ])
  })

  it('resume repairs a turn left open: TOOL_OUTCOME_UNKNOWN, TOOL_NOT_STARTED, step/end, turn/end interrupted — durably', async () => {
    let release: (() => void) | undefined
    const hanging = defineTool({
      name: 'slow',
      description: 'Never finishes its first call',
      parameters: z.object({}),
      execute: () => new Promise<string>((resolve) => (release = () => resolve('late'))),
    })
    const model = scriptedAdapter({
      script: [{ toolCalls: [{ id: 'started', name: 'slow', arguments: {} }, { id: 'never', name: 'slow', arguments: {} }] }],
      models: { m1: { contextWindow: 10_000 } },
    })
    const crashed = createHarness({ store: kit.store, adapters: [model], tools: [hanging], onListenerError: () => {} })
    const agent = await crashed.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'open-turn' })
    agent.followup('go')
    await waitUntil(() => release !== undefined)
    await kit.store.close() // the process "dies" here: the turn is open, the first call is running
    const open = await kit.another().read('open-turn')
    expect(types(open.events).slice(-2)).toEqual(['assistant/message', 'tool/call'])
    const callSeq = (open.events[open.events.length - 1] as SessionEvent).seq

    const second = harnessOver(kit.another())
    const resumed = await second.harness.resumeAgent('open-turn', { interrupted: 'close' })
    const repaired = (await kit.another().read('open-turn')).events.slice(open.events.length)
    expect(types(repaired)).toEqual(['tool/result', 'tool/result', 'step/end', 'turn/end'])
    expect(repaired[0]?.data).toMatchObject({ error: { code: 'TOOL_OUTCOME_UNKNOWN' }, message: { source: { callId: 'started' } } })
    expect(repaired[0]?.sourceEventSeqs).toEqual([callSeq])
    expect(repaired[1]?.data).toMatchObject({ error: { code: 'TOOL_NOT_STARTED' }, message: { source: { callId: 'never' } } })
    expect(repaired[3]?.data).toEqual({ turn: 1, reason: { kind: 'interrupted' } })
    resumed.followup('continue')
    await resumed.whenIdle()
    await second.harness.close()
    const final = await kit.another().read('open-turn')
    expect(verifySessionLog(final.events).problems).toEqual([])
    expect(final.events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)).toEqual(['interrupted', 'completed'])
  })

  it('fork: the child holds the prefix and session/end-seed, with lineage in its header; refused inside a turn', async () => {
    const { harness } = harnessOver(kit.store)
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'parent' })
    agent.followup('one')
    await agent.whenIdle()
    agent.followup('two')
    await agent.whenIdle()
    const events = agent.session.events
    const firstEnd = events.findIndex((e) => e.type === 'turn/end')
    const insideTurn = events.findIndex((e) => e.type === 'step/start')
    await expectCode(harness.forkSession('parent', { at: insideTurn }), 'OPEN_TURN')
    const childId = await harness.forkSession('parent', { at: firstEnd, childId: 'child' })
    expect(childId).toBe('child')
    const child = await kit.another().read('child')
    expect(child.header).toMatchObject({ parentSession: 'parent', seedLength: firstEnd + 1 })
    expect(child.events.slice(0, firstEnd + 1).map((e) => JSON.stringify(e))).toEqual(events.slice(0, firstEnd + 1).map((e) => JSON.stringify(e)))
    expect(types(child.events.slice(firstEnd + 1))).toEqual(['session/end-seed'])
    expect((await kit.store.list()).find((s) => s.id === 'child')?.parentSession).toBe('parent')
    const resumed = await harness.resumeAgent('child')
    resumed.followup('three')
    await resumed.whenIdle()
    expect(resumed.session.events.filter((e) => e.type === 'turn/start').map((e) => e.data)).toEqual([{ turn: 1 }, { turn: 2 }])
    await harness.close()
  })

  it('list pages newest first with the total, and searches titles and first prompts (any case) and id prefixes', async () => {
    const { harness } = harnessOver(kit.store)
    for (const [id, prompt] of [
      ['p1', 'fix the parser'],
      ['p2', 'write the docs'],
      ['p3', 'fix the lexer'],
    ] as const) {
      const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: id })
      agent.followup(prompt)
      await agent.whenIdle()
      await agent.dispose()
      await new Promise((resolve) => setTimeout(resolve, 5)) // distinct update times: the order is by them
    }
    const store = kit.another()
    const all = await store.list()
    expect(all.map((s) => [s.id, s.title])).toEqual([
      ['p3', 'fix the lexer'],
      ['p2', 'write the docs'],
      ['p1', 'fix the parser'],
    ])
    expect(all.total).toBe(3)
    const page = await store.list({ limit: 1, offset: 1 })
    expect(page.map((s) => s.id)).toEqual(['p2'])
    expect(page.total).toBe(3)
    const fixes = await store.list({ search: 'FIX', limit: 1 })
    expect(fixes.map((s) => s.id)).toEqual(['p3'])
    expect(fixes.total).toBe(2)
    expect((await store.list({ search: 'p1' })).map((s) => s.id)).toEqual(['p1'])
    expect((await store.list({ search: 'nothing like it' })).total).toBe(0)
    expect(await store.list({ offset: 5 })).toEqual([])
  })

  it('a sub-agent header (parent session, parent call, profile, depth) survives a reload and shows in list()', async () => {
    const header = { version: 1, id: 'kid', createdAt: 1_700_000_000_000, cwd: '/w', parentSession: 'parent', parentCallId: 'call-7', agentProfile: 'reader', delegationDepth: 1 }
    const writer = await kit.store.create(header, titleEvents('kid', 2).events)
    await writer.close()
    expect((await kit.another().read('kid')).header).toEqual(header)
    expect((await kit.another().list()).find((s) => s.id === 'kid')).toMatchObject({ parentSession: 'parent', parentCallId: 'call-7', agentProfile: 'reader', delegationDepth: 1 })
  })

  it('stored events round-trip byte-identically, chunk runs included (property)', async () => {
    let n = 0
    await fc.assert(
      // Framed as one turn's step: loading judges the log grammar (issue 22), so chunks outside a step are refused.
      fc.asyncProperty(arbitraryStoredLog({ inOneStep: true }), async (events) => {
        const id = `prop-${n++}`
        const session = new Session({ id })
        const writer = await kit.store.create(session.header)
        for (const e of events) writer.append(e)
        await writer.close()
        const read = await kit.another().read(id)
        expect(read.events.map((e) => JSON.stringify(e))).toEqual(events.map((e) => JSON.stringify(e)))
      }),
      { numRuns: 25, seed: 5 },
    )
  })
})

async function waitUntil(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((r) => setTimeout(r, 2))
  expect(condition()).toBe(true)
}
