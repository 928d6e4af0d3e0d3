import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { snapshotJsonFrozen } from '../../src/json/lossless.js'
import { frozenChunkCopy } from '../../src/llm/freeze-chunk.js'
import type { StreamChunk } from '../../src/llm/types.js'

const isDeepFrozen = (v: unknown): boolean =>
  typeof v !== 'object' || v === null || (Object.isFrozen(v) && Object.values(v).every((x) => isDeepFrozen(x)))

/** What the general snapshot makes of a value, or undefined when it refuses it. */
function reference(value: unknown): unknown {
  try {
    return snapshotJsonFrozen(value)
  } catch {
    return undefined
  }
}

// Chunk-like objects: the usual shapes, shuffled key orders, wrong types, extra keys, -0, NaN, undefined values.
const anyValue = fc.oneof(fc.string(), fc.integer(), fc.constant(-0), fc.constant(Number.NaN), fc.constant(undefined), fc.constant(null), fc.boolean())
const index = fc.oneof(fc.nat(5), anyValue)
const delta = fc.record({ type: fc.constantFrom('text-delta', 'reasoning-delta'), index, text: fc.oneof(fc.string(), anyValue) })
const start = fc.record({ type: fc.constant('block-start'), index, blockType: fc.oneof(fc.constantFrom('text', 'tool-call'), anyValue) })
const call = fc.record(
  { type: fc.constant('tool-call-delta'), index, id: fc.oneof(fc.string(), anyValue), name: fc.oneof(fc.string(), anyValue), argumentsDelta: fc.oneof(fc.string(), anyValue) },
  { requiredKeys: ['type', 'index', 'id', 'argumentsDelta'] },
)
const other = fc.constantFrom<unknown>({ type: 'usage', usage: { inputTokens: 1, outputTokens: 2 } }, { type: 'finish', reason: { kind: 'stop' } })
const chunkLike = fc
  .tuple(fc.oneof(delta, start, call, other), fc.boolean(), fc.option(fc.tuple(fc.string({ minLength: 1 }), anyValue), { nil: undefined }))
  .map(([base, reverse, extra]) => {
    const entries = Object.entries(base as object)
    if (reverse) entries.reverse()
    if (extra !== undefined) entries.push(extra)
    return Object.fromEntries(entries) as unknown
  })

describe('frozenChunkCopy (the loop copies each unfrozen chunk once)', () => {
  it('agrees with the general lossless snapshot: refused exactly when it refuses, else an equal deep-frozen copy in the same key order', () => {
    fc.assert(
      fc.property(chunkLike, (chunk) => {
        const expected = reference(chunk)
        const copy = frozenChunkCopy(chunk as StreamChunk)
        if (expected === undefined) return copy === undefined
        return copy !== undefined && JSON.stringify(copy) === JSON.stringify(expected) && isDeepFrozen(copy)
      }),
      { numRuns: 2000 },
    )
  })

  it('adopts a deep-frozen chunk as is and never touches the caller\'s object', () => {
    const frozen = Object.freeze({ type: 'text-delta', index: 0, text: 'hi' }) as StreamChunk
    expect(frozenChunkCopy(frozen)).toBe(frozen)
    const plain = { type: 'text-delta', index: 0, text: 'hi' } as StreamChunk
    const copy = frozenChunkCopy(plain)
    expect(copy).not.toBe(plain)
    expect(copy).toEqual(plain)
    expect(Object.isFrozen(plain)).toBe(false)
  })

  it('refuses class instances and accessor tricks it cannot read once', () => {
    class Delta {
      type = 'text-delta'
      index = 0
      text = 'x'
    }
    expect(frozenChunkCopy(new Delta() as unknown as StreamChunk)).toBeUndefined()
    let reads = 0
    const sneaky = { type: 'text-delta', index: 0, get text() { return String(++reads) } }
    const copy = frozenChunkCopy(sneaky as unknown as StreamChunk) as { text: string }
    expect(reads).toBe(1)
    expect(copy.text).toBe('1')
  })
})
