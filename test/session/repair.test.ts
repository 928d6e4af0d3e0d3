import { describe, expect, it } from 'vitest'
import { closerEvents, interruptedTurnClosers } from '../../src/session/repair.js'
import { Session } from '../../src/session/session.js'
import { verifySessionLog } from '../../src/session/verify.js'
import type { SessionEvent } from '../../src/session/events.js'
import { assistantData, rawLog, toolResultData, userData } from '../support/events.js'

const call = (id: string) => ({ type: 'tool-call' as const, id, name: 'f', arguments: '{}' })

/** turn 1 complete, then turn 2 open up to the given point. */
function openTurnLog(extra: [string, unknown, Partial<SessionEvent>?][]): SessionEvent[] {
  return rawLog([
    ['turn/start', { turn: 1 }],
    ['turn/end', { turn: 1, reason: { kind: 'completed' } }],
    ['turn/start', { turn: 2 }],
    ...extra,
  ])
}

describe('interruptedTurnClosers', () => {
  it('returns nothing for a balanced log or an empty one', () => {
    expect(interruptedTurnClosers([])).toEqual([])
    expect(interruptedTurnClosers(rawLog([['turn/start', { turn: 1 }], ['step/start', { turn: 1, step: 1 }], ['step/end', { turn: 1, step: 1 }], ['turn/end', { turn: 1, reason: { kind: 'completed' } }]]))).toEqual([])
  })

  it('closes an open turn with no step with turn/end {interrupted} only', () => {
    expect(interruptedTurnClosers(openTurnLog([]))).toEqual([{ type: 'turn/end', data: { turn: 2, reason: { kind: 'interrupted' } } }])
  })

  it('closes an open step without pending calls with step/end then turn/end', () => {
    const closers = interruptedTurnClosers(openTurnLog([['step/start', { turn: 2, step: 1 }], ['user/message', userData('x'), { surfaceOp: 'append' }]]))
    expect(closers).toEqual([
      { type: 'step/end', data: { turn: 2, step: 1 } },
      { type: 'turn/end', data: { turn: 2, reason: { kind: 'interrupted' } } },
    ])
  })

  it('answers a pending call whose tool/call was logged with TOOL_OUTCOME_UNKNOWN citing the call', () => {
    const log = openTurnLog([
      ['step/start', { turn: 2, step: 1 }],
      ['assistant/message', assistantData([call('c1')], 'a', 2, 1), { surfaceOp: 'append', sourceEventSeqs: [] }],
      ['tool/call', { turn: 2, step: 1, callId: 'c1', name: 'f', arguments: '{}' }],
    ])
    const [result, stepEnd, turnEnd] = interruptedTurnClosers(log)
    expect(result?.type).toBe('tool/result')
    expect(result?.surfaceOp).toBe('append')
    expect(result?.sourceEventSeqs).toEqual([5])
    const data = result?.data as { turn: number; step: number; message: Record<string, unknown>; error: unknown }
    expect(data.turn).toBe(2)
    expect(data.step).toBe(1)
    expect(data.error).toEqual({ name: 'ToolOutcomeUnknownError', code: 'TOOL_OUTCOME_UNKNOWN' })
    expect(data.message.id).toBe('interrupted-tool-result-c1-6')
    expect(data.message.source).toEqual({ kind: 'tool', callId: 'c1' })
    const block = (data.message.content as { isError: boolean; toolCallId: string; content: { text: string }[] }[])[0]
    expect(block?.isError).toBe(true)
    expect(block?.toolCallId).toBe('c1')
    expect(block?.content[0]?.text).toMatch(/outcome is unknown/)
    expect(stepEnd).toEqual({ type: 'step/end', data: { turn: 2, step: 1 } })
    expect(turnEnd?.type).toBe('turn/end')
  })

  it('answers a pending call without tool/call with TOOL_NOT_STARTED and no provenance, in call order', () => {
    const log = openTurnLog([
      ['step/start', { turn: 2, step: 1 }],
      ['assistant/message', assistantData([call('c1'), call('c2'), call('c3')], 'a', 2, 1), { surfaceOp: 'append', sourceEventSeqs: [] }],
      ['tool/call', { turn: 2, step: 1, callId: 'c1', name: 'f', arguments: '{}' }],
      ['tool/result', toolResultData('c1', 'done', 'r1', 2, 1), { surfaceOp: 'append', sourceEventSeqs: [5] }],
    ])
    const closers = interruptedTurnClosers(log)
    expect(closers.map((c) => c.type)).toEqual(['tool/result', 'tool/result', 'step/end', 'turn/end'])
    const ids = closers.slice(0, 2).map((c) => (c.data as { message: { id: string } }).message.id)
    expect(ids).toEqual(['interrupted-tool-result-c2-7', 'interrupted-tool-result-c3-8'])
    for (const c of closers.slice(0, 2)) {
      expect(c.sourceEventSeqs).toBeUndefined()
      expect((c.data as { error: unknown }).error).toEqual({ name: 'ToolNotStartedError', code: 'TOOL_NOT_STARTED' })
      expect(JSON.stringify(c.data)).toMatch(/never ran/)
    }
  })

  it('forgets calls of a step that already ended', () => {
    const log = openTurnLog([
      ['step/start', { turn: 2, step: 1 }],
      ['assistant/message', assistantData([call('c1')], 'a', 2, 1), { surfaceOp: 'append', sourceEventSeqs: [] }],
      ['step/end', { turn: 2, step: 1 }],
    ])
    expect(interruptedTurnClosers(log)).toEqual([{ type: 'turn/end', data: { turn: 2, reason: { kind: 'interrupted' } } }])
  })
})

describe('closerEvents', () => {
  const log = openTurnLog([
    ['step/start', { turn: 2, step: 1 }],
    ['assistant/chunk', { turn: 2, step: 1, chunk: { type: 'block-end', index: 0, block: call('c1') } }],
    ['assistant/message', assistantData([call('c1')], 'a', 2, 1), { surfaceOp: 'append', sourceEventSeqs: [4] }],
    ['tool/call', { turn: 2, step: 1, callId: 'c1', name: 'f', arguments: '{}' }],
  ])

  it('continues the seqs and stamps every closer with the last real time (deterministic)', () => {
    const closers = closerEvents(log)
    expect(closers.map((c) => c.seq)).toEqual([7, 8, 9])
    expect(closers.every((c) => c.time === (log[log.length - 1] as SessionEvent).time)).toBe(true)
    expect(closerEvents(log)).toEqual(closers)
    expect(closerEvents([])).toEqual([])
  })

  it('repairs into a log a session adopts and the verifier accepts', () => {
    const repaired = [...log, ...closerEvents(log)]
    const session = new Session({ seed: repaired })
    expect(session.openTurn).toBeUndefined()
    expect(session.deriveMessages().map((m) => m.id)).toEqual(['a', 'interrupted-tool-result-c1-7'])
    expect(verifySessionLog(repaired)).toEqual({ ok: true, problems: [] })
    expect(verifySessionLog(log).ok).toBe(false)
  })
})
