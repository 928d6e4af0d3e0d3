import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createUserMessage, defineTool, type SessionEvent } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'

type ResultData = { error?: { code: string }; message: { content: { content: { text: string }[]; isError?: boolean; toolCallId: string }[] } }
const resultText = (e: SessionEvent | undefined) => (e?.data as ResultData).message.content[0]?.content[0]?.text
const resultCode = (e: SessionEvent | undefined) => (e?.data as ResultData).error?.code

describe('tool calls (seed §5)', () => {
  it('malformed argument JSON and schema violations come back to the model as INVALID_ARGS', async () => {
    const calls: unknown[] = []
    const f = await loopFixture(
      [
        {
          toolCalls: [
            { id: 'bad-json', name: 'echo', arguments: '{"text": "unterminated' },
            { id: 'bad-type', name: 'echo', arguments: { text: 42 } },
          ],
        },
        { text: 'ok' },
      ],
      { tools: [echoTool(calls)] },
    )
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(calls).toEqual([])
    const results = f.ofType('tool/result')
    expect(results.map(resultCode)).toEqual(['INVALID_ARGS', 'INVALID_ARGS'])
    expect(resultText(results[0])).toMatch(/not valid JSON/)
    expect(resultText(results[1])).toMatch(/text/)
    // The raw arguments are kept verbatim in the log.
    expect((f.ofType('tool/call')[0]?.data as { arguments: string }).arguments).toBe('{"text": "unterminated')
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
  })

  it('an unknown tool gets UNKNOWN_TOOL naming the available tools', async () => {
    const f = await loopFixture([{ toolCalls: [{ name: 'nope', arguments: {} }] }, { text: 'ok' }], { tools: [echoTool()] })
    f.agent.followup('go')
    await f.agent.whenIdle()
    const r = f.ofType('tool/result')[0]
    expect(resultCode(r)).toBe('UNKNOWN_TOOL')
    expect(resultText(r)).toMatch(/available tools: echo/)
  })

  it('pre-execute deny, ask without an approver, and ask approved', async () => {
    const calls: unknown[] = []
    const f = await loopFixture(
      [
        {
          toolCalls: [
            { id: 'a', name: 'echo', arguments: { text: 'deny me' } },
            { id: 'b', name: 'echo', arguments: { text: 'ask me' } },
          ],
        },
        { toolCalls: [{ id: 'c', name: 'echo', arguments: { text: 'ask again' } }] },
        { text: 'ok' },
      ],
      { tools: [echoTool(calls)] },
    )
    f.harness.hooks.on('tools/pre-execute', ({ call }) => {
      const text = (call.arguments as { text: string }).text
      return text.startsWith('deny') ? { kind: 'deny', reason: 'not allowed here' } : { kind: 'ask', reason: 'writes need approval' }
    })
    let approver = false
    f.harness.hooks.on('tools/approve', (payload, next) => (approver ? { kind: 'allow' } : next()))
    f.harness.hooks.on('session/event', ({ event }) => {
      if (event.type === 'step/end') approver = true
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    const results = f.ofType('tool/result')
    expect(results.map(resultCode)).toEqual(['TOOL_DENIED', 'TOOL_DENIED', undefined])
    expect(resultText(results[0])).toBe('Error: not allowed here')
    expect(resultText(results[1])).toMatch(/approval required/)
    expect(calls).toEqual(['ask again'])
  })

  it('concurrency-safe calls overlap in a rolling pool; results commit in model order', async () => {
    let running = 0
    let peak = 0
    const slow = defineTool({
      name: 'slow',
      description: 'waits',
      parameters: z.object({ ms: z.number() }),
      concurrencySafe: true,
      execute: async ({ ms }) => {
        running++
        peak = Math.max(peak, running)
        await new Promise((r) => setTimeout(r, ms))
        running--
        return `slept ${ms}`
      },
    })
    const f = await loopFixture(
      [{ toolCalls: [30, 5, 20, 1].map((ms, i) => ({ id: `s${i}`, name: 'slow', arguments: { ms } })) }, { text: 'ok' }],
      { tools: [slow], maxParallelToolCalls: 3 },
    )
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(peak).toBe(3)
    expect(f.ofType('tool/result').map((e) => (e.data as ResultData).message.content[0]?.toolCallId)).toEqual(['s0', 's1', 's2', 's3'])
  })

  it('an exclusive call is a barrier: earlier calls finish before it starts', async () => {
    const order: string[] = []
    const tool = (name: string, safe: boolean) =>
      defineTool({
        name,
        description: name,
        parameters: z.object({}),
        concurrencySafe: safe,
        execute: async () => {
          order.push(`start ${name}`)
          await new Promise((r) => setTimeout(r, 5))
          order.push(`end ${name}`)
          return name
        },
      })
    const f = await loopFixture(
      [{ toolCalls: [{ name: 'p1', arguments: {} }, { name: 'p2', arguments: {} }, { name: 'x', arguments: {} }] }, { text: 'ok' }],
      { tools: [tool('p1', true), tool('p2', true), tool('x', false)] },
    )
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(order.indexOf('start x')).toBeGreaterThan(order.indexOf('end p1'))
    expect(order.indexOf('start x')).toBeGreaterThan(order.indexOf('end p2'))
    expect(order.indexOf('start p2')).toBeLessThan(order.indexOf('end p1'))
  })

  it('abort mid-batch: started calls drain and commit, never-started calls get ABORTED_BEFORE_DISPATCH pairs', async () => {
    const started: string[] = []
    const f = await loopFixture([{ toolCalls: ['a', 'b', 'c'].map((id) => ({ id, name: 'wait', arguments: {} })) }], {
      tools: [
        defineTool({
          name: 'wait',
          description: 'waits until cancelled',
          parameters: z.object({}),
          execute: async (_args, { signal, callId, agent }) => {
            started.push(callId)
            ;(agent as unknown as { cancel(): void }).cancel()
            await new Promise((r) => setTimeout(r, 5))
            return signal.aborted ? 'saw the abort' : 'finished'
          },
        }),
      ],
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(started).toEqual(['a'])
    expect(f.ofType('tool/call').map((e) => (e.data as { callId: string }).callId)).toEqual(['a', 'b', 'c'])
    expect(f.ofType('tool/result').map(resultCode)).toEqual([undefined, 'ABORTED_BEFORE_DISPATCH', 'ABORTED_BEFORE_DISPATCH'])
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
  })

  it('concludesTurn ends the turn after the batch; additionalContexts become the next step’s input', async () => {
    const finish = defineTool({ name: 'finish', description: 'ends the turn', parameters: z.object({}), concludesTurn: true, execute: () => 'bye' })
    const f = await loopFixture([{ toolCalls: [{ name: 'finish', arguments: {} }] }], { tools: [finish] })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(f.model.requests).toHaveLength(1)
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])

    const ctxTool = defineTool({
      name: 'note',
      description: 'adds context',
      parameters: z.object({}),
      execute: () => ({ content: 'noted', additionalContexts: [createUserMessage('extra context from the tool')] }),
    })
    const g = await loopFixture([{ toolCalls: [{ name: 'note', arguments: {} }] }, { text: 'ok' }], { tools: [ctxTool] })
    g.agent.followup('go')
    await g.agent.whenIdle()
    const second = g.model.requests[1]?.messages.map((m) => m.content[0]?.type === 'text' ? (m.content[0] as { text: string }).text : m.content[0]?.type)
    expect(second).toEqual(['go', 'tool-call', 'tool-result', 'extra context from the tool'])
  })

  it('tools/post-execute can rewrite a result before it is logged', async () => {
    const f = await loopFixture([{ toolCalls: [{ name: 'echo', arguments: { text: 'secret' } }] }, { text: 'ok' }], { tools: [echoTool()] })
    f.harness.hooks.on('tools/post-execute', async ({ result }, next) => {
      const r = await next()
      return { ...r, content: [{ type: 'text', text: `[redacted ${result.content.length} block]` }] }
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(resultText(f.ofType('tool/result')[0])).toBe('[redacted 1 block]')
  })
})
