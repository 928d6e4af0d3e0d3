import { describe, expect, it } from 'vitest'
import { Session } from '../../src/session/session.js'
import { Surface, foldMessages } from '../../src/session/surface.js'
import { assistantData, harnessErrorOf, toolResultData, userData } from '../support/events.js'

function expectInvalid(fn: () => unknown, pattern: RegExp, code = 'INVALID_EVENT'): void {
  const e = harnessErrorOf(fn)
  expect(e.code).toBe(code)
  expect(e.message).toMatch(pattern)
}

describe('append pipeline', () => {
  it('snapshots data: later mutation of the caller object does not reach the log', () => {
    const s = new Session()
    const data = userData('hello')
    const event = s.append('user/message', data, { surfaceOp: 'append' })
    data.content[0]!.text = 'mutated'
    expect(event.data).not.toBe(data)
    expect(s.deriveMessages()[0]?.content).toEqual([{ type: 'text', text: 'hello' }])
  })

  it('deep-freezes every event and assigns seq === index and a time', () => {
    const s = new Session()
    const before = Date.now()
    s.append('turn/start', { turn: 1 })
    const e = s.append('user/message', userData('x'), { surfaceOp: 'append' })
    expect(s.events.map((ev) => ev.seq)).toEqual([0, 1])
    expect(s.length).toBe(2)
    expect(s.at(1)).toBe(e)
    expect(e.time).toBeGreaterThanOrEqual(before)
    expect(Object.isFrozen(e)).toBe(true)
    expect(Object.isFrozen(e.data)).toBe(true)
    expect(Object.isFrozen((e.data as { content: unknown[] }).content[0])).toBe(true)
    expect(Object.isFrozen(s.events)).toBe(true)
    expect(() => (s.events as unknown[]).push(e)).toThrow(TypeError)
  })

  it('the events snapshot is rebuilt after an append and stable between appends', () => {
    const s = new Session()
    s.append('a/b', {})
    const first = s.events
    expect(s.events).toBe(first)
    s.append('a/b', {})
    expect(s.events).not.toBe(first)
    expect(first).toHaveLength(1)
  })

  it('refuses data that is not lossless JSON with INVALID_JSON naming the path', () => {
    const s = new Session()
    expectInvalid(() => s.append('x/y', { when: new Date() }), /'x\/y' event data is not lossless JSON at \$\.when/, 'INVALID_JSON')
    expectInvalid(() => s.append('x/y', { n: Number.NaN }), /\$\.n/, 'INVALID_JSON')
    expect(s.length).toBe(0)
  })

  it('refuses an empty type', () => {
    expectInvalid(() => new Session().append('', {}), /event type must be a non-empty string/)
  })

  it('requires a surfaceOp on the three surface types', () => {
    const s = new Session()
    expectInvalid(() => s.append('user/message', userData('x')), /'user\/message' is a surface event and needs a surfaceOp/)
    expectInvalid(() => s.append('assistant/message', assistantData([])), /needs a surfaceOp/)
    expectInvalid(() => s.append('tool/result', toolResultData('c', 'r')), /needs a surfaceOp/)
    expect(s.length).toBe(0)
  })

  it('forbids surfaceOp and sourceEventSeqs on every other type, and ignorable on surface types', () => {
    const s = new Session()
    s.append('turn/start', { turn: 1 })
    expectInvalid(() => s.append('tool/call', { callId: 'c' }, { surfaceOp: 'append' }), /'tool\/call' is not a surface type and may not carry surfaceOp or sourceEventSeqs/)
    expectInvalid(() => s.append('my/plugin', {}, { sourceEventSeqs: [0] }), /not a surface type/)
    expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: 'append', ignorable: true }), /a surface event cannot be ignorable/)
    expect(s.length).toBe(1)
  })

  it('a plugin can mark its own log-only event ignorable', () => {
    const e = new Session().append('my/plugin', { v: 1 }, { ignorable: true })
    expect(e.ignorable).toBe(true)
  })

  it('a validate veto throws before commit and leaves the log unchanged', () => {
    const published: number[] = []
    const s = new Session({
      wiring: {
        validate: (_s, candidate) => {
          if (candidate.type === 'bad/type') throw new Error('vetoed by invariant')
        },
        publish: (_s, event) => published.push(event.seq),
      },
    })
    s.append('ok/type', {})
    expect(() => s.append('bad/type', {})).toThrow('vetoed by invariant')
    expect(s.length).toBe(1)
    expect(published).toEqual([0])
    expect(s.append('ok/type', {}).seq).toBe(1)
  })

  it('a persist failure also vetoes the append', () => {
    const s = new Session({
      wiring: {
        persist: () => {
          throw new Error('disk full')
        },
      },
    })
    expect(() => s.append('x/y', {})).toThrow('disk full')
    expect(s.length).toBe(0)
  })

  it('refuses a re-entrant append from a publish listener with REENTRANT_APPEND, then works again', () => {
    const seen: string[] = []
    let inner: unknown
    const s = new Session({
      wiring: {
        publish: (session, event) => {
          seen.push(event.type)
          if (event.type === 'first/event') {
            try {
              session.append('nested/event', {})
            } catch (error) {
              inner = error
            }
          }
        },
      },
    })
    s.append('first/event', {})
    expect(inner).toBeDefined()
    const e = inner as { code: string; message: string }
    expect(e.code).toBe('REENTRANT_APPEND')
    expect(e.message).toMatch(/'nested\/event' appended from inside a session\/event listener/)
    expect(s.events.map((ev) => ev.type)).toEqual(['first/event'])
    s.append('second/event', {})
    expect(seen).toEqual(['first/event', 'second/event'])
  })

  it('a detached session validates and appends but publishes nothing', () => {
    const s = new Session()
    expect(s.append('x/y', {}).seq).toBe(0)
  })
})

describe('surface: append and replace', () => {
  it('append pushes a node; an empty assistant anchor is a node but contributes no message', () => {
    const s = new Session()
    s.append('user/message', userData('q'), { surfaceOp: 'append' })
    s.append('assistant/message', assistantData([]), { surfaceOp: 'append', sourceEventSeqs: [] })
    s.append('assistant/message', assistantData([{ type: 'text', text: 'a' }], 'a-2'), { surfaceOp: 'append' })
    expect(s.surfaceNodes()).toEqual([0, 1, 2])
    expect(s.deriveMessages().map((m) => m.id)).toEqual(['u-q', 'a-2'])
  })

  it('replace swaps the inclusive node range for the new node', () => {
    const s = new Session()
    for (const t of ['a', 'b', 'c', 'd']) s.append('user/message', userData(t), { surfaceOp: 'append' })
    s.append('compaction/start', {})
    s.append('user/message', userData('summary of b..c'), { surfaceOp: { op: 'replace', start: 1, end: 2 }, sourceEventSeqs: [4, 1, 2] })
    expect(s.surfaceNodes()).toEqual([0, 5, 3])
    expect(s.deriveMessages().map((m) => m.id)).toEqual(['u-a', 'u-summary of b..c', 'u-d'])
    // A single-node replace (start === end) works too, including of a replacement node.
    s.append('user/message', userData('again'), { surfaceOp: { op: 'replace', start: 5, end: 5 }, sourceEventSeqs: [5] })
    expect(s.surfaceNodes()).toEqual([0, 6, 3])
  })

  it('replace bumps the generation; append does not', () => {
    const surface = new Surface()
    const lookup: never[] = []
    const ev = (seq: number, surfaceOp: unknown, sources?: number[]) =>
      ({ type: 'user/message', seq, time: 0, data: userData(`m${seq}`), surfaceOp, ...(sources ? { sourceEventSeqs: sources } : {}) }) as never
    surface.validateNext(ev(0, 'append'), lookup)
    surface.apply(ev(0, 'append'))
    expect(surface.generation).toBe(0)
    const replace = ev(1, { op: 'replace', start: 0, end: 0 }, [0])
    surface.validateNext(replace, lookup)
    surface.apply(replace)
    expect(surface.generation).toBe(1)
    expect(surface.nodes).toEqual([1])
  })

  describe('provenance and range rules (each refused with INVALID_EVENT naming the seq)', () => {
    function threeUsers(): Session {
      const s = new Session()
      for (const t of ['a', 'b', 'c']) s.append('user/message', userData(t), { surfaceOp: 'append' })
      s.append('note/x', {})
      return s
    }

    it('sources must be earlier seqs', () => {
      const s = threeUsers()
      expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: 'append', sourceEventSeqs: [4] }), /at seq 4: source seq 4 must be an earlier seq/)
      expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: 'append', sourceEventSeqs: [-1] }), /source seq -1 must be an earlier seq/)
      expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: 'append', sourceEventSeqs: [1.5] }), /source seq 1.5/)
    })

    it('sources must be distinct', () => {
      expectInvalid(() => threeUsers().append('user/message', userData('x'), { surfaceOp: 'append', sourceEventSeqs: [1, 1] }), /source seq 1 repeated/)
    })

    it('an empty sourceEventSeqs is allowed only on assistant/message', () => {
      const s = threeUsers()
      expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: 'append', sourceEventSeqs: [] }), /empty sourceEventSeqs is allowed only on assistant\/message/)
      expect(s.append('assistant/message', assistantData([]), { surfaceOp: 'append', sourceEventSeqs: [] }).seq).toBe(4)
    })

    it('a replace must cite every node it shadows', () => {
      expectInvalid(
        () => threeUsers().append('user/message', userData('x'), { surfaceOp: { op: 'replace', start: 0, end: 2 }, sourceEventSeqs: [0, 2] }),
        /at seq 4: a replace must cite every node it shadows in sourceEventSeqs \(missing 1\)/,
      )
      expectInvalid(() => threeUsers().append('user/message', userData('x'), { surfaceOp: { op: 'replace', start: 0, end: 0 } }), /missing 0/)
    })

    it('replace start and end must be current surface nodes, start not after end', () => {
      const s = threeUsers()
      expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: { op: 'replace', start: 3, end: 3 }, sourceEventSeqs: [3] }), /replace range 3..3 must name current surface nodes/)
      expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: { op: 'replace', start: 2, end: 0 }, sourceEventSeqs: [0, 1, 2] }), /replace start 2 comes after end 0/)
      s.append('user/message', userData('y'), { surfaceOp: { op: 'replace', start: 1, end: 1 }, sourceEventSeqs: [1] })
      // Seq 1 is shadowed now: it is no longer a node.
      expectInvalid(() => s.append('user/message', userData('z'), { surfaceOp: { op: 'replace', start: 1, end: 1 }, sourceEventSeqs: [1] }), /must name current surface nodes/)
    })

    it('surfaceOp must be exactly "append" or {op, start, end}', () => {
      const s = threeUsers()
      expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: { op: 'replace', start: 0, end: 0, extra: 1 } as never, sourceEventSeqs: [0] }), /surfaceOp must be "append" or \{op:"replace", start, end\}/)
      expectInvalid(() => s.append('user/message', userData('x'), { surfaceOp: 'prepend' as never }), /surfaceOp must be/)
    })
  })

  describe('message validation', () => {
    it('requires a message id, the right role and a content array', () => {
      const s = new Session()
      expectInvalid(() => s.append('user/message', { ...userData('x'), id: '' }, { surfaceOp: 'append' }), /message needs a non-empty id/)
      expectInvalid(() => s.append('user/message', { ...userData('x'), role: 'assistant' }, { surfaceOp: 'append' }), /message role must be 'user'/)
      expectInvalid(() => s.append('user/message', { ...userData('x'), content: 'text' }, { surfaceOp: 'append' }), /content must be an array/)
      expectInvalid(() => s.append('user/message', { ...userData('x'), source: {} }, { surfaceOp: 'append' }), /needs a source kind/)
    })

    it('an assistant message needs a model source with provider and model', () => {
      const data = assistantData([{ type: 'text', text: 'x' }])
      expectInvalid(
        () => new Session().append('assistant/message', { ...data, message: { ...data.message, source: { kind: 'model', provider: '', model: 'm' } } }, { surfaceOp: 'append' }),
        /an assistant message needs a model source with provider and model/,
      )
    })

    it('a tool result needs a tool source and exactly one tool-result block for its callId', () => {
      const data = toolResultData('c1', 'out')
      const s = new Session()
      expectInvalid(() => s.append('tool/result', { ...data, message: { ...data.message, source: { kind: 'user' } } }, { surfaceOp: 'append' }), /needs source \{kind:"tool", callId\}/)
      expectInvalid(() => s.append('tool/result', { ...data, message: { ...data.message, source: { kind: 'tool', callId: 'c2' } } }, { surfaceOp: 'append' }), /exactly one tool-result block for its callId/)
      expectInvalid(() => s.append('tool/result', { ...data, message: { ...data.message, content: [] } }, { surfaceOp: 'append' }), /exactly one tool-result block/)
    })
  })

  describe('tool/result replace', () => {
    function withResult(): Session {
      const s = new Session()
      s.append('tool/call', { turn: 1, step: 1, callId: 'c1', name: 'f', arguments: '{}' })
      s.append('tool/result', { ...toolResultData('c1', 'a very long output'), error: { name: 'E', code: 'X' } }, { surfaceOp: 'append', sourceEventSeqs: [0] })
      s.append('user/message', userData('next'), { surfaceOp: 'append' })
      return s
    }
    const pruned = (text: string) => ({ ...toolResultData('c1', text), error: { name: 'E', code: 'X' } })

    it('may rewrite only the inner tool-result content', () => {
      const s = withResult()
      s.append('compaction/prune', {})
      s.append('tool/result', pruned('[pruned]'), { surfaceOp: { op: 'replace', start: 1, end: 1 }, sourceEventSeqs: [1] })
      expect(s.surfaceNodes()).toEqual([4, 2])
      expect(s.deriveMessages()[0]?.content[0]).toEqual({ type: 'tool-result', toolCallId: 'c1', content: [{ type: 'text', text: '[pruned]' }] })
    })

    it('refuses a change to anything else (message id, error, turn)', () => {
      const s = withResult()
      const op = { surfaceOp: { op: 'replace' as const, start: 1, end: 1 }, sourceEventSeqs: [1] }
      expectInvalid(() => s.append('tool/result', { ...toolResultData('c1', 'x', 'other-id'), error: { name: 'E', code: 'X' } }, op), /a tool\/result replace may change only the tool-result content/)
      expectInvalid(() => s.append('tool/result', toolResultData('c1', 'x'), op), /may change only the tool-result content/)
      expectInvalid(() => s.append('tool/result', { ...pruned('x'), turn: 2 }, op), /may change only the tool-result content/)
    })

    it('must shadow exactly one tool/result node', () => {
      const s = withResult()
      expectInvalid(() => s.append('tool/result', pruned('x'), { surfaceOp: { op: 'replace', start: 1, end: 2 }, sourceEventSeqs: [1, 2] }), /must shadow exactly one tool\/result/)
      expectInvalid(() => s.append('tool/result', pruned('x'), { surfaceOp: { op: 'replace', start: 2, end: 2 }, sourceEventSeqs: [2] }), /must shadow exactly one tool\/result/)
    })
  })

  it('foldMessages agrees with the incremental derivation across a replace', () => {
    const s = new Session()
    s.append('user/message', userData('a'), { surfaceOp: 'append' })
    s.append('user/message', userData('b'), { surfaceOp: 'append' })
    s.deriveMessages()
    s.append('user/message', userData('c'), { surfaceOp: { op: 'replace', start: 0, end: 1 }, sourceEventSeqs: [0, 1] })
    expect(s.deriveMessages()).toEqual(foldMessages(s.events))
    expect(s.deriveMessages().map((m) => m.id)).toEqual(['u-c'])
  })
})
