import { describe, expect, it } from 'vitest'
import { HarnessError, verifySessionLog, type SessionWriter } from '../../src/index.js'
import { loopFixture } from '../support/loop-fixture.js'
import { faultyStore, wrappedStore } from '../support/faults.js'

/**
 * A memory store whose writers' flushes wait for `release()` once `hold()` was called: like a disk that is slow
 * to fsync, so a test can act while the loop waits for its turn-end flush. `flushing` resolves when a held
 * flush starts.
 */
function slowFlushStore() {
  let held = false
  let started!: () => void
  let flushing = new Promise<void>((resolve) => (started = resolve))
  let release!: () => void
  let released = Promise.resolve()
  const wrap = (writer: SessionWriter): SessionWriter => ({
    append: (event) => writer.append(event),
    flush: async () => {
      if (held) {
        held = false
        started()
        await released
      }
      await writer.flush()
    },
    close: () => writer.close(),
  })
  const store = wrappedStore(wrap)
  return {
    store,
    /** Holds the next flush until {@link release}. */
    hold(): Promise<void> {
      held = true
      flushing = new Promise<void>((resolve) => (started = resolve))
      released = new Promise<void>((resolve) => (release = resolve))
      return flushing
    },
    release: () => release(),
  }
}

const userTexts = (f: Awaited<ReturnType<typeof loopFixture>>) =>
  f.ofType('user/message').map((e) => (e.data as { content: { text: string }[] }).content[0]?.text)

describe('driver races at the end of a turn', () => {
  it('dispose during the turn-end flush stops the driver: queued input stays queued, no further turn runs', async () => {
    const slow = slowFlushStore()
    // Turn 1 answers; any later request would hang until aborted.
    const f = await loopFixture((_request, index) => (index === 0 ? { text: 'first' } : { hang: true }), { store: slow.store })
    f.harness.hooks.on('session/event', ({ event }) => {
      if (event.type === 'turn/end') void slow.hold()
    })
    f.agent.followup('one')
    f.agent.followup('two') // queued behind turn 1
    await new Promise<void>((resolve) => {
      f.harness.hooks.on('session/event', ({ event }) => {
        if (event.type === 'turn/end') queueMicrotask(resolve)
      })
    })
    const disposed = f.agent.dispose()
    slow.release()
    await disposed
    expect(f.turnEnds()).toEqual([{ kind: 'completed' }])
    expect(f.model.requests).toHaveLength(1)
    expect(f.agent.inbox.nextTurn.map((m) => (m.content[0] as { text: string }).text)).toEqual(['two'])
    expect(verifySessionLog(f.agent.session.events).problems).toEqual([])
    await f.harness.close()
  })

  it('a followup sent while a blocked turn flushes its end starts its own turn', async () => {
    const slow = slowFlushStore()
    const f = await loopFixture([{ text: 'answer' }], { store: slow.store })
    let blocked = false
    f.harness.hooks.on('agent/pre-step', (payload, next) => {
      if (blocked) return next()
      blocked = true
      return { kind: 'reject' }
    })
    f.harness.hooks.on('session/event', ({ event }) => {
      if (event.type === 'turn/end' && f.ofType('turn/end').length === 1) void slow.hold()
    })
    const flushing = new Promise<void>((resolve) => {
      f.harness.hooks.on('session/event', ({ event }) => {
        if (event.type === 'turn/end' && f.ofType('turn/end').length === 1) queueMicrotask(resolve)
      })
    })
    f.agent.followup('refused')
    await flushing
    f.agent.followup('later')
    slow.release()
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'blocked' }, { kind: 'completed' }])
    expect(userTexts(f)).toEqual(['later'])
    expect(f.agent.inbox.hasPending).toBe(false)
    await f.harness.close()
  })

  it('a followup sent while a failed turn flushes its end starts its own turn', async () => {
    const slow = slowFlushStore()
    const f = await loopFixture([{ error: { code: 'AUTH' } }, { text: 'answer' }], { store: slow.store })
    const flushing = new Promise<void>((resolve) => {
      f.harness.hooks.on('session/event', ({ event }) => {
        if (event.type === 'turn/end' && f.ofType('turn/end').length === 1) {
          void slow.hold()
          queueMicrotask(resolve)
        }
      })
    })
    f.agent.followup('fails')
    await flushing
    f.agent.followup('later')
    slow.release()
    await f.agent.whenIdle()
    expect(f.turnEnds().map((r) => (r as { kind: string }).kind)).toEqual(['error', 'completed'])
    expect(userTexts(f)).toEqual(['fails', 'later'])
    await f.harness.close()
  })

  it('dispose right after a cancel and a followup starts no new turn: the followup stays queued', async () => {
    const f = await loopFixture([{ hang: true }, { hang: true }])
    f.agent.followup('one')
    await new Promise<void>((resolve) => {
      f.harness.hooks.on('llm/stream', (request, next) => {
        resolve()
        return next()
      })
    })
    f.agent.cancel()
    f.agent.followup('two') // asks the dying driver to come back for it
    await f.agent.dispose()
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    expect(f.model.requests).toHaveLength(1)
    expect(f.agent.inbox.nextTurn.map((m) => (m.content[0] as { text: string }).text)).toEqual(['two'])
    await f.harness.close()
  })

  it('a cancel stops the turn even when the store refuses to clear the inbox (the failure reaches the caller)', async () => {
    let failSplices = false
    const store = faultyStore((event) => failSplices && event.type === 'agent/inbox/spliced')
    const f = await loopFixture([{ hang: true }], { store })
    const streaming = new Promise<void>((resolve) => {
      f.harness.hooks.on('llm/stream', (request, next) => {
        resolve()
        return next()
      })
    })
    f.agent.followup('one')
    f.agent.followup('two')
    await streaming
    failSplices = true
    expect(() => f.agent.cancel()).toThrow(HarnessError)
    await f.agent.whenIdle()
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'user' } }])
    expect(f.agent.inbox.nextTurn).toHaveLength(1)
    failSplices = false
    await f.harness.close()
  })
})
