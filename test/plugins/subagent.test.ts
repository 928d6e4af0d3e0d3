import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  createHarness,
  defineTool,
  invariantPlugin,
  JsonlStore,
  MemoryStore,
  scriptedAdapter,
  subagentTool,
  verifySessionLog,
  type Agent,
  type GenerateOptions,
  type Harness,
  type HarnessOptions,
  type ScriptStep,
  type SessionEvent,
  type SessionStore,
  type SubagentToolOptions,
} from '../../src/index.js'
import { echoTool } from '../support/loop-fixture.js'

type ResultData = { error?: { code: string }; meta?: Record<string, unknown>; message: { content: { content: { text: string }[]; isError?: boolean; toolCallId: string }[] } }
const result = (e: SessionEvent | undefined): ResultData => e?.data as ResultData
const resultText = (e: SessionEvent | undefined): string | undefined => result(e).message.content[0]?.content[0]?.text
const turnEnds = (events: readonly SessionEvent[]): unknown[] => events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: unknown }).reason)
const ofType = (events: readonly SessionEvent[], type: string): SessionEvent[] => events.filter((e) => e.type === type)

/** The task text a child was given (its first user message), or undefined for a top-level request. */
function taskOf(request: GenerateOptions): string | undefined {
  if (!(request.system ?? '').includes('You are a sub-agent')) return undefined
  const first = request.messages.find((m) => m.role === 'user')
  const block = first?.content[0]
  return block?.type === 'text' ? block.text : undefined
}

const lastIsToolResult = (request: GenerateOptions): boolean => request.messages[request.messages.length - 1]?.content[0]?.type === 'tool-result'

interface Fixture {
  harness: Harness
  parent: Agent
  store: SessionStore
  model: ReturnType<typeof scriptedAdapter>
  /** Requests the parent sent. */
  parentRequests(): GenerateOptions[]
  /** Stored child sessions of the parent, by profile-independent task order of creation. */
  children(): Promise<{ id: string; header: Record<string, unknown>; events: SessionEvent[] }[]>
}

const cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c()
})

async function fixture(
  script: (request: GenerateOptions, index: number) => ScriptStep,
  options: { tools?: HarnessOptions['tools']; subagent?: SubagentToolOptions; store?: SessionStore; system?: string; extraAdapters?: ReturnType<typeof scriptedAdapter>[] } = {},
): Promise<Fixture> {
  const store = options.store ?? new MemoryStore()
  const model = scriptedAdapter({ script, models: { m1: { contextWindow: 10_000, defaultMaxTokens: 100 } } })
  const harness = createHarness({
    store,
    adapters: [model, ...(options.extraAdapters ?? [])],
    tools: [subagentTool(options.subagent), ...(options.tools ?? [])],
    plugins: [invariantPlugin()],
    ...(options.system !== undefined ? { system: options.system } : {}),
    onListenerError: (error) => {
      throw error
    },
  })
  cleanups.push(() => harness.close())
  const parent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'parent' })
  return {
    harness,
    parent,
    store,
    model,
    parentRequests: () => model.requests.filter((r) => r.sessionId === 'parent'),
    async children() {
      const rows = (await store.list()).filter((s) => s.parentSession === 'parent').sort((a, b) => a.createdAt - b.createdAt)
      return Promise.all(
        rows.map(async (row) => {
          const stored = await store.read(row.id)
          return { id: row.id, header: stored.header as unknown as Record<string, unknown>, events: stored.events }
        }),
      )
    },
  }
}

/** A tool whose calls wait until `count` of them have arrived: proves they overlap (a serial run would hang). */
function meetingTool(count: number, seen: string[]) {
  let arrived = 0
  let open!: () => void
  const all = new Promise<void>((resolve) => (open = resolve))
  return defineTool({
    name: 'meet',
    description: 'Waits for the others',
    parameters: z.object({ who: z.string() }),
    concurrencySafe: true,
    execute: async ({ who }) => {
      seen.push(who)
      if (++arrived === count) open()
      await all
      return `met as ${who}`
    },
  })
}

describe('subagentTool (issue 17)', () => {
  it('SUBAGENT-PARALLEL: one parent call spawns two children that run side by side, each using a tool; results come back in model order', async () => {
    const seen: string[] = []
    const f = await fixture(
      (request) => {
        const task = taskOf(request)
        if (task === undefined) {
          return lastIsToolResult(request)
            ? { text: 'both done' }
            : {
                toolCalls: [
                  { id: 'call-alpha', name: 'task', arguments: { task: 'alpha' } },
                  { id: 'call-beta', name: 'task', arguments: { task: 'beta' } },
                ],
              }
        }
        if (!lastIsToolResult(request)) return { toolCalls: [{ id: `${task}-meet`, name: 'meet', arguments: { who: task } }], usage: { inputTokens: 10, outputTokens: 2 } }
        // alpha answers slower than beta, so model order is not completion order.
        return { text: [`${task} `, 'answered'], usage: { inputTokens: 20, outputTokens: 3 }, ...(task === 'alpha' ? { delayMs: 20 } : {}) }
      },
      { tools: [meetingTool(2, seen)] },
    )
    f.parent.followup('split the work')
    await f.parent.whenIdle()

    expect(seen.sort()).toEqual(['alpha', 'beta'])
    expect(turnEnds(f.parent.session.events)).toEqual([{ kind: 'completed' }])
    // The parent's next request carries both results, in model order, each the child's final text.
    const second = f.parentRequests()[1] as GenerateOptions
    const results = second.messages.slice(-2).map((m) => m.content[0] as unknown as { type: string; toolCallId: string; content: { text: string }[] })
    expect(results.map((r) => [r.type, r.toolCallId, r.content[0]?.text])).toEqual([
      ['tool-result', 'call-alpha', 'alpha answered'],
      ['tool-result', 'call-beta', 'beta answered'],
    ])
    // Each child: its own session in the same store, linked to the parent call, with a log that verifies.
    const children = await f.children()
    expect(children).toHaveLength(2)
    for (const child of children) {
      expect(child.header).toMatchObject({ parentSession: 'parent', agentProfile: 'default', delegationDepth: 1 })
      expect(verifySessionLog(child.events).problems).toEqual([])
      expect(turnEnds(child.events)).toEqual([{ kind: 'completed' }])
      expect(ofType(child.events, 'tool/call').map((e) => (e.data as { name: string }).name)).toEqual(['meet'])
    }
    expect(children.map((c) => c.header.parentCallId).sort()).toEqual(['call-alpha', 'call-beta'])
    // The result's log-only meta names the child, its end reason and its usage.
    const metas = ofType(f.parent.session.events, 'tool/result').map((e) => result(e).meta)
    const alpha = children.find((c) => c.header.parentCallId === 'call-alpha')
    expect(metas[0]).toEqual({ childSession: alpha?.id, profile: 'default', reason: 'completed', steps: 2, usage: { inputTokens: 30, outputTokens: 5 } })
    expect(verifySessionLog(f.parent.session.events).problems).toEqual([])
    // Children were disposed when their call ended: their locks are free again.
    const reopened = await f.store.open(alpha?.id as string)
    await reopened.writer.close()
  })

  it('SUBAGENT-CANCEL: cancelling the parent while both children hang aborts all three turns with the right causes', async () => {
    let hanging = 0
    let bothHang!: () => void
    const ready = new Promise<void>((resolve) => (bothHang = resolve))
    const f = await fixture((request) => {
      if (taskOf(request) === undefined) {
        return lastIsToolResult(request)
          ? { text: 'should not be asked' }
          : { toolCalls: [{ id: 'c1', name: 'task', arguments: { task: 'one' } }, { id: 'c2', name: 'task', arguments: { task: 'two' } }] }
      }
      if (++hanging === 2) bothHang()
      return { hang: true }
    })
    f.parent.followup('go')
    await ready
    f.parent.cancel()
    await f.parent.whenIdle()

    expect(turnEnds(f.parent.session.events)).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    const children = await f.children()
    expect(children).toHaveLength(2)
    for (const child of children) {
      expect(turnEnds(child.events)).toEqual([{ kind: 'aborted', reason: { kind: 'parent' } }])
      expect(verifySessionLog(child.events).problems).toEqual([])
    }
    const results = ofType(f.parent.session.events, 'tool/result')
    expect(results.map((r) => result(r).error?.code)).toEqual(['SUBAGENT_ABORTED', 'SUBAGENT_ABORTED'])
    expect(resultText(results[0])).toMatch(/aborted \(this turn was cancelled\)/)
    expect(f.parentRequests()).toHaveLength(1)
    expect(verifySessionLog(f.parent.session.events).problems).toEqual([])
  })

  it('SUBAGENT-FAILURE: a child that fails gives an error result that says so, and the parent completes its turn', async () => {
    const f = await fixture((request) => {
      if (taskOf(request) === undefined) return lastIsToolResult(request) ? { text: 'coped' } : { toolCalls: [{ id: 'c1', name: 'task', arguments: { task: 'doomed' } }] }
      return { error: { code: 'SERVER', message: 'upstream exploded', status: 503 } }
    })
    f.parent.followup('go')
    await f.parent.whenIdle()
    const r = ofType(f.parent.session.events, 'tool/result')[0]
    expect(result(r).error?.code).toBe('SUBAGENT_FAILED')
    expect(resultText(r)).toMatch(/^Error: the sub-agent \(profile 'default', session \S+\) ended with an error: SERVER: upstream exploded/)
    expect(result(r).meta).toMatchObject({ reason: 'error' })
    expect(turnEnds(f.parent.session.events)).toEqual([{ kind: 'completed' }])
    const [child] = await f.children()
    expect(turnEnds(child?.events ?? [])).toMatchObject([{ kind: 'error', error: { code: 'SERVER' } }])
  })

  it('an unknown profile is an error result naming the known ones; no child session is created', async () => {
    const f = await fixture(
      (request) => (lastIsToolResult(request) ? { text: 'ok' } : { toolCalls: [{ id: 'c1', name: 'task', arguments: { task: 'x', agent: 'wizard' } }] }),
      { subagent: { agents: { reader: { tools: [] } } } },
    )
    f.parent.followup('go')
    await f.parent.whenIdle()
    const r = ofType(f.parent.session.events, 'tool/result')[0]
    expect(result(r).error?.code).toBe('UNKNOWN_AGENT_PROFILE')
    expect(resultText(r)).toBe("Error: unknown agent profile 'wizard'; known profiles: default, reader")
    expect(await f.children()).toEqual([])
  })

  it('a profile sets tools, persona, route and step budget; the rest comes from the parent', async () => {
    const other = scriptedAdapter({
      provider: 'other',
      script: (request) => (lastIsToolResult(request) ? { text: 'never' } : { toolCalls: [{ id: 'o1', name: 'echo', arguments: { text: 'hi' } }, { id: 'o2', name: 'meet', arguments: { who: 'x' } }] }),
    })
    const echoed: unknown[] = []
    const f = await fixture(
      (request) =>
        taskOf(request) === 'plain'
          ? { text: 'plain answer' }
          : lastIsToolResult(request)
          ? { text: 'done' }
          : {
              toolCalls: [
                { id: 'c1', name: 'task', arguments: { task: 'narrow', agent: 'narrow' } },
                { id: 'c2', name: 'task', arguments: { task: 'plain' } },
              ],
            },
      {
        system: 'You are the parent.',
        tools: [echoTool(echoed, { concurrencySafe: true }), meetingTool(99, [])],
        extraAdapters: [other],
        subagent: { agents: { narrow: { system: 'You only echo.', tools: ['echo'], provider: 'other', model: 'o1', maxSteps: 1 } } },
      },
    )
    f.parent.followup('go')
    await f.parent.whenIdle()

    // The narrow child: its route, its persona instead of the parent's, only the tools its profile lists.
    const narrow = other.requests[0] as GenerateOptions
    expect([narrow.provider, narrow.model]).toEqual(['other', 'o1'])
    expect(narrow.system).toContain('You only echo.')
    expect(narrow.system).not.toContain('You are the parent.')
    expect((narrow.tools ?? []).map((t) => t.name)).toEqual(['echo'])
    // A tool outside the profile is not callable either; the budget stops the second step.
    const children = await f.children()
    const narrowLog = children.find((c) => c.header.agentProfile === 'narrow')?.events ?? []
    expect(ofType(narrowLog, 'tool/result').map((e) => result(e).error?.code)).toEqual([undefined, 'UNKNOWN_TOOL'])
    expect(echoed).toEqual(['hi'])
    expect(turnEnds(narrowLog)).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'sub-agent budget: more than 1 steps' } }])
    expect(ofType(narrowLog, 'budget/exceeded').map((e) => e.data)).toEqual([{ turn: 1, budget: 'steps', limit: 1, used: 1 }])
    // The default child: parent's route and persona, every harness tool (and, at depth 1 < 2, the task tool).
    const plain = f.model.requests.find((r) => taskOf(r) === 'plain') as GenerateOptions
    expect([plain.provider, plain.model]).toEqual(['scripted', 'm1'])
    expect(plain.system).toContain('You are the parent.')
    expect((plain.tools ?? []).map((t) => t.name)).toEqual(['echo', 'meet', 'task'])
    const parentResults = ofType(f.parent.session.events, 'tool/result')
    expect(parentResults.map((e) => result(e).error?.code)).toEqual(['SUBAGENT_ABORTED', undefined])
    expect(resultText(parentResults[0])).toMatch(/aborted \(sub-agent budget: more than 1 steps\)/)
  })

  it('SUBAGENT-DEPTH: the tool is offered while depth < maxDepth and then simply not offered', async () => {
    const f = await fixture((request) => {
      const task = taskOf(request)
      if (lastIsToolResult(request)) return { text: `answer ${task ?? 'top'}` }
      if (task === undefined) return { toolCalls: [{ id: 'top', name: 'task', arguments: { task: 'level1' } }] }
      if (task === 'level1') return { toolCalls: [{ id: 'mid', name: 'task', arguments: { task: 'level2' } }] }
      return { text: 'leaf answer' }
    })
    f.parent.followup('go')
    await f.parent.whenIdle()
    const toolsOf = (task: string | undefined): string[] => (f.model.requests.find((r) => taskOf(r) === task)?.tools ?? []).map((t) => t.name)
    expect(toolsOf(undefined)).toEqual(['task'])
    expect(toolsOf('level1')).toEqual(['task'])
    expect(toolsOf('level2')).toEqual([])
    const all = await f.store.list()
    const grandchild = all.find((s) => s.delegationDepth === 2)
    expect(grandchild).toMatchObject({ parentCallId: 'mid', agentProfile: 'default' })
    expect(all.find((s) => s.id === grandchild?.parentSession)).toMatchObject({ parentSession: 'parent', parentCallId: 'top', delegationDepth: 1 })
    expect(turnEnds(f.parent.session.events)).toEqual([{ kind: 'completed' }])
    expect(resultText(ofType(f.parent.session.events, 'tool/result')[0])).toBe('answer level1')

    const shallow = await fixture((request) => (lastIsToolResult(request) ? { text: 'x' } : { text: 'no tools here' }), { subagent: { maxDepth: 0 } })
    shallow.parent.followup('go')
    await shallow.parent.whenIdle()
    expect(shallow.model.requests[0]?.tools).toBeUndefined()
  })

  it('closing the harness disposes running children first; the parent asks the model nothing more', async () => {
    let started!: () => void
    const childHangs = new Promise<void>((resolve) => (started = resolve))
    const f = await fixture((request) => {
      if (taskOf(request) === undefined) return lastIsToolResult(request) ? { text: 'too late' } : { toolCalls: [{ id: 'c1', name: 'task', arguments: { task: 'slow' } }] }
      started()
      return { hang: true }
    })
    f.parent.followup('go')
    await childHangs
    await f.harness.close()
    const [child] = await f.children()
    expect(turnEnds(child?.events ?? [])).toEqual([{ kind: 'aborted', reason: { kind: 'disposed' } }])
    expect(turnEnds(f.parent.session.events)).toEqual([{ kind: 'aborted', reason: { kind: 'disposed' } }])
    expect(f.parentRequests()).toHaveLength(1)
  })
})

describe('sub-agents across a crash (issue 17)', () => {
  it('SUBAGENT-CRASH: the parent is repaired with TOOL_OUTCOME_UNKNOWN, the child on its own, and resumeAgent of either works', async () => {
    const root = mkdtempSync(join(tmpdir(), 'll-subagent-'))
    cleanups.push(() => rmSync(root, { recursive: true, force: true }))
    const live = join(root, 'live')
    const copy = join(root, 'copy')
    mkdirSync(copy, { mode: 0o700 })
    // The child's tool body holds until the test has copied the files: both logs are flushed by then (a tool
    // body runs only after its tool/call is on disk), so the copy is what a kill -9 at that moment leaves.
    let entered!: () => void
    const inBody = new Promise<void>((resolve) => (entered = resolve))
    const hold = defineTool({
      name: 'hold',
      description: 'Holds',
      parameters: z.object({}),
      execute: (_args, { signal }) =>
        new Promise<string>((resolve) => {
          entered()
          signal.addEventListener('abort', () => resolve('released'))
        }),
    })
    const profiles = { agents: { holder: { tools: ['hold'], system: 'You hold things.' } } }
    const f = await fixture(
      (request) => {
        if (taskOf(request) === undefined) return lastIsToolResult(request) ? { text: 'parent done' } : { toolCalls: [{ id: 'p1', name: 'task', arguments: { task: 'hold on', agent: 'holder' } }] }
        return lastIsToolResult(request) ? { text: 'child done' } : { toolCalls: [{ id: 'k1', name: 'hold', arguments: {} }] }
      },
      { store: new JsonlStore({ dir: live }), tools: [hold, echoTool()], subagent: profiles },
    )
    f.parent.followup('go')
    await inBody
    for (const name of readdirSync(live).filter((n) => n.endsWith('.jsonl'))) copyFileSync(join(live, name), join(copy, name))
    await f.harness.close()

    const resumedModel = scriptedAdapter({ script: () => ({ text: 'resumed' }) })
    const after = createHarness({
      store: new JsonlStore({ dir: copy }),
      adapters: [resumedModel],
      tools: [subagentTool(profiles), hold, echoTool()],
      plugins: [invariantPlugin()],
    })
    cleanups.push(() => after.close())
    const rows = await after.store.list()
    const childId = rows.find((s) => s.parentCallId === 'p1')?.id as string
    expect(rows.find((s) => s.id === childId)).toMatchObject({ parentSession: 'parent', agentProfile: 'holder', delegationDepth: 1 })

    const parent = await after.resumeAgent('parent', { provider: 'scripted', model: 'm1', interrupted: 'close' })
    const repairedCall = ofType(parent.session.events, 'tool/result')[0]
    expect(result(repairedCall).error?.code).toBe('TOOL_OUTCOME_UNKNOWN')
    expect(result(repairedCall).message.content[0]?.toolCallId).toBe('p1')
    const child = await after.resumeAgent(childId, { provider: 'scripted', model: 'm1', interrupted: 'close' })
    expect(result(ofType(child.session.events, 'tool/result')[0]).error?.code).toBe('TOOL_OUTCOME_UNKNOWN')
    expect(child.session.header).toMatchObject({ parentSession: 'parent', parentCallId: 'p1', delegationDepth: 1 })
    for (const agent of [parent, child]) {
      agent.followup('after the crash')
      await agent.whenIdle()
      expect(turnEnds(agent.session.events).map((r) => (r as { kind: string }).kind)).toEqual(['interrupted', 'completed'])
      expect(verifySessionLog(agent.session.events).problems).toEqual([])
    }
    // The resumed child got its profile back (tools, persona) from the registered tool; the parent has all tools.
    const [parentRequest, childRequest] = resumedModel.requests
    expect((parentRequest?.tools ?? []).map((t) => t.name)).toEqual(['echo', 'hold', 'task'])
    expect((childRequest?.tools ?? []).map((t) => t.name)).toEqual(['hold'])
    expect(childRequest?.system).toContain('You hold things.')
    expect(childRequest?.system).toContain('You are a sub-agent')
  })
})
