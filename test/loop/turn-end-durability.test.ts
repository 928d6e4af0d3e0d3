import { describe, expect, it } from 'vitest'
import { createHarness, HarnessError, MemoryStore, scriptedAdapter, verifySessionLog, type ScriptStep, type SessionEvent, type TurnEndReason } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'
import { faultyStore, firstMatches, flushFaultStore, wrappedStore } from '../support/faults.js'

// One tool step, then a reply: the turn flushes before the tool body (flush 1) and at its turn/end (flush 2).
const script: ScriptStep[] = [{ text: ['calling'], toolCalls: [{ name: 'echo', arguments: { text: 'a' } }] }, { text: ['done'] }]

function reasonOf(event: SessionEvent | undefined): TurnEndReason | undefined {
  return (event?.data as { reason?: TurnEndReason } | undefined)?.reason
}

describe('LOOP-DURABLE: a turn is reported completed only once its turn/end is durable (docs/stores.md, "When a write fails")', () => {
  it('a failing turn-end flush: listeners and the log see turn/end error SESSION_WRITE_FAILED (never completed); the session refuses appends; close() rejects', async () => {
    const store = flushFaultStore((n) => n >= 2)
    const f = await loopFixture(script, { tools: [echoTool()], store })
    const heard: SessionEvent[] = []
    f.harness.hooks.on('session/event', ({ event }) => {
      if (event.type === 'turn/end') heard.push(event)
    })
    f.agent.followup('go')
    await f.agent.whenIdle()

    expect(heard).toHaveLength(1)
    const reason = reasonOf(heard[0])
    expect(reason).toMatchObject({ kind: 'error', error: { code: 'SESSION_WRITE_FAILED' } })
    expect(reason?.kind === 'error' && reason.error.message).toMatch(/turn 1 ended completed, but that end could not be written/)
    // The in-memory log says what was reported, and the store never got that turn/end.
    const logged = f.ofType('turn/end')
    expect(logged).toEqual(heard)
    expect(store.durableLength(f.agent.id)).toBeLessThanOrEqual((heard[0] as SessionEvent).seq)
    expect(f.errors.some((e) => e instanceof HarnessError && e.code === 'SESSION_WRITE_FAILED')).toBe(true)
    expect(verifySessionLog(f.agent.session.events).problems).toEqual([])

    // Nothing more is appended behind the lost batch: a clear refusal instead.
    expect(f.agent.session.writeFailure?.code).toBe('SESSION_WRITE_FAILED')
    expect(() => f.agent.followup('more')).toThrow(/refuses appends: the flush at the end of turn 1 failed/)
    expect(f.agent.session.length).toBe((heard[0] as SessionEvent).seq + 1)
    await expect(f.harness.close()).rejects.toMatchObject({ code: 'SESSION_WRITE_FAILED' })
  })

  it('after that failure, resuming from what the store persisted closes turn 1 interrupted, runs a turn to completed, and the log verifies', async () => {
    let broken = true
    const store = flushFaultStore((n) => broken && n >= 2)
    const f = await loopFixture(script, { tools: [echoTool()], store })
    f.agent.followup('go')
    await f.agent.whenIdle()
    await f.harness.close().catch(() => {})
    broken = false

    const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: ['again'] }] })], tools: [echoTool()] })
    const agent = await harness.resumeAgent(f.agent.id, { interrupted: 'close' })
    agent.followup('go on')
    await agent.whenIdle()
    await harness.close()
    const persisted = (await store.read(f.agent.id)).events
    const ends = persisted.filter((e) => e.type === 'turn/end').map(reasonOf)
    expect(ends).toEqual([{ kind: 'interrupted' }, { kind: 'completed' }])
    expect(verifySessionLog(persisted).problems).toEqual([])
  })

  it('a failing flush before a tool body (kept as it was): TOOL_NOT_STARTED, the turn ends error, the retried turn-end flush makes it durable and the session goes on', async () => {
    const store = flushFaultStore((n) => n === 1)
    const calls: unknown[] = []
    const f = await loopFixture([...script, { text: ['next'] }], { tools: [echoTool(calls)], store })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(calls).toEqual([])
    expect(f.turnEnds()).toMatchObject([{ kind: 'error', error: { code: 'SESSION_WRITE_FAILED' } }])
    expect((f.ofType('tool/result')[0]?.data as { error?: { code: string } }).error?.code).toBe('TOOL_NOT_STARTED')
    expect(store.durableLength(f.agent.id)).toBe(f.agent.session.length)
    expect(f.agent.session.writeFailure).toBeUndefined()
    f.agent.followup('again')
    await f.agent.whenIdle()
    expect(f.turnEnds()[1]).toEqual({ kind: 'completed' })
    await f.harness.close()
  })

  it('only the turn\'s own end waits for its flush: the interrupted closers of a turn left open (the store refused its turn/end three times) and the next turn are published as they are appended', async () => {
    const f = await loopFixture([{ text: ['one'] }, { text: ['two'] }], { store: faultyStore(firstMatches(3, (e) => e.type === 'turn/end')) })
    const openWhenHeard: (number | undefined)[] = []
    f.harness.hooks.on('session/event', ({ session, event }) => {
      if (event.type === 'turn/start') openWhenHeard.push(session.openTurn)
    })
    f.agent.followup('first')
    await f.agent.whenIdle()
    expect(f.agent.session.openTurn).toBe(1)
    f.agent.followup('second')
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'interrupted' }, { kind: 'completed' }])
    // Heard while its turn was still open, not held back until a later turn end.
    expect(openWhenHeard).toEqual([1, 2])
    await f.harness.close()
  })

  it('harness.close() rejects when a writer cannot close (no longer swallowed), after closing every other agent and the store', async () => {
    let closed = 0
    const store = wrappedStore(
      (writer) => ({
        append: (event) => writer.append(event),
        flush: () => writer.flush(),
        close: async () => {
          await writer.close()
          closed++
          if (closed === 1) throw new HarnessError('the session file could not be closed (injected)', 'SESSION_WRITE_FAILED')
        },
      }),
      new MemoryStore(),
    )
    const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: ['hi'] }] })] })
    await harness.createAgent({ provider: 'scripted', model: 'm' })
    await harness.createAgent({ provider: 'scripted', model: 'm' })
    await expect(harness.close()).rejects.toMatchObject({ code: 'SESSION_WRITE_FAILED', message: expect.stringMatching(/could not be closed/) })
    expect(closed).toBe(2)
  })
})
