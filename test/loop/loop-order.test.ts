import { describe, expect, it } from 'vitest'
import { echoTool, loopFixture } from '../support/loop-fixture.js'

describe('LOOP-ORDER-TEST', () => {
  it('a simple turn: inbox receipt, then turn/start → step/start → step/end → turn/end', async () => {
    const f = await loopFixture([{ text: ['Hel', 'lo'] }])
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.errors).toEqual([])
    expect(f.types()).toEqual([
      'agent/inbox/spliced',
      'turn/start',
      'agent/inbox/spliced',
      'step/start',
      'user/message',
      'request/header',
      'request/context',
      'assistant/chunk',
      'assistant/chunk',
      'assistant/chunk',
      'assistant/chunk',
      'assistant/chunk',
      'assistant/message',
      'step/end',
      'turn/end',
    ])
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    const messages = f.agent.session.deriveMessages()
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant'])
    expect(messages[1]?.content).toEqual([{ type: 'text', text: 'Hello' }])
  })

  it('tool call and result are logged and appear in the next step request', async () => {
    const calls: unknown[] = []
    const f = await loopFixture([{ toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }], { tools: [echoTool(calls)] })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(f.errors).toEqual([])
    expect(calls).toEqual(['x'])
    expect(f.boundaries()).toEqual([
      'turn/start',
      'step/start',
      'user/message',
      'assistant/message',
      'tool/call',
      'tool/result',
      'step/end',
      'step/start',
      'assistant/message',
      'step/end',
      'turn/end',
    ])
    const second = f.model.requests[1]
    expect(second?.messages.map((m) => m.content[0]?.type)).toEqual(['text', 'tool-call', 'tool-result'])
    const result = second?.messages[2]?.content[0]
    expect(result).toMatchObject({ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: 'echo: x' }] })
  })
})
