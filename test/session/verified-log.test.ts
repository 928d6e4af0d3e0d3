import { describe, expect, it } from 'vitest'
import { eventLogOf } from '../../src/session/event-log.js'
import type { SessionEvent } from '../../src/session/events.js'
import { Session } from '../../src/session/session.js'
import { VerifiedLog } from '../../src/session/verified-log.js'

const model = (id: string, replayState?: string) => ({
  turn: 1,
  step: 1,
  message: { id, role: 'assistant', content: [{ type: 'text', text: 'ok' }], source: { kind: 'model', provider: 'p', model: 'm', ...(replayState !== undefined ? { replayState } : {}) } },
})

const aTurn = (replayState?: string): SessionEvent[] => {
  const s = new Session({ id: 's1' })
  s.append('turn/start', { turn: 1 })
  s.append('step/start', { turn: 1, step: 1 })
  s.append('user/message', { id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }, { surfaceOp: 'append' })
  s.append('request/context', { provider: 'p', model: 'm' })
  for (let i = 0; i < 5; i++) s.appendText(1, 1, 'text-delta', 0, `t${i}`)
  s.append('assistant/message', model('a1', replayState), { surfaceOp: 'append' })
  s.append('step/end', { turn: 1, step: 1 })
  s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
  s.append('turn/start', { turn: 2 })
  return [...s.events]
}

const state = (s: Session): string => JSON.stringify([s.events, s.deriveMessages(), s.surfaceNodes(), s.requestContext(), s.lastTurn, s.openTurn, s.length])

describe('a verified log', () => {
  it('is taken over once by the Session given it, and walked again after that', () => {
    const log = eventLogOf(aTurn())
    const verified = Session.verify({ id: 's1', log })
    expect(verified).toBeInstanceOf(VerifiedLog)
    // The same records as the log checked, which is left as it was (a plain log, walked by every Session).
    expect(verified.records).toEqual(log.records)
    expect(log).not.toBeInstanceOf(VerifiedLog)
    const walked = new Session({ id: 's1', log })
    const resumed = new Session({ id: 's1', log: verified })
    expect(state(resumed)).toBe(state(walked))
    // The taken fold is the resumed session's own: appending to it changes neither the store's log nor a later walk.
    resumed.append('step/start', { turn: 2, step: 1 })
    expect(verified.length).toBe(walked.length)
    expect(verified.takeFold(verified.known)).toBeUndefined()
    expect(state(new Session({ id: 's1', log: verified }))).toBe(state(walked))
  })

  it('gives no fold once the log changed, or to a session that does not accept every type it did', () => {
    const events = aTurn()
    const log = eventLogOf(events)
    const verified = Session.verify({ id: 's1', log })
    verified.push(Object.freeze({ type: 'todo/write', seq: events.length, time: 1, data: {} }) as SessionEvent)
    expect(new Session({ id: 's1', log: verified }).length).toBe(events.length + 1)
    expect(verified.takeFold(verified.known)).toBeUndefined()
    const plugin = eventLogOf([...events, Object.freeze({ type: 'my/record', seq: events.length, time: 1, data: {} }) as SessionEvent])
    const known = Session.verify({ id: 's1', log: plugin, knownTypes: ['my/record'] })
    expect(() => new Session({ id: 's1', log: known })).toThrow(/unknown event type 'my\/record'/)
  })
})

describe('the history view', () => {
  it('says whether any message carries replay state, beside the history, which stays the plain frozen array', () => {
    const without = new Session({ log: eventLogOf(aTurn()) })
    const view = without.historyView()
    expect(view.hasReplayState).toBe(false)
    expect(view.messages).toBe(without.deriveMessagesFrozen())
    expect(Object.isFrozen(view.messages)).toBe(true)
    expect(view.messages).toEqual(without.deriveMessages())
    expect(Object.getOwnPropertyNames(view.messages)).toEqual([...view.messages.map((_, i) => String(i)), 'length'])
    expect(without.historyView()).toBe(view) // one view until the history changes
    expect(new Session({ log: eventLogOf(aTurn('opaque')) }).historyView().hasReplayState).toBe(true)
  })
})
