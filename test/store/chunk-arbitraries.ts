import fc from 'fast-check'
import type { Arbitrary } from 'fast-check'
import type { JsonValue, SessionEvent } from '../../src/index.js'

type Draft = { readonly type: string; readonly data: JsonValue; readonly ignorable?: true }

// fast-check's JSON values are our JsonValue; only the declared types differ.
const json = (maxDepth: number): Arbitrary<JsonValue> => fc.jsonValue({ maxDepth }) as Arbitrary<JsonValue>

const smallInt = fc.integer({ min: 0, max: 3 })
const text = fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 6 }), fc.constantFrom('', '\n', '"', '\\', '\u2028', '\ud800'))

/** A run of chunk deltas of one block: packable when ≥3 long and exactly shaped. */
const chunkRun: fc.Arbitrary<Draft[]> = fc
  .record({
    turn: smallInt,
    step: smallInt,
    index: smallInt,
    kind: fc.constantFrom('text-delta', 'reasoning-delta', 'tool-call-delta'),
    id: fc.constantFrom('c1', 'c2'),
    name: fc.option(fc.constantFrom('echo', 'read'), { nil: undefined }),
    payloads: fc.array(text, { minLength: 1, maxLength: 7 }),
  })
  .map(({ turn, step, index, kind, id, name, payloads }) =>
    payloads.map((payload) => {
      const chunk: JsonValue =
        kind === 'tool-call-delta'
          ? name === undefined
            ? { type: kind, index, id, argumentsDelta: payload }
            : { type: kind, index, id, name, argumentsDelta: payload }
          : { type: kind, index, text: payload }
      return { type: 'assistant/chunk', data: { turn, step, chunk } }
    }),
  )

/** Chunk events that look packable but are not exactly the whitelisted shape: they must stay verbatim. */
const oddChunk: fc.Arbitrary<Draft[]> = fc
  .record({
    variant: fc.constantFrom('reordered', 'extra-key', 'extra-data-key', 'fraction', 'not-string', 'name-not-string', 'any'),
    payload: text,
    any: json(2),
    count: fc.integer({ min: 1, max: 4 }),
  })
  .map(({ variant, payload, any, count }) => {
    const data = ((): JsonValue => {
      switch (variant) {
        case 'reordered':
          return { turn: 1, step: 1, chunk: { type: 'text-delta', text: payload, index: 0 } }
        case 'extra-key':
          return { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: payload, extra: true } }
        case 'extra-data-key':
          return { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: payload }, more: 1 }
        case 'fraction':
          return { turn: 1.5, step: 1, chunk: { type: 'text-delta', index: 0, text: payload } }
        case 'not-string':
          return { turn: 1, step: 1, chunk: { type: 'reasoning-delta', index: 0, text: 7 } }
        case 'name-not-string':
          return { turn: 1, step: 1, chunk: { type: 'tool-call-delta', index: 0, id: 'c1', name: null, argumentsDelta: payload } }
        default:
          return any
      }
    })()
    return Array.from({ length: count }, () => ({ type: 'assistant/chunk', data }))
  })

/** Other known and ignorable plugin events between runs. */
const otherEvent: fc.Arbitrary<Draft[]> = fc.oneof(
  json(3).map((data): Draft[] => [{ type: 'todo/write', data }]),
  json(2).map((data): Draft[] => [{ type: 'some-plugin/record', data, ignorable: true }]),
)

// The drafts as events of turn 1, step 1: a log a store's judgement on load (the log grammar) accepts.
function inOneStep(drafts: readonly Draft[]): Draft[] {
  const inside = drafts.flatMap((d): Draft[] => {
    if (d.type !== 'assistant/chunk') return [d]
    const data = d.data as Record<string, JsonValue> | null
    // Chunks whose data has no turn and step cannot be placed in a step: the grammar refuses them.
    if (typeof data !== 'object' || data === null || Array.isArray(data) || !('turn' in data) || !('step' in data)) return []
    return [{ ...d, data: { ...data, turn: 1, step: 1 } }]
  })
  return [
    { type: 'turn/start', data: { turn: 1 } },
    { type: 'step/start', data: { turn: 1, step: 1 } },
    ...inside,
    { type: 'step/end', data: { turn: 1, step: 1 } },
    { type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } } },
  ]
}

/**
 * Random logs a store must keep byte for byte: packable chunk runs, near-miss chunk shapes, other events,
 * with arbitrary (also negative and zero) time gaps. With `inOneStep`, everything is framed as one turn's one
 * step (chunks moved into it), as a store that judges the log grammar on load needs.
 */
export function arbitraryStoredLog(options: { readonly inOneStep?: boolean } = {}): fc.Arbitrary<SessionEvent[]> {
  return fc
    .record({
      segments: fc.array(fc.oneof({ weight: 3, arbitrary: chunkRun }, { weight: 1, arbitrary: oddChunk }, { weight: 1, arbitrary: otherEvent }), { maxLength: 12 }),
      start: fc.integer({ min: 0, max: 2 ** 45 }),
      gaps: fc.array(fc.integer({ min: -5, max: 40 }), { minLength: 1, maxLength: 10 }),
    })
    .map(({ segments, start, gaps }) => {
      let time = start
      const drafts = options.inOneStep === true ? inOneStep(segments.flat()) : segments.flat()
      return drafts.map((draft, seq) => {
        time += gaps[seq % gaps.length] as number
        const event = { type: draft.type, seq, time, data: draft.data }
        return (draft.ignorable === true ? { ...event, ignorable: true } : event) as SessionEvent
      })
    })
}
