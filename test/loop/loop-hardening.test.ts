import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool, permissionPlugin, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'
import { faultyStore, firstMatches, openAiChatRuleProblem } from '../support/faults.js'

type Fixture = Awaited<ReturnType<typeof loopFixture>>

/** One tool call in the first request, then text for every later request. */
const callOnceThenText = (calls: { name: string; arguments: object }[]) => (_request: unknown, index: number) =>
  index === 0 ? { toolCalls: calls } : { text: `reply ${index}` }

function resultOf(f: Fixture, n = 0): { code?: string; text: string } {
  const data = f.ofType('tool/result')[n]?.data as { error?: { code: string }; message: { content: { content: { text: string }[] }[] } }
  return { ...(data.error !== undefined ? { code: data.error.code } : {}), text: data.message.content[0]?.content[0]?.text ?? '' }
}

/** Every tool/call has exactly one tool/result; every turn/start one turn/end; the log verifies. */
function expectBalanced(f: Fixture): void {
  const events = f.agent.session.events
  expect(verifySessionLog(events)).toEqual({ ok: true, problems: [] })
  const answered = f.ofType('tool/result').map((e) => (e.data as { message: { source: { callId: string } } }).message.source.callId)
  // A call the model made whose tool/call could not be logged is answered TOOL_NOT_STARTED, like crash repair.
  const made = f.ofType('assistant/message').flatMap((e) =>
    (e.data as { message: { content: { type: string; id?: string }[] } }).message.content.flatMap((b) => (b.type === 'tool-call' ? [b.id as string] : [])),
  )
  const called = f.ofType('tool/call').map((e) => (e.data as { callId: string }).callId)
  expect([...answered].sort()).toEqual([...made].sort())
  expect(called.every((id) => answered.includes(id))).toBe(true)
  expect(new Set(answered).size).toBe(answered.length)
  expect(f.ofType('turn/end')).toHaveLength(f.ofType('turn/start').length)
}

/** Runs one more turn and checks its first request against the strict chat-completions rule. */
async function expectNextTurnAccepted(f: Fixture): Promise<void> {
  const before = f.model.requests.length
  f.agent.followup('and now?')
  await f.agent.whenIdle()
  const next = f.model.requests[before]
  expect(next).toBeDefined()
  expect(openAiChatRuleProblem(next?.messages ?? [])).toBeUndefined()
  expect(f.turnEnds().at(-1)).toEqual({ kind: 'completed' })
}

describe('LOOP-HARDENING: no tool call without a result', () => {
  it('a throwing tools/pre-execute listener is a TOOL_HOOK_FAILED result; the turn goes on', async () => {
    const ran: unknown[] = []
    const f = await loopFixture(callOnceThenText([{ name: 'echo', arguments: { text: 'x' } }]), { tools: [echoTool(ran)] })
    f.harness.hooks.on('tools/pre-execute', () => {
      throw new Error('policy broke')
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(resultOf(f)).toEqual({ code: 'TOOL_HOOK_FAILED', text: 'Error: a tools/pre-execute listener failed: Error: policy broke' })
    expect(ran).toEqual([])
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    expect(openAiChatRuleProblem(f.model.requests[1]?.messages ?? [])).toBeUndefined()
    expectBalanced(f)
  })

  it('a throwing tools/post-execute listener is a TOOL_HOOK_FAILED result; the body ran exactly once', async () => {
    const ran: unknown[] = []
    const f = await loopFixture(callOnceThenText([{ name: 'echo', arguments: { text: 'x' } }]), { tools: [echoTool(ran)] })
    f.harness.hooks.on('tools/post-execute', () => {
      throw new Error('audit broke')
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(ran).toEqual(['x'])
    expect(resultOf(f).code).toBe('TOOL_HOOK_FAILED')
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    expectBalanced(f)
  })

  it('an approver that throws denies the call with TOOL_DENIED; the turn goes on', async () => {
    const ran: unknown[] = []
    const ask = async (): Promise<'yes'> => {
      throw new Error('no terminal')
    }
    const f = await loopFixture(callOnceThenText([{ name: 'echo', arguments: { text: 'x' } }]), {
      tools: [echoTool(ran)],
      plugins: [permissionPlugin({ rules: { ask: ['echo'] }, ask })],
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(ran).toEqual([])
    expect(resultOf(f).code).toBe('TOOL_DENIED')
    expect(resultOf(f).text).toContain('no terminal')
    expect(f.ofType('permission/decision').map((e) => e.data)).toMatchObject([{ callId: 'call_1_1', decision: 'deny', by: 'no-approver' }])
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    expectBalanced(f)
  })

  it('a prompt that rejects when the turn is cancelled answers the call ABORTED_BEFORE_DISPATCH; the next turn is valid', async () => {
    const ran: unknown[] = []
    let asked!: () => void
    const question = new Promise<void>((resolve) => (asked = resolve))
    const ask = ({ signal }: { signal: AbortSignal }) =>
      new Promise<'yes'>((_, reject) => {
        asked()
        signal.addEventListener('abort', () => reject(new Error('prompt closed')), { once: true })
      })
    const f = await loopFixture(callOnceThenText([{ name: 'echo', arguments: { text: 'x' } }]), {
      tools: [echoTool(ran)],
      plugins: [permissionPlugin({ rules: { ask: ['echo'] }, ask })],
    })
    f.agent.followup('go')
    await question
    f.agent.cancel()
    await f.agent.whenIdle()
    expect(ran).toEqual([])
    expect(resultOf(f).code).toBe('ABORTED_BEFORE_DISPATCH')
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    expectBalanced(f)
    await expectNextTurnAccepted(f)
  })

  for (const [what, output] of [
    ['a bigint', () => ({ content: [{ type: 'text', text: 'n' }], meta: { n: 10n } })],
    ['a cycle', () => {
      const meta: Record<string, unknown> = {}
      meta.self = meta
      return { content: 'c', meta }
    }],
    ['a function inside a content block', () => ({ content: [{ type: 'text', text: 'f', render: () => 'x' }] })],
    ['a content block of an unknown type', () => ({ content: [{ type: 'video', url: 'x' }] })],
  ] as const) {
    it(`output with ${what} is an INVALID_TOOL_OUTPUT result; the turn goes on`, async () => {
      const weird = defineTool({ name: 'weird', description: 'returns odd output', parameters: z.object({}), execute: output as never })
      const f = await loopFixture(callOnceThenText([{ name: 'weird', arguments: {} }]), { tools: [weird] })
      f.agent.followup('go')
      await f.agent.whenIdle()
      expect(resultOf(f).code).toBe('INVALID_TOOL_OUTPUT')
      expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
      expectBalanced(f)
    })
  }

  it('a vetoed tool/result append: the turn ends error, TOOL_OUTCOME_UNKNOWN answers the call before turn/end, the next request is valid', async () => {
    const ran: unknown[] = []
    const f = await loopFixture(callOnceThenText([{ name: 'echo', arguments: { text: 'x' } }]), { tools: [echoTool(ran)] })
    const veto = firstMatches(1, (e) => e.type === 'tool/result')
    f.harness.hooks.on('session/validate', ({ event }) => {
      if (veto(event)) throw new Error('compliance refused this result')
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(ran).toEqual(['x'])
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { message: expect.stringContaining('compliance refused') } }])
    const types = f.boundaries()
    expect(types.slice(types.indexOf('tool/call'))).toEqual(['tool/call', 'tool/result', 'step/end', 'turn/end'])
    expect(resultOf(f).code).toBe('TOOL_OUTCOME_UNKNOWN')
    expectBalanced(f)
    await expectNextTurnAccepted(f)
    expect(ran).toEqual(['x'])
  })

  it('a store that fails to write the tool/result: the same closers, the next request is valid', async () => {
    const ran: unknown[] = []
    const store = faultyStore(firstMatches(1, (e) => e.type === 'tool/result'))
    const f = await loopFixture(callOnceThenText([{ name: 'echo', arguments: { text: 'x' } }]), { tools: [echoTool(ran)], store })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'STORE_WRITE_FAILED' } }])
    expect(resultOf(f).code).toBe('TOOL_OUTCOME_UNKNOWN')
    expectBalanced(f)
    await expectNextTurnAccepted(f)
    const stored = await store.read(f.agent.id)
    expect(stored.events.map((e) => e.type)).toEqual(f.agent.session.events.map((e) => e.type))
  })
})

describe('LOOP-HARDENING: post-execute at commit, rolling pool', () => {
  it('three parallel calls settling in reverse order see pre- and post-execute in model order', async () => {
    const order: string[] = []
    const slow = defineTool({
      name: 'slow',
      description: 'waits',
      parameters: z.object({ ms: z.number(), tag: z.string() }),
      concurrencySafe: true,
      execute: async ({ ms, tag }) => {
        await new Promise((r) => setTimeout(r, ms))
        order.push(`body ${tag}`)
        return tag
      },
    })
    const f = await loopFixture(
      callOnceThenText([
        { name: 'slow', arguments: { ms: 60, tag: 'a' } },
        { name: 'slow', arguments: { ms: 30, tag: 'b' } },
        { name: 'slow', arguments: { ms: 1, tag: 'c' } },
      ]),
      { tools: [slow] },
    )
    f.harness.hooks.on('tools/pre-execute', ({ call }, next) => {
      order.push(`pre ${(call.arguments as { tag: string }).tag}`)
      return next()
    })
    f.harness.hooks.on('tools/post-execute', ({ call }, next) => {
      order.push(`post ${(call.arguments as { tag: string }).tag}`)
      return next()
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(order).toEqual(['pre a', 'pre b', 'pre c', 'body c', 'body b', 'body a', 'post a', 'post b', 'post c'])
    expect(f.ofType('tool/result').map((e) => (e.data as { message: { source: { callId: string } } }).message.source.callId)).toEqual(['call_1_1', 'call_1_2', 'call_1_3'])
  })

  it('with the pool full, the next call starts as soon as ANY running body settles, not only the oldest', async () => {
    const started: string[] = []
    let releaseA!: () => void
    const aDone = new Promise<void>((r) => (releaseA = r))
    const gate = defineTool({
      name: 'gate',
      description: 'a waits to be released; others return at once',
      parameters: z.object({ tag: z.string() }),
      concurrencySafe: true,
      execute: async ({ tag }) => {
        started.push(tag)
        if (tag === 'a') await aDone
        else if (tag === 'c') releaseA() // c can only start while a still runs if the pool rolls
        return tag
      },
    })
    const f = await loopFixture(
      callOnceThenText([
        { name: 'gate', arguments: { tag: 'a' } },
        { name: 'gate', arguments: { tag: 'b' } },
        { name: 'gate', arguments: { tag: 'c' } },
      ]),
      { tools: [gate], maxParallelToolCalls: 2 },
    )
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(started).toEqual(['a', 'b', 'c'])
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    expect(f.ofType('tool/result').map((e) => (e.data as { message: { source: { callId: string } } }).message.source.callId)).toEqual(['call_1_1', 'call_1_2', 'call_1_3'])
  })
})

describe('LOOP-HARDENING: a refused append never poisons the session', () => {
  for (const type of ['step/start', 'user/message', 'assistant/message', 'tool/call', 'step/end', 'turn/end'] as const) {
    it(`a guard that refuses one '${type}' (invariantPlugin installed): one turn/end, the next followup runs normally`, async () => {
      const f = await loopFixture(callOnceThenText([{ name: 'echo', arguments: { text: 'x' } }]), { tools: [echoTool()] })
      const veto = firstMatches(1, (e: SessionEvent) => e.type === type)
      f.harness.hooks.on('session/validate', ({ event }) => {
        if (veto(event)) throw new Error(`refused ${type}`)
      })
      f.agent.followup('go')
      await f.agent.whenIdle()
      expect(f.ofType('turn/end')).toHaveLength(1)
      expect(f.errors.length).toBeGreaterThan(0)
      expectBalanced(f)
      await expectNextTurnAccepted(f)
      expectBalanced(f)
    })
  }

  it('a store that fails turn/end once is retried; one that keeps failing is reported, and the next turn first closes the stale one', async () => {
    const once = faultyStore(firstMatches(1, (e) => e.type === 'turn/end'))
    const g = await loopFixture([{ text: 'one' }], { store: once })
    g.agent.followup('go')
    await g.agent.whenIdle()
    expect(g.turnEnds()).toEqual([{ kind: 'completed' }])
    expect(g.errors).toHaveLength(1)

    // Three failures: the guarded append, then both unguarded tries.
    const store = faultyStore(firstMatches(3, (e) => e.type === 'turn/end'))
    const f = await loopFixture([{ text: 'one' }, { text: 'two' }], { store })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(f.errors.map((e) => (e as { code?: string }).code)).toEqual(['STORE_WRITE_FAILED', 'STORE_WRITE_FAILED', 'STORE_WRITE_FAILED'])
    expect(f.agent.session.openTurn).toBe(1)
    f.agent.followup('again')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'interrupted' }, { kind: 'completed' }])
    expectBalanced(f)
  })
})

describe('LOOP-HARDENING: failures are reported', () => {
  it('a refused turn/start is reported on agent/error; the input stays queued for the next wake', async () => {
    const f = await loopFixture([{ text: 'hello' }, { text: 'hello again' }])
    const veto = firstMatches(1, (e) => e.type === 'turn/start')
    f.harness.hooks.on('session/validate', ({ event }) => {
      if (veto(event)) throw new Error('not now')
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(f.errors).toHaveLength(1)
    expect(String(f.errors[0])).toContain('not now')
    expect(f.ofType('turn/start')).toHaveLength(0)
    f.agent.followup('go again')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }, { kind: 'completed' }])
    expect(f.ofType('user/message').map((e) => (e.data as { content: { text: string }[] }).content[0]?.text)).toEqual(['go', 'go again'])
  })

  it('a stream that stops without a finish chunk ends the turn error (INVARIANT), not as a completed reply', async () => {
    const f = await loopFixture([{ text: 'cut short' }])
    f.harness.hooks.on('llm/stream', async (request, next) => {
      const inner = await next()
      return (async function* () {
        for await (const chunk of inner) if (chunk.type !== 'finish') yield chunk
      })()
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'INVARIANT', message: expect.stringContaining('without a finish chunk') } }])
    expect(f.ofType('assistant/message')).toHaveLength(0)
    expectBalanced(f)
  })
})

describe('LOOP-HARDENING: verify catches every edit', () => {
  const edited = async (edit: (e: SessionEvent) => SessionEvent | undefined) => {
    const f = await loopFixture([{ text: ['Hello', ' world'], usage: { inputTokens: 3, outputTokens: 2 } }])
    f.agent.followup('go')
    await f.agent.whenIdle()
    const log = f.agent.session.events
    expect(verifySessionLog(log).ok).toBe(true)
    let changed = -1
    const tampered = log.map((e) => {
      const next = changed < 0 ? edit(e) : undefined
      if (next === undefined) return e
      changed = e.seq
      return next
    })
    expect(changed).toBeGreaterThanOrEqual(0)
    return { problems: verifySessionLog(tampered).problems, seq: changed }
  }
  const chunkOf = (e: SessionEvent) => (e.data as { chunk: Record<string, unknown> }).chunk
  const withChunk = (e: SessionEvent, chunk: Record<string, unknown>): SessionEvent => ({ ...e, data: { ...(e.data as object), chunk } as never })

  it('an edited text delta (block end and message untouched) is a problem naming its seq', async () => {
    const { problems, seq } = await edited((e) =>
      e.type === 'assistant/chunk' && chunkOf(e).type === 'text-delta' && chunkOf(e).text === ' world' ? withChunk(e, { ...chunkOf(e), text: ' there' }) : undefined,
    )
    expect(problems).toEqual([`seq ${seq + 1} (assistant/chunk): block 0 ends with text that differs from its deltas`])
  })

  it('an edited block end is a problem naming its seq', async () => {
    const { problems, seq } = await edited((e) =>
      e.type === 'assistant/chunk' && chunkOf(e).type === 'block-end' ? withChunk(e, { ...chunkOf(e), block: { type: 'text', text: 'Hello there' } }) : undefined,
    )
    expect(problems.some((p) => p.startsWith(`seq ${seq} (assistant/chunk)`))).toBe(true)
  })

  it('an edited usage chunk is a problem', async () => {
    const { problems } = await edited((e) =>
      e.type === 'assistant/chunk' && chunkOf(e).type === 'usage' ? withChunk(e, { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } }) : undefined,
    )
    expect(problems.some((p) => p.includes('usage differs'))).toBe(true)
  })
})
