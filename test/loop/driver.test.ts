import { describe, expect, it } from 'vitest'
import { currentInitiator } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'

describe('LOOP-DRIVER-PRESTEP', () => {
  it('status goes running synchronously on wake and back to idle once, even across queued turns', async () => {
    const f = await loopFixture([{ text: 'a' }, { text: 'b' }, { text: 'c' }])
    const statuses: string[] = []
    f.harness.hooks.on('agent/status', ({ status }) => {
      statuses.push(status)
    })
    f.agent.followup('one')
    expect(f.agent.status).toBe('running')
    expect(statuses).toEqual(['running'])
    f.agent.followup('two')
    f.agent.followup('three')
    await f.agent.whenIdle()
    expect(statuses).toEqual(['running', 'idle'])
    expect(f.ofType('turn/start').map((e) => e.data)).toEqual([{ turn: 1 }, { turn: 2 }, { turn: 3 }])
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }, { kind: 'completed' }, { kind: 'completed' }])
  })

  it('preStep order: claim, then prompt assembly, then agent/pre-step (which sees the claimed batch)', async () => {
    const f = await loopFixture([{ text: 'ok' }])
    const order: string[] = []
    f.harness.hooks.on('agent/inbox/claimed', ({ message }) => {
      order.push(`claimed:${(message.content[0] as { text: string }).text}`)
    })
    f.harness.prompt.section('probe', {
      text: () => {
        order.push(`assemble(pending=${f.agent.inbox.nextTurn.length})`)
        return 'system text'
      },
    })
    f.harness.hooks.on('agent/pre-step', ({ messages }, next) => {
      order.push(`pre-step(${messages.length})`)
      return next()
    })
    f.agent.followup('hello')
    await f.agent.whenIdle()
    expect(order).toEqual(['claimed:hello', 'assemble(pending=0)', 'pre-step(1)'])
    expect(f.model.requests[0]?.system).toBe('system text')
  })

  it('a failed turn does not destroy the agent: the next wake runs a new turn', async () => {
    const f = await loopFixture([{ error: { code: 'SERVER' } }, { text: 'recovered' }])
    f.agent.followup('one')
    await f.agent.whenIdle()
    f.agent.followup('two')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toMatchObject([{ kind: 'error' }, { kind: 'completed' }])
  })

  it('steering sent into an aborting turn becomes its own turn and runs after convergence', async () => {
    const f = await loopFixture([{ hang: true }, { text: 'second' }])
    f.agent.followup('first')
    await new Promise((r) => setTimeout(r, 5))
    f.agent.cancel({ kind: 'user' }, { keepInbox: true })
    f.agent.steer('late steer')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }, { kind: 'completed' }])
    const secondUser = f.ofType('user/message')[1]?.data as { content: { text: string }[] }
    expect(secondUser.content[0]?.text).toBe('late steer')
  })

  it('cancel while idle durably clears queued input; an inject waits for a wake', async () => {
    const f = await loopFixture([{ text: 'one' }])
    f.agent.inject('context only')
    expect(f.agent.status).toBe('idle')
    expect(f.agent.inbox.nextStep).toHaveLength(1)
    f.agent.cancel()
    expect(f.agent.inbox.hasPending).toBe(false)
    const splices = f.ofType('agent/inbox/spliced').map((e) => e.data as { outcome?: string })
    expect(splices.at(-1)?.outcome).toBe('canceled')
    expect(f.ofType('turn/start')).toHaveLength(0)
  })

  it('with initiatorScope, tools run with the agent as initiator (AsyncLocalStorage scope)', async () => {
    const seen: (string | undefined)[] = []
    const f = await loopFixture([{ toolCalls: [{ name: 'echo', arguments: { text: 'x' } }] }, { text: 'done' }], {
      tools: [echoTool()],
      initiatorScope: true,
    })
    f.harness.hooks.on('tools/pre-execute', (_p, next) => {
      seen.push(currentInitiator()?.id)
      return next()
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(seen).toEqual([f.agent.id])
  })

  it('dispose cancels with {kind:"disposed"} and waits for the driver', async () => {
    const f = await loopFixture([{ hang: true }])
    f.agent.followup('x')
    await new Promise((r) => setTimeout(r, 5))
    f.agent.followup('queued behind the hang')
    await f.agent.dispose()
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'disposed' } }])
    // Queued input stays in the log for a later resume (no canceled splice was written).
    expect(f.agent.inbox.nextTurn.map((m) => (m.content[0] as { text: string }).text)).toEqual(['queued behind the hang'])
    expect(f.ofType('agent/inbox/spliced').some((e) => (e.data as { outcome?: string }).outcome === 'canceled')).toBe(false)
    expect(() => f.agent.followup('after')).toThrow(expect.objectContaining({ code: 'AGENT_DISPOSED' }))
  })
})

describe('LOOP-TURN-STATE', () => {
  it('an empty first batch completes the turn without a step', async () => {
    const f = await loopFixture([{ text: 'never' }])
    f.harness.hooks.on('agent/pre-step', () => ({ kind: 'enter', messages: [] }))
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.boundaries()).toEqual(['turn/start', 'turn/end'])
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    expect(f.model.requests).toHaveLength(0)
  })

  it('every opened step is closed even when the step throws', async () => {
    const f = await loopFixture([{ text: 'x' }])
    f.harness.hooks.on('llm/stream', () => {
      throw new Error('stream middleware broke')
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.boundaries()).toEqual(['turn/start', 'step/start', 'user/message', 'step/end', 'turn/end'])
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'UNKNOWN' } }])
  })

  it('agent/turn-stopping can steer one more step into the same turn', async () => {
    const f = await loopFixture([{ text: 'first' }, { text: 'second' }])
    let asked = false
    f.harness.hooks.on('agent/turn-stopping', ({ agent }) => {
      if (!asked) {
        asked = true
        agent.steer('are you sure?')
      }
    })
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.ofType('turn/start')).toHaveLength(1)
    expect(f.ofType('step/start').map((e) => e.data)).toEqual([
      { turn: 1, step: 1 },
      { turn: 1, step: 2 },
    ])
  })
})
