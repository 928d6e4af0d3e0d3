import { describe, expect, it } from 'vitest'
import {
  createHarness,
  HarnessError,
  scriptedAdapter,
  inputFate,
  turnResult,
  type ScriptStep,
  type SessionEvent,
  type SessionWriter,
  type TurnResult,
  type TurnStreamPart,
} from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'
import { flushFaultStore, wrappedStore } from '../support/faults.js'

const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms))

/** A script function that answers each request by the text of its last user message. */
function byPrompt(replies: Record<string, ScriptStep>): (request: { messages: readonly { role: string; content: readonly { type: string; text?: string }[] }[] }) => ScriptStep {
  return (request) => {
    const last = [...request.messages].reverse().find((m) => m.role === 'user' && m.content[0]?.type === 'text')
    const text = last?.content[0]?.text ?? ''
    return replies[text] ?? { text: `no reply for ${text}` }
  }
}

describe('agent.run()', () => {
  it('a run queued behind a turn that fails still gets its own turn (the failure does not strand queued input)', async () => {
    const model = scriptedAdapter({ script: [{ error: { code: 'AUTH', message: 'bad key' } }, { text: 'fine' }] as never, models: { m: { contextWindow: 1000 } } })
    const harness = createHarness({ adapters: [model] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
    const first = agent.run('one')
    const second = agent.run('two')
    expect((await first).reason.kind).toBe('error')
    const after = await second
    expect(after.reason.kind).toBe('completed')
    expect(after.text).toBe('fine')
    await harness.close()
  })

  it('resolves with the turn that claimed its input: text of the last message, usage summed, tool calls with results, the seqs of turn/start and turn/end', async () => {
    const f = await loopFixture(
      [
        { reasoning: 'look it up', text: 'calling', toolCalls: [{ name: 'echo', arguments: { text: 'a' } }], usage: { inputTokens: 10, outputTokens: 3, cacheReadTokens: 4 } },
        { reasoning: ['so', ' then'], text: ['the ', 'answer'], usage: { inputTokens: 20, outputTokens: 5, reasoningTokens: 2 } },
      ],
      { tools: [echoTool()] },
    )
    const result = await f.agent.run('go')
    const start = f.ofType('turn/start')[0] as SessionEvent
    const end = f.ofType('turn/end')[0] as SessionEvent
    expect(result).toMatchObject({
      sessionId: f.agent.id,
      turn: 1,
      reason: { kind: 'completed' },
      text: 'the answer',
      reasoning: 'so then',
      toolCalls: [{ callId: 'call_1_1', name: 'echo', step: 1, arguments: { text: 'a' }, result: 'echo: a', isError: false }],
      usage: { inputTokens: 30, outputTokens: 8, cacheReadTokens: 4, reasoningTokens: 2 },
      events: { from: start.seq, to: end.seq },
    })
    expect(result.failure).toBeUndefined()
    expect(result.cost).toBeUndefined() // the scripted model has no prices
    expect(result.durationMs).toBe(end.time - start.time)
    // A pure fold of the log: the CLI or the server get the same result from the stored events.
    expect(turnResult(f.agent.id, f.agent.session.events, { turn: 1 })).toEqual(result)
    expect(turnResult(f.agent.id, f.agent.session.events.slice(result.events.from, result.events.to + 1))).toEqual(result)
    await f.harness.close()
  })

  it('cost: priced from the model facts of the adapter serving the route, when every completion is priced', async () => {
    const pricing = { currency: 'USD' as const, inputPerMTok: 1, outputPerMTok: 2, asOf: '2025-01-01' }
    const model = scriptedAdapter({
      models: { priced: { pricing } },
      script: [{ text: 'a', usage: { inputTokens: 1_000_000, outputTokens: 500_000 } }, { text: 'b', usage: { inputTokens: 10, outputTokens: 1 } }],
    })
    const harness = createHarness({ adapters: [model] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'priced' })
    expect((await agent.run('one')).cost).toEqual({ total: 2, currency: 'USD', asOf: '2025-01-01' })
    const unpriced = await harness.createAgent({ provider: 'scripted', model: 'unknown' })
    expect((await unpriced.run('two')).cost).toBeUndefined()
    await harness.close()
  })

  it('a run queued behind a running turn resolves with its own turn, not the next one to end nor the one after the idle', async () => {
    const f = await loopFixture(
      byPrompt({
        first: { text: ['one ', 'two ', 'three'], delayMs: 5 },
        second: { text: 'for the followup' },
        third: { text: 'for the run' },
      }) as never,
    )
    f.agent.followup('first')
    await tick(2)
    expect(f.agent.status).toBe('running')
    f.agent.followup('second')
    const ended: number[] = []
    f.harness.hooks.on('session/event', ({ event }) => {
      if (event.type === 'turn/end') ended.push((event.data as { turn: number }).turn)
    })
    const result = await f.agent.run('third')
    expect(result.turn).toBe(3)
    expect(result.text).toBe('for the run')
    expect(ended).toEqual([1, 2, 3])
    // Its input was claimed by turn 3, durably: the fold of the whole log says so too.
    const spliced = f.ofType('agent/inbox/spliced').find((e) => (e.data as { inserted: { content: { text: string }[] }[] }).inserted[0]?.content[0]?.text === 'third')
    const id = (spliced?.data as { inserted: { id: string }[] }).inserted[0]?.id as string
    expect(inputFate(f.agent.session.events, id)).toMatchObject({ kind: 'claimed', turn: 3, turnStart: result.events.from })
    await f.harness.close()
  })

  it('concurrent runs each resolve with their own turn, in the order they were queued', async () => {
    const f = await loopFixture(byPrompt({ a: { text: 'A', delayMs: 3 }, b: { text: 'B', delayMs: 1 }, c: { text: 'C' } }) as never)
    const results = await Promise.all([f.agent.run('a'), f.agent.run('b'), f.agent.run('c')])
    expect(results.map((r) => [r.turn, r.text])).toEqual([
      [1, 'A'],
      [2, 'B'],
      [3, 'C'],
    ])
    await f.harness.close()
  })

  it('an error turn resolves with reason error and the failure (never rejects)', async () => {
    const f = await loopFixture([{ error: { code: 'AUTH', message: 'missing API key', status: 401 } }])
    const result = await f.agent.run('hi')
    expect(result.reason).toEqual({ kind: 'error', error: { code: 'AUTH', message: 'missing API key', status: 401 } })
    expect(result.failure).toEqual({ code: 'AUTH', message: 'missing API key', status: 401 })
    expect(result.text).toBe('')
    expect(result.usage).toEqual({ inputTokens: 0, outputTokens: 0 })
    await f.harness.close()
  })

  it('a blocked turn resolves blocked', async () => {
    const f = await loopFixture([{ text: 'never' }])
    f.harness.hooks.on('agent/pre-step', () => ({ kind: 'reject' }))
    const result = await f.agent.run('hi')
    expect(result.reason).toEqual({ kind: 'blocked' })
    expect(result.toolCalls).toEqual([])
    await f.harness.close()
  })

  it('a cancelled turn resolves aborted with the cause; the interrupted text is the text', async () => {
    const f = await loopFixture([{ text: ['Hello ', 'wor', 'ld'], delayMs: 20 }])
    const running = f.agent.run('hi')
    f.harness.hooks.on('session/event', ({ event }) => {
      const chunk = (event.data as { chunk?: { type: string; text?: string } }).chunk
      if (chunk?.type === 'text-delta' && chunk.text === 'wor') setImmediate(() => f.agent.cancel({ kind: 'hook', reason: 'budget' }))
    })
    const result = await running
    expect(result.reason).toEqual({ kind: 'aborted', reason: { kind: 'hook', reason: 'budget' } })
    expect(result.text).toBe('Hello wor')
    await f.harness.close()
  })

  it('its signal cancels only its own turn: the run resolves aborted and the input queued behind it still runs', async () => {
    const f = await loopFixture(byPrompt({ slow: { hang: true }, next: { text: 'next ran' } }) as never)
    const controller = new AbortController()
    const slow = f.agent.run('slow', { signal: controller.signal })
    const next = f.agent.run('next')
    await tick()
    controller.abort()
    expect((await slow).reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    expect(await next).toMatchObject({ turn: 2, reason: { kind: 'completed' }, text: 'next ran' })
    await f.harness.close()
  })

  it('a signal aborted while the input waits: the turn that takes it ends aborted at once (a CancelCause reason is kept)', async () => {
    const f = await loopFixture(byPrompt({ first: { text: 'first', delayMs: 5 }, second: { text: 'never' }, third: { text: 'third ran' } }) as never)
    f.agent.followup('first')
    const controller = new AbortController()
    const second = f.agent.run('second', { signal: controller.signal })
    const third = f.agent.run('third')
    controller.abort({ kind: 'hook', reason: 'caller gave up' })
    const result = await second
    expect(result).toMatchObject({ turn: 2, reason: { kind: 'aborted', reason: { kind: 'hook', reason: 'caller gave up' } }, text: '' })
    expect(await third).toMatchObject({ turn: 3, text: 'third ran' })
    // Turn 2 never made a request.
    expect(f.model.requests.map((r) => (r.messages.at(-1)?.content[0] as { text: string }).text)).toEqual(['first', 'third'])
    await f.harness.close()
  })

  it('an already aborted signal queues nothing and rejects with its reason', async () => {
    const f = await loopFixture([{ text: 'never' }])
    const reason = new Error('stop')
    await expect(f.agent.run('hi', { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect(f.agent.inbox.hasPending).toBe(false)
    expect(f.agent.session.length).toBe(0)
    await f.harness.close()
  })

  it('rejects only for misuse: a disposed agent; a run still queued when the agent is disposed; input a cancel discarded', async () => {
    const f = await loopFixture(byPrompt({ slow: { hang: true } }) as never)
    const slow = f.agent.run('slow')
    const queued = f.agent.run('queued')
    await tick()
    await f.agent.dispose()
    expect((await slow).reason).toEqual({ kind: 'aborted', reason: { kind: 'disposed' } })
    await expect(queued).rejects.toMatchObject({ code: 'AGENT_DISPOSED' })
    // Its input stays queued in the log, for a resume.
    expect(f.agent.inbox.nextTurn.map((m) => (m.content[0] as { text: string }).text)).toEqual(['queued'])
    await expect(f.agent.run('late')).rejects.toBeInstanceOf(HarnessError)
    await expect(f.agent.run('late')).rejects.toMatchObject({ code: 'AGENT_DISPOSED' })

    const g = await loopFixture(byPrompt({ slow: { hang: true } }) as never)
    const first = g.agent.run('slow')
    const discarded = g.agent.run('discarded')
    await tick()
    g.agent.cancel()
    expect((await first).reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    await expect(discarded).rejects.toMatchObject({ code: 'INPUT_DISCARDED' })
    await g.harness.close()
  })

  it('a turn whose end could not be written resolves error SESSION_WRITE_FAILED; a run queued behind it rejects with the refusal', async () => {
    const store = flushFaultStore((n) => n >= 1)
    const f = await loopFixture(byPrompt({ one: { text: 'one', delayMs: 5 }, two: { text: 'two' } }) as never, { store })
    const one = f.agent.run('one')
    const two = f.agent.run('two')
    const result = await one
    expect(result.reason).toMatchObject({ kind: 'error', error: { code: 'SESSION_WRITE_FAILED' } })
    expect(result.failure?.code).toBe('SESSION_WRITE_FAILED')
    await expect(two).rejects.toMatchObject({ code: 'SESSION_WRITE_FAILED' })
    await expect(f.agent.run('three')).rejects.toMatchObject({ code: 'SESSION_WRITE_FAILED' })
    await f.harness.close().catch(() => {})
  })

  it('a run leaves no listener behind once settled', async () => {
    const f = await loopFixture([{ text: 'a' }, { text: 'b' }])
    await f.agent.run('one')
    await f.agent.run('two')
    // The harness's hooks are its bus: no `session/event` listener left means chunks stay compact again.
    expect((f.harness.hooks as unknown as { has(name: string): boolean }).has('session/event')).toBe(false)
    await f.harness.close()
  })
})

describe('agent.stream()', () => {
  it('yields typed parts in log order, each only once its event is committed and published; ends with turn-end and the result', async () => {
    const f = await loopFixture(
      [{ reasoning: 'hm', toolCalls: [{ name: 'echo', arguments: { text: 'x' } }] }, { text: ['an', 'swer'] }],
      { tools: [echoTool()] },
    )
    const published = new Set<number>()
    f.harness.hooks.on('session/event', ({ event }) => {
      published.add(event.seq)
    })
    const parts: TurnStreamPart[] = []
    const turn = f.agent.stream('go')
    for await (const part of turn) {
      expect(published.has(part.seq)).toBe(true)
      expect(f.agent.session.at(part.seq)).toBeDefined()
      parts.push(part)
    }
    expect(parts.map((p) => p.type)).toEqual([
      'step-start',
      'reasoning-delta',
      'tool-call',
      'tool-result',
      'step-end',
      'step-start',
      'text-delta',
      'text-delta',
      'step-end',
      'turn-end',
    ])
    expect(parts.filter((p) => p.type === 'text-delta').map((p) => (p as { text: string }).text).join('')).toBe('answer')
    expect(parts[2]).toMatchObject({ type: 'tool-call', turn: 1, step: 1, callId: 'call_1_1', name: 'echo', arguments: '{"text":"x"}' })
    expect(parts[3]).toMatchObject({ type: 'tool-result', callId: 'call_1_1', result: 'echo: x', isError: false })
    const last = parts.at(-1) as Extract<TurnStreamPart, { type: 'turn-end' }>
    const result = await turn.result
    expect(last.result).toBe(result)
    expect(last.reason).toEqual({ kind: 'completed' })
    expect(result.text).toBe('answer')
    await f.harness.close()
  })

  it('turn-end is yielded only after the turn-end flush resolved (the provisional turn/end is in the log before)', async () => {
    let release: (() => void) | undefined
    let flushes = 0
    const store = wrappedStore(
      (writer): SessionWriter => ({
        append: (record) => writer.append(record),
        flush: async () => {
          flushes++
          // The turn's only flush is its turn-end flush (no tool body): hold it until released.
          if (flushes === 1) await new Promise<void>((r) => (release = r))
          await writer.flush()
        },
        close: () => writer.close(),
      }),
    )
    const f = await loopFixture([{ text: 'done' }], { store })
    const types: string[] = []
    const turn = f.agent.stream('go')
    const reading = (async () => {
      for await (const part of turn) types.push(part.type)
    })()
    for (let i = 0; i < 100 && release === undefined; i++) await tick(1)
    expect(release).toBeDefined()
    expect(f.agent.session.at(f.agent.session.length - 1)?.type).toBe('turn/end')
    await tick(10)
    expect(types).toEqual(['step-start', 'text-delta', 'step-end'])
    release?.()
    await reading
    expect(types.at(-1)).toBe('turn-end')
    await f.harness.close()
  })

  it('breaking out of the loop does not cancel the turn; the result still resolves', async () => {
    const f = await loopFixture([{ text: ['a', 'b', 'c', 'd'], delayMs: 2 }])
    const turn = f.agent.stream('go')
    for await (const part of turn) if (part.type === 'text-delta') break
    const result: TurnResult = await turn.result
    expect(result.reason).toEqual({ kind: 'completed' })
    expect(result.text).toBe('abcd')
    await f.harness.close()
  })

  it('the signal cancels the streamed turn; the loop ends with an aborted turn-end', async () => {
    const f = await loopFixture([{ text: ['a', 'b', 'c', 'd'], delayMs: 10 }])
    const controller = new AbortController()
    const parts: TurnStreamPart[] = []
    for await (const part of f.agent.stream('go', { signal: controller.signal })) {
      parts.push(part)
      if (part.type === 'text-delta') controller.abort()
    }
    const end = parts.at(-1)
    expect(end?.type).toBe('turn-end')
    expect(end?.type === 'turn-end' && end.reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    await f.harness.close()
  })

  it('a stream whose run rejects makes the loop throw the same error', async () => {
    const f = await loopFixture([{ text: 'x' }])
    await f.agent.dispose()
    const turn = f.agent.stream('late')
    await expect((async () => {
      for await (const _ of turn) void _
    })()).rejects.toMatchObject({ code: 'AGENT_DISPOSED' })
    await expect(turn.result).rejects.toMatchObject({ code: 'AGENT_DISPOSED' })
    await f.harness.close()
  })

  it('a stream behind a running turn yields none of that turn\'s parts', async () => {
    const f = await loopFixture(byPrompt({ first: { text: ['1', '2', '3'], delayMs: 3 }, second: { text: 'mine' } }) as never)
    f.agent.followup('first')
    await tick(1)
    const parts: TurnStreamPart[] = []
    for await (const part of f.agent.stream('second')) parts.push(part)
    expect(parts.every((p) => p.turn === 2)).toBe(true)
    expect(parts.filter((p) => p.type === 'text-delta').map((p) => (p as { text: string }).text)).toEqual(['mine'])
    await f.harness.close()
  })
})
