import { describe, expect, it } from 'vitest'
import { RUNTIME_CONTEXT_PLUGIN } from '../../src/index.js'
import { loopFixture } from '../support/loop-fixture.js'

describe('LOOP-INTERCEPTION-TEST', () => {
  it('a blocked prompt produces only turn/start and turn/end; the claimed prompt is consumed, not requeued', async () => {
    const f = await loopFixture([{ text: 'never' }])
    f.harness.hooks.on('agent/pre-step', () => ({ kind: 'reject' }))
    f.agent.followup('forbidden')
    await f.agent.whenIdle()
    expect(f.boundaries()).toEqual(['turn/start', 'turn/end'])
    expect(f.ofType('user/message')).toHaveLength(0)
    expect(f.agent.inbox.hasPending).toBe(false)
  })

  it('a later pre-step emptied by a listener opens no step', async () => {
    const f = await loopFixture([{ text: 'first' }, { text: 'never' }])
    let stopping = 0
    f.harness.hooks.on('agent/turn-stopping', ({ agent }) => {
      if (stopping++ === 0) agent.steer('steer that gets dropped')
    })
    f.harness.hooks.on('agent/pre-step', (payload, next) => (payload.step > 1 ? { kind: 'enter', messages: [] } : next()))
    f.agent.followup('hi')
    await f.agent.whenIdle()
    expect(f.ofType('step/start')).toHaveLength(1)
    expect(f.model.requests).toHaveLength(1)
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
  })

  it('input arriving after the claim is not in the current request: steer goes to the next step, a followup to the next turn', async () => {
    const f = await loopFixture([{ text: 'a' }, { text: 'b' }, { text: 'c' }])
    let injected = false
    f.harness.hooks.on('agent/pre-step', async ({ agent }, next) => {
      if (!injected) {
        injected = true
        agent.steer('steered during pre-step')
        agent.followup('queued during pre-step')
      }
      return next()
    })
    f.agent.followup('first')
    await f.agent.whenIdle()
    const texts = (i: number) => f.model.requests[i]?.messages.filter((m) => m.role === 'user').map((m) => (m.content[0] as { text: string }).text)
    expect(texts(0)).toEqual(['first'])
    expect(texts(1)).toEqual(['first', 'steered during pre-step'])
    expect(f.ofType('turn/start')).toHaveLength(2)
    expect(texts(2)?.at(-1)).toBe('queued during pre-step')
  })
})

describe('LOOP-RUNTIME-CONTEXT', () => {
  it('a snapshot enters only when the rendered context changes, and a marker once when it empties', async () => {
    const f = await loopFixture([{ text: '1' }, { text: '2' }, { text: '3' }, { text: '4' }])
    let clock: string | undefined = 'tick 1'
    f.harness.prompt.context('clock', { text: () => clock })
    const snapshots = () =>
      f.ofType('user/message').filter((e) => (e.data as { source: { kind: string; plugin?: string } }).source.plugin === RUNTIME_CONTEXT_PLUGIN)
    f.agent.followup('a')
    await f.agent.whenIdle()
    expect(snapshots()).toHaveLength(1)
    f.agent.followup('b') // unchanged
    await f.agent.whenIdle()
    expect(snapshots()).toHaveLength(1)
    clock = 'tick 2'
    f.agent.followup('c')
    await f.agent.whenIdle()
    expect(snapshots()).toHaveLength(2)
    const latest = snapshots()[1]?.data as { content: { text: string }[]; source: { form: string; sections: unknown } }
    expect(latest.content[0]?.text).toContain('tick 2')
    expect(latest.source.form).toBe('snapshot')
    expect(latest.source.sections).toEqual([{ name: 'clock', text: 'tick 2' }])
    clock = undefined
    f.agent.followup('d')
    await f.agent.whenIdle()
    expect(snapshots()).toHaveLength(3)
    expect((snapshots()[2]?.data as { content: { text: string }[] }).content[0]?.text).toMatch(/none any more/)
    // The snapshot is part of the step's input, after the claimed prompt.
    const firstRequest = f.model.requests[0]?.messages.map((m) => m.source.kind)
    expect(firstRequest).toEqual(['user', 'plugin'])
  })

  it('a pre-step listener that answers itself drops the snapshot, and a rejected step does not advance it', async () => {
    const f = await loopFixture([{ text: '1' }, { text: '2' }])
    f.harness.prompt.context('env', { text: 'env v1' })
    let mode: 'reject' | 'pass' = 'reject'
    f.harness.hooks.on('agent/pre-step', (_p, next) => (mode === 'reject' ? { kind: 'reject' } : next()))
    f.agent.followup('a')
    await f.agent.whenIdle()
    mode = 'pass'
    f.agent.followup('b')
    await f.agent.whenIdle()
    const plugins = f.ofType('user/message').filter((e) => (e.data as { source: { kind: string } }).source.kind === 'plugin')
    expect(plugins).toHaveLength(1)
  })
})
