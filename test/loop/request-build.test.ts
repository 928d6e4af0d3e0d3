// How the loop builds each request from the log: the header and context it logs first, what it sends, and
// the reconstruction invariant over it.
import { describe, expect, it } from 'vitest'
import { Session, foldSession, isLoopRequest, type GenerateOptions, type RequestHeader } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'

describe('LOOP-STEP-STATE', () => {
  it('each chunk is logged before it is assembled, and the anchor cites exactly that attempt’s chunks', async () => {
    const f = await loopFixture([{ reasoning: ['thin', 'king'], text: ['a', 'b'], usage: { inputTokens: 3, outputTokens: 4 } }])
    // Count what the loop pulled from the stream and what reached the log: each chunk must be logged before
    // the loop asks for the next one, and the message comes only after the last chunk is logged.
    let pulled = 0
    const order: string[] = []
    f.harness.hooks.on('llm/stream', async (request, next) => {
      const inner = (await next(request))[Symbol.asyncIterator]()
      return {
        [Symbol.asyncIterator]() {
          return {
            async next() {
              const r = await inner.next()
              if (r.done !== true) pulled++
              return r
            },
          }
        },
      }
    })
    f.harness.hooks.on('session/event', ({ event }) => {
      if (event.type === 'assistant/chunk') order.push(`chunk ${event.seq} after ${pulled} pulled`)
      if (event.type === 'assistant/message') order.push(`message after ${pulled} pulled`)
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    const chunks = f.ofType('assistant/chunk').map((e) => e.seq)
    expect(order).toEqual([...chunks.map((seq, i) => `chunk ${seq} after ${i + 1} pulled`), `message after ${chunks.length} pulled`])
    const anchor = f.ofType('assistant/message')[0]
    expect(anchor?.sourceEventSeqs).toEqual(chunks)
    expect(anchor?.data).toMatchObject({
      turn: 1,
      step: 1,
      usage: { inputTokens: 3, outputTokens: 4 },
      message: { role: 'assistant', source: { kind: 'model', provider: 'scripted', model: 'm1' }, content: [{ type: 'reasoning', text: 'thinking' }, { type: 'text', text: 'ab' }] },
    })
  })

  it('a fixed script yields the hand-written history an independent reader expects (not the fold code as oracle)', async () => {
    const f = await loopFixture(
      [
        { reasoning: 'plan', text: 'Let me look.', toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] },
        { text: 'Done.' },
        { text: 'Second answer.' },
      ],
      { tools: [echoTool()] },
    )
    f.agent.followup('hi')
    await f.agent.whenIdle()
    f.agent.followup('more')
    await f.agent.whenIdle()
    const plain = (request: GenerateOptions | undefined) => request?.messages.map((m) => ({ role: m.role, content: m.content }))
    const first = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]
    const second = [
      ...first,
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'plan' },
          { type: 'text', text: 'Let me look.' },
          { type: 'tool-call', id: 'c1', name: 'echo', arguments: '{"text":"x"}' },
        ],
      },
      { role: 'user', content: [{ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: 'echo: x' }] }] },
    ]
    const third = [...second, { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] }, { role: 'user', content: [{ type: 'text', text: 'more' }] }]
    expect(f.model.requests.map(plain)).toEqual([first, second, third])
  })

  it('an empty completion still gets an anchor (usage, provenance) but adds nothing to history', async () => {
    const f = await loopFixture([{ usage: { inputTokens: 1, outputTokens: 0 } }])
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.ofType('assistant/message')).toHaveLength(1)
    expect(f.agent.session.deriveMessages().map((m) => m.role)).toEqual(['user'])
  })

  it('a stop finish that carries tool calls still dispatches them', async () => {
    const calls: unknown[] = []
    const f = await loopFixture([{ toolCalls: [{ name: 'echo', arguments: { text: 'q' } }], finish: 'stop' }, { text: 'done' }], { tools: [echoTool(calls)] })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(calls).toEqual(['q'])
  })
})

describe('LOOP-REQUEST-BUILD', () => {
  it('header: initial once, nothing when unchanged, change on a system prompt change; adapter defaults marked', async () => {
    const f = await loopFixture([{ text: '1' }, { text: '2' }, { text: '3' }])
    f.agent.followup('a')
    await f.agent.whenIdle()
    f.agent.followup('b')
    await f.agent.whenIdle()
    f.harness.prompt.section('rules', { text: 'Be brief.' })
    f.agent.followup('c')
    await f.agent.whenIdle()
    const headers = f.ofType('request/header').map((e) => e.data as unknown as { header: RequestHeader; reason: string })
    expect(headers.map((h) => h.reason)).toEqual(['initial', 'change'])
    expect(headers[0]?.header).toEqual({ config: { provider: 'scripted', model: 'm1', maxTokens: 100 }, adapterDefaults: { maxTokens: true } })
    expect(headers[1]?.header.system).toBe('Be brief.')
    expect(f.ofType('request/context').map((e) => e.data)).toEqual([{ provider: 'scripted', model: 'm1', contextWindow: 1000 }])
    expect(f.model.requests[2]?.system).toBe('Be brief.')
  })

  it('agent/request can change the config (logged as a change) and routes re-materialise their defaults', async () => {
    const f = await loopFixture([{ text: '1' }, { text: '2' }])
    let temperature: number | undefined
    f.harness.hooks.on('agent/request', async (_p, next) => {
      const base = await next()
      return temperature === undefined ? base : { ...base, temperature, model: 'm2' }
    })
    f.agent.followup('a')
    await f.agent.whenIdle()
    temperature = 0.2
    f.agent.followup('b')
    await f.agent.whenIdle()
    const last = f.ofType('request/header').at(-1)?.data as unknown as { header: RequestHeader; reason: string }
    expect(last.reason).toBe('change')
    // m2 is unknown to the scripted adapter: no default maxTokens, so none is carried over from m1.
    expect(last.header.config).toEqual({ provider: 'scripted', model: 'm2', temperature: 0.2 })
    expect(f.ofType('request/context').map((e) => e.data)).toEqual([
      { provider: 'scripted', model: 'm1', contextWindow: 1000 },
      { provider: 'scripted', model: 'm2' },
    ])
    expect(f.model.requests[1]).toMatchObject({ model: 'm2', temperature: 0.2 })
    expect(f.model.requests[1]?.maxTokens).toBeUndefined()
  })

  it('the dispatched request is deep-frozen and carries the session id', async () => {
    const f = await loopFixture([{ text: '1' }])
    f.agent.followup('a')
    await f.agent.whenIdle()
    const r = f.model.requests[0] as GenerateOptions
    expect(Object.isFrozen(r)).toBe(true)
    expect(Object.isFrozen(r.messages)).toBe(true)
    expect(Object.isFrozen(r.messages[0])).toBe(true)
    expect(r.sessionId).toBe(f.agent.id)
  })

  it('the dispatched request says it was built by the loop (origin), and the deprecated isLoopRequest reads it', async () => {
    const f = await loopFixture([{ text: '1' }])
    const seen: (string | undefined)[] = []
    f.harness.hooks.on('llm/stream', (request, next) => {
      seen.push(request.origin)
      expect(isLoopRequest(request)).toBe(true)
      return next(request)
    })
    f.agent.followup('a')
    await f.agent.whenIdle()
    expect(seen).toEqual(['loop'])
    expect(f.model.requests[0]?.origin).toBe('loop')
    // A request built anywhere else has no origin.
    expect(isLoopRequest({ provider: 'scripted', model: 'm1', messages: [] })).toBe(false)
  })

  it('the logged header holds the tool registry\'s frozen schemas themselves, so the per-step header check is identity', async () => {
    const f = await loopFixture([{ toolCalls: [{ name: 'echo', arguments: { text: 'q' } }] }, { toolCalls: [{ name: 'echo', arguments: { text: 'r' } }] }, { text: 'done' }], { tools: [echoTool()] })
    f.agent.followup('a')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    expect(f.ofType('request/header')).toHaveLength(1)
    const logged = f.agent.session.requestHeader()?.tools ?? []
    expect(Object.isFrozen(logged)).toBe(true)
    expect(logged[0]).toBe(f.harness.tools.schemas()[0])
  })

  it('NO_ADAPTER: an llm/stream listener may serve an unregistered route; otherwise the turn fails in-band', async () => {
    const f = await loopFixture([{ text: 'unused' }])
    f.harness.hooks.on('agent/request', async (_p, next) => ({ ...(await next()), provider: 'ghost' }))
    let offered: string | undefined
    f.harness.hooks.on('agent/request-error', ({ failure }) => {
      offered = failure.code
      return undefined
    })
    f.agent.followup('a')
    await f.agent.whenIdle()
    expect(offered).toBe('NO_ADAPTER')
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'NO_ADAPTER' } }])
    const header = f.ofType('request/header')[0]?.data as unknown as { header: RequestHeader }
    expect(header.header.config.provider).toBe('ghost')
    expect(header.header.adapterDefaults).toBeUndefined()

    f.harness.hooks.on('llm/stream', async (request, next) => {
      if (request.provider !== 'ghost') return next()
      return (async function* () {
        yield { type: 'block-start' as const, index: 0, blockType: 'text' as const }
        yield { type: 'text-delta' as const, index: 0, text: 'from the ghost route' }
        yield { type: 'block-end' as const, index: 0, block: { type: 'text' as const, text: 'from the ghost route' } }
        yield { type: 'finish' as const, reason: { kind: 'stop' as const } }
      })()
    })
    f.agent.followup('b')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toMatchObject([{ kind: 'error' }, { kind: 'completed' }])
    expect(f.agent.session.deriveMessages().at(-1)?.content).toEqual([{ type: 'text', text: 'from the ghost route' }])
  })

  it('a config without a model fails the turn with INVALID_CONFIG', async () => {
    const f = await loopFixture([{ text: 'x' }])
    f.harness.hooks.on('agent/request', async (_p, next) => ({ ...(await next()), model: '' }))
    f.agent.followup('a')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'INVALID_CONFIG' } }])
  })
})

describe('LOOP-RECONSTRUCTION-TEST', () => {
  it('before every dispatch, a fresh Session replaying the log prefix yields the exact messages and header sent', async () => {
    const calls: unknown[] = []
    const f = await loopFixture(
      [
        { toolCalls: [{ name: 'echo', arguments: { text: 'one' } }, { name: 'echo', arguments: { text: 'two' } }] },
        { text: 'turn one done' },
        { reasoning: 'hmm', toolCalls: [{ name: 'echo', arguments: { text: 'three' } }] },
        { text: 'turn two done' },
        { text: 'turn three' },
      ],
      { tools: [echoTool(calls, { concurrencySafe: true })] },
    )
    let checked = 0
    f.harness.hooks.on('llm/stream', async (request, next) => {
      const fresh = new Session({ seed: f.agent.session.events })
      const folded = foldSession(fresh.events)
      expect(JSON.stringify(fresh.deriveMessages())).toBe(JSON.stringify(request.messages))
      expect(JSON.stringify(folded.messages)).toBe(JSON.stringify(request.messages))
      const header = fresh.requestHeader()
      expect(header).toEqual(folded.header)
      expect(request.provider).toBe(header?.config.provider)
      expect(request.model).toBe(header?.config.model)
      expect(request.maxTokens).toBe(header?.config.maxTokens)
      expect(request.temperature).toBe(header?.config.temperature)
      expect(request.reasoningEffort).toBe(header?.config.reasoningEffort)
      expect(request.stop).toEqual(header?.config.stop)
      expect(request.system).toBe(header?.system)
      expect(request.tools).toEqual(header?.tools)
      checked++
      return next()
    })
    f.agent.followup('first')
    await f.agent.whenIdle()
    f.harness.prompt.section('late', { text: 'A new rule.' })
    f.agent.followup('second')
    await f.agent.whenIdle()
    f.harness.hooks.on('agent/request', async (_p, next) => ({ ...(await next()), temperature: 0.5, stop: ['END'] }))
    f.agent.followup('third')
    await f.agent.whenIdle()
    expect(checked).toBe(5)
    expect(calls).toEqual(['one', 'two', 'three'])
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }, { kind: 'completed' }, { kind: 'completed' }])
  })
})

describe('LOOP-REQUEST-INVARIANT', () => {
  it('the invariant plugin reports a desync between the request and the log as a turn error', async () => {
    const f = await loopFixture([{ text: 'x' }])
    // Outermost listener: writes to the log after the request was frozen, so the request no longer matches.
    f.harness.hooks.on(
      'llm/stream',
      (request, next) => {
        f.agent.session.append('user/message', { id: 'sneaky', role: 'user', content: [{ type: 'text', text: 'late' }], source: { kind: 'user' } }, { surfaceOp: 'append' })
        return next(request)
      },
      { prepend: true },
    )
    f.agent.followup('a')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'INVARIANT' } }])
    expect(JSON.stringify(f.turnEnds())).toContain('desync')
  })

  it('the invariant plugin vetoes an append that breaks the log grammar', async () => {
    const f = await loopFixture([])
    expect(() => f.agent.session.append('step/start', { turn: 1, step: 1 })).toThrow(expect.objectContaining({ code: 'INVARIANT' }))
    expect(f.agent.session.length).toBe(0)
  })
})
