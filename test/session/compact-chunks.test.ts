import { afterEach, describe, expect, it, vi } from 'vitest'
import fc from 'fast-check'
import type { StreamChunk } from '../../src/llm/types.js'
import { chunkEvent, CompactRun, EventLog } from '../../src/session/event-log.js'
import type { SessionEvent } from '../../src/session/events.js'
import { Session, type SessionWiring } from '../../src/session/session.js'
import type { SessionRecord } from '../../src/session/session-writer.js'
import { decodeRecordInto, packChunkRuns } from '../../src/store/chunk-runs.js'
import { harnessErrorOf } from '../support/events.js'

/** The event a persisted record stands for (a compact chunk or text record, or the event itself). */
function asEvent(record: SessionRecord): SessionEvent {
  if (!('kind' in record)) return record
  const { seq, time, turn, step } = record
  return chunkEvent(seq, time, turn, step, record.kind === 'text' ? { type: record.type, index: record.index, text: record.text } : record.chunk)
}

// The old path, which every compact read must reproduce: the loop appended each chunk as a frozen
// `{turn, step, chunk}` through `append`.
const appendOld = (s: Session, turn: number, step: number, chunk: unknown): number =>
  s.append('assistant/chunk', Object.freeze({ turn, step, chunk })).seq

const deepFrozen = (v: unknown): boolean =>
  typeof v !== 'object' || v === null || (Object.isFrozen(v) && Object.values(v).every((x) => deepFrozen(x)))

type Op =
  | { kind: 'chunk'; turn: number; step: number; chunk: unknown; freeze: boolean }
  | { kind: 'event'; type: string }
  | { kind: 'read'; at: number }
  | { kind: 'all' }

const text = fc.string({ maxLength: 6 })
const index = fc.integer({ min: 0, max: 2 })
const chunkArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ type: fc.constant('text-delta'), index, text }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('reasoning-delta'), index, text }) },
  { weight: 2, arbitrary: fc.record({ type: fc.constant('tool-call-delta'), index, id: fc.constantFrom('a', 'b'), argumentsDelta: text }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('block-start'), index, blockType: fc.constantFrom('text', 'reasoning') }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('usage'), usage: fc.record({ inputTokens: fc.nat(), outputTokens: fc.nat() }) }) },
  // Shapes the packer must not pack: other key orders, extra keys.
  { weight: 1, arbitrary: fc.record({ index, type: fc.constant('text-delta'), text }) },
  { weight: 1, arbitrary: fc.record({ type: fc.constant('text-delta'), index, text, extra: fc.boolean() }) },
)
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ kind: fc.constant('chunk' as const), turn: fc.integer({ min: 1, max: 2 }), step: fc.integer({ min: 1, max: 2 }), chunk: chunkArb, freeze: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('event' as const), type: fc.constantFrom('session/title', 'todo/write') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('read' as const), at: fc.nat({ max: 40 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('all' as const) }) },
)

function freezeDeep<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    for (const x of Object.values(v)) freezeDeep(x)
    Object.freeze(v)
  }
  return v
}

describe('compact chunk runs', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('materialise exactly the events the old append path logged, read at any point (property)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), (ops) => {
        let clock = 1_700_000_000_000
        vi.spyOn(Date, 'now').mockImplementation(() => clock)
        const compact = new Session({ id: 'c' })
        const old = new Session({ id: 'o' })
        for (const op of ops) {
          if (op.kind === 'chunk') {
            clock += op.turn + op.step // same time in both logs, not always increasing by one
            const c = op.freeze ? freezeDeep(structuredClone(op.chunk)) : structuredClone(op.chunk)
            const seq = compact.appendChunk(op.turn, op.step, c as StreamChunk)
            expect(seq).toBe(appendOld(old, op.turn, op.step, structuredClone(op.chunk)))
          } else if (op.kind === 'event') {
            clock++
            compact.append(op.type, { n: clock })
            old.append(op.type, { n: clock })
          } else if (op.kind === 'read') {
            const seq = op.at % Math.max(1, old.length)
            expect(JSON.stringify(compact.at(seq))).toBe(JSON.stringify(old.at(seq)))
            expect(compact.typeAt(seq)).toBe(old.at(seq)?.type)
            // A member read twice is the same object.
            expect(compact.at(seq)).toBe(compact.at(seq))
          } else {
            expect(compact.events.map((e) => JSON.stringify(e))).toEqual(old.events.map((e) => JSON.stringify(e)))
          }
        }
        expect(compact.length).toBe(old.length)
        const events = compact.events
        expect(JSON.stringify(events)).toBe(JSON.stringify(old.events))
        events.forEach((e, i) => {
          expect(e.seq).toBe(i)
          expect(deepFrozen(e)).toBe(true)
          expect(compact.at(i)).toBe(e)
        })
        // The same log adopted by a new Session (a fork, or a load) reads the same.
        expect(JSON.stringify(new Session({ log: compact.log }).events)).toBe(JSON.stringify(old.events))
        vi.restoreAllMocks()
      }),
      { numRuns: 200 },
    )
  })

  it('appendText (the loop\'s delta path) logs and hands the store exactly what appendChunk of the same delta does (property)', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), fc.boolean(), (ops, storeHasText) => {
        let clock = 1_700_000_000_000
        vi.spyOn(Date, 'now').mockImplementation(() => clock)
        const stored = { parts: [] as string[], chunks: [] as string[] }
        const wiring = (into: string[], compact: boolean): SessionWiring => ({
          persist: (_s, r) => void into.push(JSON.stringify(asEvent(r))),
          compactRecords: compact,
        })
        const parts = new Session({ id: 'p', wiring: wiring(stored.parts, storeHasText) })
        const chunks = new Session({ id: 'p', wiring: wiring(stored.chunks, true) })
        for (const op of ops) {
          if (op.kind === 'chunk') {
            clock += op.turn + op.step
            const c = op.chunk as { type: string; index: number; text: string }
            const exact = (c.type === 'text-delta' || c.type === 'reasoning-delta') && Object.keys(c).join() === 'type,index,text'
            const seq = exact
              ? parts.appendText(op.turn, op.step, c.type as 'text-delta', c.index, c.text)
              : parts.appendChunk(op.turn, op.step, freezeDeep(structuredClone(op.chunk)) as StreamChunk)
            expect(seq).toBe(chunks.appendChunk(op.turn, op.step, freezeDeep(structuredClone(op.chunk)) as StreamChunk))
          } else if (op.kind === 'event') {
            clock++
            parts.append(op.type, { n: clock })
            chunks.append(op.type, { n: clock })
          } else if (op.kind === 'read') {
            const seq = op.at % Math.max(1, chunks.length)
            expect(JSON.stringify(parts.at(seq))).toBe(JSON.stringify(chunks.at(seq)))
          }
        }
        expect(JSON.stringify(parts.events)).toBe(JSON.stringify(chunks.events))
        expect(stored.parts).toEqual(stored.chunks)
        expect(JSON.stringify(new Session({ log: parts.log }).events)).toBe(JSON.stringify(chunks.events))
        vi.restoreAllMocks()
      }),
      { numRuns: 200 },
    )
  })

  it('stores a run of text deltas as one record holding only the payload strings', () => {
    const s = new Session()
    s.append('step/start', { turn: 1, step: 1 })
    for (let i = 0; i < 20; i++) s.appendChunk(1, 1, Object.freeze({ type: 'text-delta', index: 0, text: `w${i}` }))
    s.append('step/end', { turn: 1, step: 1 })
    const records = s.log.records
    expect(records).toHaveLength(3)
    const run = records[1] as CompactRun
    expect(run).toBeInstanceOf(CompactRun)
    expect(run.items).toEqual(Array.from({ length: 20 }, (_, i) => `w${i}`))
    expect(run.cache).toBeUndefined() // nothing read yet: no event objects
    expect(s.at(5)?.data).toEqual({ turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'w4' } })
    expect(run.cache?.filter((e) => e !== undefined)).toHaveLength(1)
  })

  it('hands the store and listeners what the old path did, and builds events only for those who want them', () => {
    const run = (compactPath: boolean, wants: boolean) => {
      const persisted: SessionEvent[] = []
      const published: SessionEvent[] = []
      const validated: SessionEvent[] = []
      let clock = 1000
      vi.spyOn(Date, 'now').mockImplementation(() => clock++)
      const wiring: SessionWiring = {
        validate: (_s, e) => void validated.push(e),
        persist: (_s, r) => void persisted.push(asEvent(r)),
        publish: (_s, e) => void published.push(e),
        wantsChunkEvents: () => wants,
        compactRecords: compactPath,
      }
      const s = new Session({ id: 's', wiring })
      s.append('step/start', { turn: 1, step: 1 })
      for (const t of ['a', 'b', 'c']) s.appendChunk(1, 1, Object.freeze({ type: 'text-delta', index: 0, text: t }))
      vi.restoreAllMocks()
      return { s, persisted, published, validated }
    }
    const reference = run(false, true)
    for (const [compactPath, wants] of [
      [true, true],
      [true, false],
      [false, false],
    ] as const) {
      const got = run(compactPath, wants)
      expect(JSON.stringify(got.persisted)).toBe(JSON.stringify(reference.persisted))
      expect(got.published.map((e) => e.type)).toEqual(wants ? ['step/start', 'assistant/chunk', 'assistant/chunk', 'assistant/chunk'] : ['step/start'])
      expect(got.validated).toHaveLength(wants ? 4 : 1)
      // What a listener saw is the very object the log returns.
      for (const e of got.published) expect(got.s.at(e.seq)).toBe(e)
      expect(JSON.stringify(got.s.events)).toBe(JSON.stringify(reference.s.events))
    }
  })

  it('refuses what the old path refused, with the same errors', () => {
    const bad = { type: 'text-delta', index: 0, text: 'x', oops: undefined }
    const compact = harnessErrorOf(() => new Session().appendChunk(1, 1, bad as unknown as StreamChunk))
    const old = harnessErrorOf(() => appendOld(new Session(), 1, 1, bad))
    expect(compact.code).toBe('INVALID_JSON')
    expect(compact.message).toBe(old.message)
    // A listener appending to its own session is re-entrant on either path.
    const s: Session = new Session({ wiring: { publish: () => void s.appendChunk(1, 1, Object.freeze({ type: 'text-delta', index: 0, text: 'x' })) } })
    expect(harnessErrorOf(() => s.append('session/title', { title: 't' })).code).toBe('REENTRANT_APPEND')
    // A validator's veto leaves nothing behind.
    const vetoing = new Session({ wiring: { validate: () => {
      throw new Error('no')
    } } })
    expect(() => vetoing.appendChunk(1, 1, Object.freeze({ type: 'text-delta', index: 0, text: 'x' }))).toThrow('no')
    expect(vetoing.length).toBe(0)
  })
})

describe('loaded chunk runs stay packed', () => {
  const events = (): SessionEvent[] => {
    const s = new Session()
    let t = 5_000
    vi.spyOn(Date, 'now').mockImplementation(() => (t += 3))
    s.append('step/start', { turn: 1, step: 1 })
    for (let i = 0; i < 10; i++) s.appendChunk(1, 1, Object.freeze({ type: 'text-delta', index: 0, text: `t${i}` }))
    for (let i = 0; i < 4; i++) s.appendChunk(1, 1, Object.freeze({ type: 'tool-call-delta', index: 1, id: 'c1', name: 'f', argumentsDelta: `{${i}` }))
    s.append('step/end', { turn: 1, step: 1 })
    vi.restoreAllMocks()
    return [...s.events]
  }

  it('decodes stored records into runs that a Session adopts without materialising a member', () => {
    const original = events()
    const log = new EventLog()
    for (const record of packChunkRuns(original)) decodeRecordInto(JSON.parse(JSON.stringify(record)), log)
    expect(log.records.map((r) => (r instanceof CompactRun ? `run ${r.count}` : r.type))).toEqual(['step/start', 'run 10', 'run 4', 'step/end'])
    const session = new Session({ log })
    const runs = session.log.records.filter((r): r is CompactRun => r instanceof CompactRun)
    expect(runs).toHaveLength(2)
    expect(runs.every((r) => r.cache === undefined)).toBe(true)
    expect(session.length).toBe(original.length)
    expect(JSON.stringify(session.events)).toBe(JSON.stringify(original))
    // New chunks never extend a loaded run (it may be shared with the store's view).
    session.appendChunk(1, 1, Object.freeze({ type: 'tool-call-delta', index: 1, id: 'c1', name: 'f', argumentsDelta: '}' }))
    expect((runs[1] as CompactRun).count).toBe(4)
    expect(JSON.stringify(log.toArray())).toBe(JSON.stringify(original))
  })
})
