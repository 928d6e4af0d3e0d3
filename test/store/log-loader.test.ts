import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { HarnessError } from '../../src/errors/harness-error.js'
import { CompactRun, EventLog } from '../../src/session/event-log.js'
import type { SessionEvent } from '../../src/session/events.js'
import { Session, type SessionHeader } from '../../src/session/session.js'
import { decodeRecord } from '../../src/store/chunk-runs.js'
import { encodeRecordLines, headerRecord, scanSessionFile } from '../../src/store/session-file.js'
import { validateStoredLog } from '../../src/store/stored-log.js'
import { arbitraryStoredLog } from './chunk-arbitraries.js'

const header: SessionHeader = Object.freeze({ version: 1, id: 's1', createdAt: 1 })

const deepFrozen = (v: unknown): boolean =>
  typeof v !== 'object' || v === null || (Object.isFrozen(v) && Object.values(v).every((x) => deepFrozen(x)))

// What every line means, read the plain way: one JSON.parse per line, packed rows expanded.
const reference = (lines: readonly string[]): SessionEvent[] => lines.flatMap((line) => decodeRecord(JSON.parse(line)))

const fileOf = (lines: readonly string[]): Buffer => Buffer.from([headerRecord(header), ...lines].map((l) => l + '\n').join(''), 'utf8')

const linesOf = (events: readonly SessionEvent[], pack = true): string[] => encodeRecordLines(events, pack).split('\n').slice(0, -1)

const scan = (lines: readonly string[]): EventLog => scanSessionFile(fileOf(lines), '/x/s1.jsonl', 's1').log

// The loop's step: block starts and ends, text deltas, a tool call delta, usage, finish.
function loopStep(turn: number, step: number, seq: number, time: number, words: number): SessionEvent[] {
  const chunks: unknown[] = [
    { type: 'block-start', index: 0, blockType: 'text' },
    ...Array.from({ length: words }, (_, i) => ({ type: 'text-delta', index: 0, text: `w${i} ` })),
    { type: 'block-end', index: 0, block: { type: 'text', text: 'w0 w1 ' } },
    { type: 'block-start', index: 1, blockType: 'tool-call' },
    { type: 'tool-call-delta', index: 1, id: `call_${step}`, name: 'bump', argumentsDelta: '{}' },
    { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } },
    { type: 'finish', reason: { kind: 'tool-calls' } },
  ]
  return [
    { type: 'step/start', seq, time, data: { turn, step } },
    ...chunks.map((chunk, k) => ({ type: 'assistant/chunk', seq: seq + 1 + k, time: time + k, data: { turn, step, chunk } })),
    { type: 'step/end', seq: seq + 1 + chunks.length, time: time + 40, data: { turn, step } },
  ] as unknown as SessionEvent[]
}

function loopSteps(count: number): SessionEvent[] {
  const events: SessionEvent[] = []
  for (let step = 1; step <= count; step++) events.push(...loopStep(1, step, events.length, 1_000 + step * 100, 5))
  return events
}

describe('loading a session file into a compact log', () => {
  it('gathers the chunks of a step, packed or not, into one run and reads every event back unchanged', () => {
    const events = loopSteps(3)
    const log = scan(linesOf(events))
    expect(log.records.map((r) => (r instanceof CompactRun ? `run ${r.count}` : r.type))).toEqual(
      ['step/start', 'run 11', 'step/end', 'step/start', 'run 11', 'step/end', 'step/start', 'run 11', 'step/end'],
    )
    expect(JSON.stringify(log.toArray())).toBe(JSON.stringify(events))
    expect(log.toArray().every(deepFrozen)).toBe(true)
    expect(log.at(5)).toBe(log.at(5))
  })

  it('reads identical short chunks once: the members share one frozen chunk object', () => {
    const log = scan(linesOf(loopSteps(2)))
    const chunkAt = (seq: number): unknown => (log.at(seq)?.data as { chunk: unknown }).chunk
    expect(chunkAt(1)).toBe(chunkAt(14)) // the two steps' text block-start
    expect(chunkAt(1)).not.toBe(chunkAt(8)) // the tool block-start
    expect(Object.isFrozen(chunkAt(1))).toBe(true)
  })

  it('starts a new run at another step or another packed template', () => {
    const base = loopSteps(1).slice(0, 8) // step/start, block-start, 5 deltas, block-end
    const more = Array.from({ length: 4 }, (_, k) => ({ type: 'assistant/chunk', seq: 8 + k, time: 9, data: { turn: 1, step: 1, chunk: { type: 'reasoning-delta', index: 0, text: `r${k}` } } }))
    const next = { type: 'assistant/chunk', seq: 12, time: 9, data: { turn: 1, step: 2, chunk: { type: 'block-start', index: 0, blockType: 'text' } } }
    const events = [...base, ...more, next] as unknown as SessionEvent[]
    const log = scan(linesOf(events))
    expect(log.records.map((r) => (r instanceof CompactRun ? `run ${r.count}` : r.type))).toEqual(['step/start', 'run 7', 'run 4', 'run 1'])
    expect(JSON.stringify(log.toArray())).toBe(JSON.stringify(events))
  })

  it('reads lines written another way (spaces, leading zeros, negative times, other key orders) like JSON.parse', () => {
    const lines = [
      '{"type":"step/start","seq":0,"time":5,"data":{"turn":1,"step":1}}',
      '{"type":"assistant/chunk","seq":1,"time":-3,"data":{"turn":1,"step":1,"chunk":{"type":"block-start","index":0,"blockType":"text"}}}',
      '{"type":"assistant/chunk", "seq":2,"time":6,"data":{"turn":1,"step":1,"chunk":{"type":"usage"}}}',
      '{"type":"assistant/chunk","seq":3,"time":6,"data":{"turn":1,"step":1,"chunk":{"type":"usage"} }}',
      '{"type":"assistant/chunk","seq":4,"time":6,"data":{"step":1,"turn":1,"chunk":{"type":"usage"}}}',
      '{"type":"assistant/chunk","seq":5,"time":6,"data":{"turn":1,"step":1,"chunk":{"type":"usage"}},"ignorable":true}',
      '{"type":"assistant/chunk","seq":6,"time":6,"data":{"turn":1,"step":1,"chunk":"text"}}',
      '{"type":"step/end","seq":7,"time":6,"data":{"turn":1,"step":1},"surfaceOp":"append"}',
      '{"type":"step/start","seq":8,"time":1e3,"data":{"turn":1,"step":2}}',
      '{"type":"step/end","seq":9,"time":12345678901234567,"data":{"turn":1,"step":2}}',
    ]
    expect(JSON.stringify(scan(lines).toArray())).toBe(JSON.stringify(reference(lines)))
  })

  it('refuses a damaged line before valid ones, and cuts a torn tail, as before', () => {
    const lines = linesOf(loopSteps(2))
    const damaged = [...lines.slice(0, 3), lines[3]?.slice(0, 40) as string, ...lines.slice(4)]
    expect(() => scan(damaged)).toThrow(/s1\.jsonl:5: line 5 is not a JSON record, and valid records follow it/)
    const torn = Buffer.concat([fileOf(lines), Buffer.from(lines[0]?.slice(0, 30) as string)])
    const scanned = scanSessionFile(torn, '/x/s1.jsonl', 's1')
    expect(scanned.tailRepair?.line).toBe(lines.length + 2)
    expect(scanned.log.length).toBe(loopSteps(2).length)
  })

  it('decodes UTF-8 text and lines longer than a decoding block exactly', () => {
    const long = 'é'.repeat(700_000) + 'x'.repeat(600_000)
    const events = [...loopSteps(1), { type: 'todo/write', seq: 13, time: 1, data: { text: long, more: '🙂\u2028' } }] as unknown as SessionEvent[]
    const lines = linesOf(events)
    const many = Array.from({ length: 3000 }, () => 'ü').join('')
    const tail = [{ type: 'todo/write', seq: 14, time: 2, data: { many } }] as unknown as SessionEvent[]
    const all = [...lines, ...linesOf(tail)]
    expect(JSON.stringify(scan(all).toArray())).toBe(JSON.stringify([...events, ...tail]))
  })

  it('reads any stored log (packed or not, odd chunk shapes, loop lines) exactly as one JSON.parse per line', () => {
    fc.assert(
      fc.property(arbitraryStoredLog(), fc.boolean(), (events, pack) => {
        const lines = linesOf(events, pack)
        const log = scan(lines)
        expect(JSON.stringify(log.toArray())).toBe(JSON.stringify(reference(lines)))
        expect(log.toArray().every(deepFrozen)).toBe(true)
      }),
      { numRuns: 150 },
    )
  })
})

describe('resuming takes over the fold its store validated', () => {
  const validated = (events: readonly SessionEvent[], knownTypes?: string[]): EventLog => {
    const log = scan(linesOf(events))
    validateStoredLog(header, log, () => 'here', knownTypes)
    return log
  }
  const turn = (): SessionEvent[] => {
    const s = new Session({ id: 's1' })
    s.append('turn/start', { turn: 1 })
    s.append('step/start', { turn: 1, step: 1 })
    s.append('user/message', { id: 'u1', role: 'user', content: [{ type: 'text', text: 'hi' }], source: { kind: 'user' } }, { surfaceOp: 'append' })
    s.append('request/context', { provider: 'p', model: 'm' })
    for (let i = 0; i < 5; i++) s.appendChunk(1, 1, Object.freeze({ type: 'text-delta', index: 0, text: `t${i}` }))
    s.append('assistant/message', { turn: 1, step: 1, message: { id: 'a1', role: 'assistant', content: [{ type: 'text', text: 'ok' }], source: { kind: 'model', provider: 'p', model: 'm' } } }, { surfaceOp: 'append' })
    s.append('step/end', { turn: 1, step: 1 })
    s.append('turn/end', { turn: 1, reason: { kind: 'completed' } })
    s.append('turn/start', { turn: 2 })
    return [...s.events]
  }
  const state = (s: Session): string => JSON.stringify([s.events, s.deriveMessages(), s.surfaceNodes(), s.requestContext(), s.lastTurn, s.openTurn, s.length])

  it('gives the same session as walking the log, and a session of its own', () => {
    const events = turn()
    const log = validated(events)
    const resumed = new Session({ id: 's1', header, log, seed: [] })
    const walked = new Session({ id: 's1', header, log: scan(linesOf(events)) })
    expect(state(resumed)).toBe(state(walked))
    resumed.append('step/start', { turn: 2, step: 1 })
    expect(log.length).toBe(events.length)
    // Taken once: the next Session from the same log walks it, from the unchanged stored log.
    expect(state(new Session({ id: 's1', header, log }))).toBe(state(walked))
  })

  it('walks the log again when it changed since, or when a type it accepted is not known to the new session', () => {
    const events = turn()
    const log = validated(events)
    log.push(Object.freeze({ type: 'todo/write', seq: events.length, time: 1, data: {} }) as SessionEvent)
    expect(new Session({ id: 's1', header, log }).length).toBe(events.length + 1)
    const plugin = [...events, { type: 'my/record', seq: events.length, time: 1, data: {} }] as unknown as SessionEvent[]
    const known = validated(plugin, ['my/record'])
    let error: unknown
    try {
      new Session({ id: 's1', header, log: known })
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(HarnessError)
    expect((error as HarnessError).code).toBe('SESSION_CORRUPT')
    expect(new Session({ id: 's1', header, log: validated(plugin, ['my/record']), knownTypes: ['my/record'] }).length).toBe(plugin.length)
  })
})
