import { describe, expect, it } from 'vitest'
import { BlockAssembler } from '../../src/llm/block-assembler.js'
import { createAssistantMessage } from '../../src/llm/messages.js'
import { scriptChunks } from '../../src/llm/adapters/scripted.js'
import { canonicalHeader } from '../../src/session/request-header.js'
import { Session } from '../../src/session/session.js'
import { verifySessionLog } from '../../src/session/verify.js'
import type { SessionEvent } from '../../src/session/events.js'
import { toolResultData, userData } from '../support/events.js'

/** One complete turn, built through the real append pipeline: text + a tool call, the call run, a second step. */
function validLog(): SessionEvent[] {
  const s = new Session()
  s.append('turn/start', { turn: 1 })
  s.append('step/start', { turn: 1, step: 1 })
  s.append('user/message', userData('list files'), { surfaceOp: 'append' })
  s.append('request/header', { header: canonicalHeader({ config: { provider: 'p', model: 'm', maxTokens: 10 }, adapterDefaults: { maxTokens: true }, system: 'sys' }), reason: 'initial' })
  const step = (stepNo: number, script: Parameters<typeof scriptChunks>[0]): void => {
    const assembler = new BlockAssembler()
    const seqs: number[] = []
    for (const chunk of scriptChunks(script)) {
      seqs.push(s.append('assistant/chunk', { turn: 1, step: stepNo, chunk }).seq)
      assembler.push(chunk)
    }
    const message = createAssistantMessage(assembler.blocks(), { kind: 'model', provider: 'p', model: 'm' })
    s.append('assistant/message', { turn: 1, step: stepNo, message }, { surfaceOp: 'append', sourceEventSeqs: seqs })
  }
  step(1, { text: ['Let me ', 'look.'], toolCalls: [{ id: 'c1', name: 'list', arguments: { path: '.' } }] })
  const callSeq = s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'list', arguments: '{"path":"."}' }).seq
  s.append('tool/result', toolResultData('c1', 'a.txt'), { surfaceOp: 'append', sourceEventSeqs: [callSeq] })
  s.append('step/end', { turn: 1, step: 1 })
  s.append('step/start', { turn: 1, step: 2 })
  step(2, { text: 'There is a.txt.' })
  s.append('step/end', { turn: 1, step: 2 })
  s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
  return s.events.map((e) => JSON.parse(JSON.stringify(e)) as SessionEvent)
}

const indexOf = (log: SessionEvent[], type: string, nth = 0): number => {
  const hits = log.flatMap((e, i) => (e.type === type ? [i] : []))
  const at = hits[nth]
  if (at === undefined) throw new Error(`no ${type} #${nth}`)
  return at
}

/** Removes one event and renumbers the ones after it, fixing seq references so only the removal is wrong. */
function without(log: SessionEvent[], index: number): SessionEvent[] {
  const shift = (seq: number): number => (seq > index ? seq - 1 : seq)
  return log
    .filter((_, i) => i !== index)
    .map((e) => ({ ...e, seq: shift(e.seq), ...(e.sourceEventSeqs !== undefined ? { sourceEventSeqs: e.sourceEventSeqs.map(shift) } : {}) }))
}

describe('verifySessionLog', () => {
  it('accepts a valid log', () => {
    const log = validLog()
    expect(verifySessionLog(log)).toEqual({ ok: true, problems: [] })
  })

  it('catches a removed step/end, naming the seq where the grammar breaks', () => {
    const log = validLog()
    const last = indexOf(log, 'step/end', 1)
    const result = verifySessionLog(without(log, last))
    expect(result.ok).toBe(false)
    expect(result.problems).toContain(`seq ${last} (turn/end): step 2 is still open`)
  })

  it('catches a removed turn/end (the log ends inside the turn) unless an open turn is allowed', () => {
    const log = validLog()
    const cut = without(log, indexOf(log, 'turn/end'))
    expect(verifySessionLog(cut).problems).toEqual(['log ends inside turn 1'])
    expect(verifySessionLog(cut, { allowOpenTurn: true }).ok).toBe(true)
  })

  it('catches an assistant message whose content no longer equals its cited chunks', () => {
    const log = validLog()
    const i = indexOf(log, 'assistant/message', 1)
    const e = log[i] as SessionEvent
    const data = e.data as { message: { content: { type: string; text: string }[] } }
    data.message.content[0]!.text = 'There is b.txt.'
    const result = verifySessionLog(log)
    expect(result.problems).toEqual([`seq ${i} (assistant/message): content differs from what its ${e.sourceEventSeqs?.length} cited chunks assemble into`])
  })

  it('catches an assistant message citing something that is not a chunk, or a chunk of another step', () => {
    const log = validLog()
    const i = indexOf(log, 'assistant/message', 1)
    const firstChunk = indexOf(log, 'assistant/chunk')
    const withUser = log.map((e, k) => (k === i ? { ...e, sourceEventSeqs: [2] } : e))
    expect(verifySessionLog(withUser).problems).toContain(`seq ${i} (assistant/message): cites seq 2, which is not an assistant/chunk`)
    const otherStep = log.map((e, k) => (k === i ? { ...e, sourceEventSeqs: [firstChunk] } : e))
    expect(verifySessionLog(otherStep).problems).toContain(`seq ${i} (assistant/message): cites chunk ${firstChunk} of another step`)
  })

  it('catches a tool/result without a pending call', () => {
    const log = validLog()
    const call = indexOf(log, 'tool/call')
    const result = indexOf(log, 'tool/result')
    const renamed = log.map((e, k) => (k === call ? { ...e, data: { ...(e.data as object), callId: 'other' } } : e))
    expect(verifySessionLog(renamed).problems).toContain(`seq ${result} (tool/result): answers call 'c1' which has no pending tool/call`)
  })

  it('catches a non-canonical request header', () => {
    const log = validLog()
    const h = indexOf(log, 'request/header')
    const header = (log[h]?.data as { header: Record<string, unknown> }).header
    const variants = [
      { ...header, adapterDefaults: {} },
      { ...header, system: '' },
      { ...header, tools: [] },
      { ...header, config: { model: 'm', provider: 'p', maxTokens: 10 } },
    ]
    for (const bad of variants) {
      const broken = log.map((e, k) => (k === h ? { ...e, data: { header: bad, reason: 'initial' } } : e))
      expect(verifySessionLog(broken).problems).toEqual([`seq ${h} (request/header): header is not in canonical form`])
    }
    const noModel = log.map((e, k) => (k === h ? { ...e, data: { header: { config: { provider: 'p', model: '' } }, reason: 'initial' } } : e))
    expect(verifySessionLog(noModel).problems).toEqual([`seq ${h} (request/header): needs a provider and a model`])
  })

  it('catches a seq gap, naming the seq and its index', () => {
    const log = validLog()
    const gap = log.filter((_, i) => i !== 5)
    const result = verifySessionLog(gap)
    expect(result.ok).toBe(false)
    expect(result.problems[0]).toBe('seq 6 at index 5: seq must equal the index')
  })

  it('reports surface violations with the seq', () => {
    const log = validLog()
    const u = indexOf(log, 'user/message')
    const broken = log.map((e, k) => (k === u ? { type: e.type, seq: e.seq, time: e.time, data: e.data } : e))
    expect(verifySessionLog(broken).problems).toContain(`invalid event 'user/message' at seq ${u}: surface event 'user/message' needs a surfaceOp`)
  })

  it('never throws on garbage data', () => {
    const garbage = [{ type: 'assistant/message', seq: 0, time: 0, data: null, surfaceOp: 'append' }] as unknown as SessionEvent[]
    expect(() => verifySessionLog(garbage)).not.toThrow()
    expect(verifySessionLog(garbage).problems).toContain('seq 0 (assistant/message): has no message content')
    const log = validLog()
    const i = indexOf(log, 'assistant/message', 1)
    const noMessage = log.map((e, k) => (k === i ? { ...e, data: { turn: 1, step: 2 } } : e))
    expect(verifySessionLog(noMessage).problems).toContain(`seq ${i} (assistant/message): has no message content`)
    const chunk = (e: SessionEvent) => e.type === 'assistant/chunk'
    const nullChunks = log.map((e) => (chunk(e) ? { ...e, data: { ...(e.data as object), chunk: null } } : e))
    expect(verifySessionLog(nullChunks).problems.some((p) => p.startsWith(`seq ${i} (assistant/message): could not be checked`))).toBe(true)
    const nullHeader = log.map((e) => (e.type === 'request/header' ? { ...e, data: null } : e))
    expect(verifySessionLog(nullHeader).problems).toEqual([`seq ${indexOf(log, 'request/header')} (request/header): needs a provider and a model`])
  })
})
