import { describe, expect, it } from 'vitest'
import { echoTool, loopFixture } from '../support/loop-fixture.js'

describe('LOOP-ERROR-CONTAINMENT-TEST', () => {
  const cases: [string, (f: Awaited<ReturnType<typeof loopFixture>>) => () => void][] = [
    ['prompt render (unknown variable)', (f) => f.harness.prompt.section('bad', { text: 'Hello {{nobody}}' })],
    [
      'a pre-step plugin',
      (f) =>
        f.harness.hooks.on('agent/pre-step', () => {
          throw new Error('pre-step plugin broke')
        }),
    ],
    [
      'a turn-stopping listener',
      (f) =>
        f.harness.hooks.on('agent/turn-stopping', async () => {
          throw new Error('turn-stopping listener broke')
        }),
    ],
    [
      'request middleware',
      (f) =>
        f.harness.hooks.on('agent/request', () => {
          throw new Error('request middleware broke')
        }),
    ],
  ]
  for (const [name, install] of cases) {
    it(`${name}: the turn ends error, the agent survives, the next wake runs a new turn`, async () => {
      const f = await loopFixture(
        (request) =>
          request.messages.at(-1)?.role === 'user' && request.messages.at(-1)?.source.kind === 'user' && f.agent.session.lastTurn === 1
            ? { toolCalls: [{ name: 'echo', arguments: { text: 'x' } }] }
            : { text: 'fine' },
        { tools: [echoTool()] },
      )
      const off = install(f)
      f.agent.followup('one')
      await f.agent.whenIdle()
      expect(f.turnEnds()).toMatchObject([{ kind: 'error' }])
      expect(f.errors).toHaveLength(1)
      expect(f.agent.status).toBe('idle')
      off()
      f.agent.followup('two')
      await f.agent.whenIdle()
      expect(f.turnEnds()).toMatchObject([{ kind: 'error' }, { kind: 'completed' }])
      expect(f.boundaries().filter((t) => t === 'turn/end')).toHaveLength(2)
    })
  }

  it('a tool body that throws is a result the model reads, never a turn failure', async () => {
    const f = await loopFixture([{ toolCalls: [{ name: 'echo', arguments: { text: 'x' } }] }, { text: 'handled' }], {
      tools: [
        {
          ...echoTool(),
          execute: () => {
            throw new Error('disk on fire')
          },
        },
      ],
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    const result = f.ofType('tool/result')[0]?.data as { error: { code: string }; message: { content: { content: { text: string }[]; isError: boolean }[] } }
    expect(result.error.code).toBe('TOOL_FAILED')
    expect(result.message.content[0]?.isError).toBe(true)
    expect(result.message.content[0]?.content[0]?.text).toBe('Error: disk on fire')
  })
})
