import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { Session } from '../../src/session/session.js'
import { foldMessages, projectSurfaceEvent } from '../../src/session/surface.js'
import type { Message } from '../../src/llm/types.js'
import type { EventRecord, SessionEvent, SurfaceOp } from '../../src/session/events.js'
import { assistantData, harnessErrorOf, rawLog, toolResultData, userData } from '../support/events.js'

function expectCorrupt(seed: EventRecord[], pattern: RegExp): void {
  const e = harnessErrorOf(() => new Session({ seed }))
  expect(e.code).toBe('SESSION_CORRUPT')
  expect(e.message).toMatch(pattern)
}

const goodSeed = (): SessionEvent[] =>
  rawLog([
    ['turn/start', { turn: 1 }],
    ['step/start', { turn: 1, step: 1 }],
    ['user/message', userData('hi'), { surfaceOp: 'append' }],
  ])

describe('seed adoption', () => {
  it('adopts a valid log and continues its seqs', () => {
    const s = new Session({ seed: goodSeed() })
    expect(s.length).toBe(3)
    expect(s.deriveMessages().map((m) => m.id)).toEqual(['u-hi'])
    expect(s.openTurn).toBe(1)
    expect(s.lastTurn).toBe(1)
    expect(s.append('step/end', { turn: 1, step: 1 }).seq).toBe(3)
  })

  it('adopts frozen events in place and copies unfrozen ones', () => {
    const seed = goodSeed()
    const frozen = Object.freeze(seed[0] as SessionEvent)
    const s = new Session({ seed: [frozen, ...seed.slice(1)] })
    expect(s.at(0)).toBe(frozen)
    expect(s.at(1)).not.toBe(seed[1])
    expect(Object.isFrozen(s.at(1))).toBe(true)
  })

  it('refuses an unexpected envelope key, naming the seq', () => {
    const seed = goodSeed()
    ;(seed[1] as unknown as Record<string, unknown>).extra = true
    expectCorrupt(seed, /session log is corrupt at seq 1: unexpected envelope key 'extra'/)
  })

  it('refuses legacy header shapes: delta headers and a request/header reason other than initial/resume/change', () => {
    const header = { config: { provider: 'p', model: 'm' } }
    expectCorrupt(rawLog([['turn/start', { turn: 1 }], ['request/header-delta', { delta: {} }]]), /at seq 1: delta headers are not supported/)
    expectCorrupt(rawLog([['turn/start', { turn: 1 }], ['request/header', { header, reason: 'fallback' }]]), /at seq 1: request\/header reason must be/)
    const live = new Session()
    live.append('turn/start', { turn: 1 })
    expect(harnessErrorOf(() => live.append('request/header', { header, reason: 'fallback' })).code).toBe('INVALID_EVENT')
    expect(harnessErrorOf(() => live.append('request/header-delta', {})).code).toBe('INVALID_EVENT')
    expect(live.append('request/header', { header, reason: 'initial' }).seq).toBe(1)
  })

  it('refuses a seq gap, naming the seq', () => {
    const seed = goodSeed()
    seed[2] = { ...(seed[2] as SessionEvent), seq: 3 }
    expectCorrupt(seed, /at seq 2: seq 3 where 2 was expected/)
  })

  it('refuses a missing type, a non-integer time and a non-true ignorable', () => {
    expectCorrupt(rawLog([['', {}]]), /at seq 0: missing type/)
    expectCorrupt([{ type: 'turn/start', seq: 0, time: 1.5, data: { turn: 1 } }], /at seq 0: time must be an integer/)
    expectCorrupt([{ type: 'x/y', seq: 0, time: 1, data: {}, ignorable: false as unknown as true }], /at seq 0: ignorable must be true or absent/)
  })

  it('refuses an unknown type that is not marked ignorable, and accepts it when ignorable', () => {
    const seed = [...goodSeed(), { type: 'future/feature', seq: 3, time: 5, data: { v: 2 } }]
    expectCorrupt(seed, /at seq 3: unknown event type 'future\/feature' is not marked ignorable/)
    const ok = new Session({ seed: [...goodSeed(), { type: 'future/feature', seq: 3, time: 5, data: { v: 2 }, ignorable: true }] })
    expect(ok.at(3)?.type).toBe('future/feature')
    expect(ok.at(3)?.ignorable).toBe(true)
  })

  it('accepts extra known types passed by the caller', () => {
    const seed = [...goodSeed(), { type: 'my/plugin', seq: 3, time: 5, data: {} }]
    expect(new Session({ seed, knownTypes: ['my/plugin'] }).length).toBe(3 + 1)
  })

  it('refuses a bad surface event, naming the seq and keeping the surface error as cause', () => {
    expectCorrupt(rawLog([['user/message', userData('x')]]), /at seq 0: invalid event 'user\/message' at seq 0: surface event 'user\/message' needs a surfaceOp/)
    expectCorrupt(
      rawLog([
        ['user/message', userData('x'), { surfaceOp: 'append' }],
        ['user/message', userData('y'), { surfaceOp: { op: 'replace', start: 5, end: 5 }, sourceEventSeqs: [0] }],
      ]),
      /at seq 1: .*must name current surface nodes/,
    )
    expectCorrupt(rawLog([['turn/start', { turn: 1 }, { surfaceOp: 'append' }]]), /at seq 0: .*may not carry surfaceOp/)
    const e = harnessErrorOf(() => new Session({ seed: rawLog([['user/message', userData('x')]]) }))
    expect((e.cause as { code?: string }).code).toBe('INVALID_EVENT')
  })

  it('refuses event data that is not lossless JSON', () => {
    const e = harnessErrorOf(() => new Session({ seed: [{ type: 'x/y', seq: 0, time: 1, data: { bad: Number.NaN } }], knownTypes: ['x/y'] }))
    expect(e.message).toMatch(/event 0 is not lossless JSON/)
  })

  it('endSeed appends session/end-seed after the seed (even an empty one), unpublished', () => {
    const published: string[] = []
    const wiring = { publish: (_s: Session, e: SessionEvent) => void published.push(e.type) }
    const s = new Session({ seed: goodSeed(), endSeed: true, wiring })
    expect(s.at(3)?.type).toBe('session/end-seed')
    expect(s.at(3)?.data).toEqual({})
    expect(published).toEqual([])
    expect(new Session({ seed: [], endSeed: true }).events.map((e) => e.type)).toEqual(['session/end-seed'])
    const already = [...goodSeed(), { type: 'session/end-seed', seq: 3, time: 1, data: {} }]
    expect(new Session({ seed: already, endSeed: true }).length).toBe(4)
    expect(new Session({ seed: goodSeed() }).length).toBe(3)
  })
})

describe('session identity', () => {
  it('refuses an id outside [A-Za-z0-9._-]{1,128} with INVALID_CONFIG', () => {
    const e = harnessErrorOf(() => new Session({ id: 'bad/id' }))
    expect(e.code).toBe('INVALID_CONFIG')
    expect(e.message).toMatch(/session id "bad\/id" must be 1-128 characters/)
    expect(new Session({ id: 'ok-id_1.2' }).header.id).toBe('ok-id_1.2')
  })
})

describe('header and context folds', () => {
  it('requestHeader() is the latest logged header; requestContext() the latest context record', () => {
    const s = new Session()
    expect(s.requestHeader()).toBeUndefined()
    expect(s.requestContext()).toBeUndefined()
    s.append('turn/start', { turn: 1 })
    s.append('request/header', { header: { config: { provider: 'p', model: 'a' } }, reason: 'initial' })
    s.append('request/context', { provider: 'p', model: 'a', contextWindow: 1000 })
    s.append('request/header', { header: { config: { provider: 'p', model: 'b' }, system: 'sys' }, reason: 'change' })
    s.append('request/context', { provider: 'p', model: 'b' })
    expect(s.requestHeader()).toEqual({ config: { provider: 'p', model: 'b' }, system: 'sys' })
    expect(Object.isFrozen(s.requestHeader())).toBe(true)
    expect(s.requestContext()).toEqual({ provider: 'p', model: 'b' })
  })

  it('the folds see seeded headers too', () => {
    const seed = rawLog([
      ['turn/start', { turn: 1 }],
      ['request/header', { header: { config: { provider: 'p', model: 'a' } }, reason: 'initial' }],
      ['turn/end', { turn: 1, reason: { kind: 'completed' } }],
    ])
    const s = new Session({ seed })
    expect(s.requestHeader()?.config.model).toBe('a')
    expect(s.openTurn).toBeUndefined()
  })
})

describe('deriveMessages()', () => {
  it('returns a fresh array of the shared frozen message objects stored in the log', () => {
    const s = new Session()
    const u = s.append('user/message', userData('q'), { surfaceOp: 'append' })
    const a = s.append('assistant/message', assistantData([{ type: 'text', text: 'a' }]), { surfaceOp: 'append' })
    const first = s.deriveMessages()
    const second = s.deriveMessages()
    expect(first).not.toBe(second)
    expect(first).toEqual(second)
    expect(first[0]).toBe(u.data)
    expect(first[1]).toBe((a.data as unknown as { message: Message }).message)
    expect(Object.isFrozen(first[0])).toBe(true)
    first.pop() // callers may mutate their copy without harm
    expect(s.deriveMessages()).toHaveLength(2)
  })

  it('deriveMessagesFrozen() shares one frozen array until the history changes', () => {
    const s = new Session()
    s.append('user/message', userData('q'), { surfaceOp: 'append' })
    const one = s.deriveMessagesFrozen()
    expect(Object.isFrozen(one)).toBe(true)
    s.append('note/x', {})
    expect(s.deriveMessagesFrozen()).toBe(one)
    s.append('assistant/message', assistantData([]), { surfaceOp: 'append', sourceEventSeqs: [] })
    expect(s.deriveMessagesFrozen()).toBe(one) // an empty anchor adds no message
    s.append('user/message', userData('r'), { surfaceOp: 'append' })
    const two = s.deriveMessagesFrozen()
    expect(two).not.toBe(one)
    expect(one).toHaveLength(1)
    expect(two).toHaveLength(2)
  })
})

// ---------------------------------------------------------------------------------------------------------
// Property (a): the incremental derivation equals a full fold after every append.

type Op =
  | { kind: 'user'; text: string }
  | { kind: 'assistant'; chunks: number; empty: boolean; explicitSources: boolean }
  | { kind: 'tool'; text: string; withCall: boolean }
  | { kind: 'log'; type: string }
  | { kind: 'replace'; a: number; b: number; extraSource: boolean }
  | { kind: 'toolReplace'; pick: number; text: string }
  | { kind: 'derive-skip' }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('user' as const), text: fc.string({ maxLength: 6 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('assistant' as const), chunks: fc.nat({ max: 4 }), empty: fc.boolean(), explicitSources: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tool' as const), text: fc.string({ maxLength: 6 }), withCall: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('log' as const), type: fc.constantFrom('turn/start', 'step/start', 'step/end', 'request/context', 'todo/write', 'my/plugin') }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('replace' as const), a: fc.nat(), b: fc.nat(), extraSource: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('toolReplace' as const), pick: fc.nat(), text: fc.string({ maxLength: 6 }) }) },
)

describe('incremental deriveMessages() (property a)', () => {
  it('after every append equals foldMessages(events) from scratch and an independent model, sharing the logged objects', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 60 }), fc.array(fc.boolean(), { minLength: 60, maxLength: 60 }), (ops, deriveNow) => {
        const s = new Session({ knownTypes: ['my/plugin'] })
        // Independent model: node seqs in history order (the generator's own bookkeeping).
        let nodes: number[] = []
        let n = 0
        /** Appends, applies `model` (the expected node change) and then checks, as a caller would derive. */
        const append = (type: string, data: unknown, surfaceOp?: SurfaceOp, sources?: number[], model?: (seq: number) => void): SessionEvent => {
          const e = s.append(type, data, surfaceOp === undefined ? undefined : { surfaceOp, ...(sources !== undefined ? { sourceEventSeqs: sources } : {}) })
          model?.(e.seq)
          n++
          // Most appends are followed by a derivation; some are skipped so that several nodes fold at once.
          if (deriveNow[n % 60] !== false || n % 7 === 0) check()
          return e
        }
        const check = (): void => {
          const derived = s.deriveMessages()
          const events = s.events
          const folded = foldMessages(events)
          expect(JSON.stringify(derived)).toBe(JSON.stringify(folded))
          derived.forEach((m, i) => {
            expect(m).toBe(folded[i])
            expect(Object.isFrozen(m)).toBe(true)
          })
          const model = nodes.map((seq) => projectSurfaceEvent(events[seq] as SessionEvent)).filter((m): m is Message => m !== undefined)
          expect(derived).toEqual(model)
          expect(s.deriveMessagesFrozen()).toEqual(derived)
        }
        let msg = 0
        for (const op of ops) {
          msg++
          switch (op.kind) {
            case 'user':
              append('user/message', userData(op.text, `u${msg}`), 'append', undefined, (seq) => nodes.push(seq))
              break
            case 'assistant': {
              const seqs: number[] = []
              for (let i = 0; i < op.chunks; i++) seqs.push(append('assistant/chunk', { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: 'x' } }).seq)
              const content = op.empty ? [] : [{ type: 'text' as const, text: `answer ${msg}` }]
              const sources = op.explicitSources || seqs.length > 0 ? seqs : undefined
              append('assistant/message', assistantData(content, `a${msg}`), 'append', sources, (seq) => nodes.push(seq))
              break
            }
            case 'tool': {
              const callId = `c${msg}`
              const callSeq = op.withCall ? append('tool/call', { turn: 1, step: 1, callId, name: 'f', arguments: '{}' }).seq : undefined
              append('tool/result', toolResultData(callId, op.text, `r${msg}`), 'append', callSeq === undefined ? undefined : [callSeq], (seq) => nodes.push(seq))
              break
            }
            case 'log':
              append(op.type, { v: msg })
              break
            case 'replace': {
              if (nodes.length === 0) break
              const i = op.a % nodes.length
              const j = i + (op.b % (nodes.length - i))
              const shadowed = nodes.slice(i, j + 1)
              const sources = op.extraSource ? [append('compaction/start', {}).seq, ...shadowed] : shadowed
              const range = { op: 'replace' as const, start: shadowed[0] as number, end: shadowed[shadowed.length - 1] as number }
              append('user/message', userData(`summary ${msg}`, `s${msg}`), range, sources, (seq) => {
                nodes = [...nodes.slice(0, i), seq, ...nodes.slice(j + 1)]
              })
              break
            }
            case 'toolReplace': {
              const results = nodes.filter((seq) => s.at(seq)?.type === 'tool/result')
              if (results.length === 0) break
              const target = results[op.pick % results.length] as number
              const old = s.at(target)?.data as ReturnType<typeof toolResultData>
              const block = old.message.content[0] as { toolCallId: string }
              const data = { ...old, message: { ...old.message, content: [{ ...block, content: [{ type: 'text', text: `pruned ${op.text}` }] }] } }
              append('tool/result', data, { op: 'replace', start: target, end: target }, [target], (seq) => {
                nodes = nodes.map((x) => (x === target ? seq : x))
              })
              break
            }
          }
        }
        check()
        // A session rebuilt from the log derives the same history.
        expect(new Session({ seed: s.events, knownTypes: ['my/plugin'] }).deriveMessages()).toEqual(s.deriveMessages())
      }),
      { numRuns: 200 },
    )
  })
})
