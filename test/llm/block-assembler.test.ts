import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { BlockAssembler } from '../../src/llm/block-assembler.js'
import { StreamGrammar } from '../../src/llm/stream-grammar.js'
import type { BlockType, ContentBlock, FinishReason, StreamChunk, TokenUsage } from '../../src/llm/types.js'
import type { JsonValue } from '../../src/json/lossless.js'

function assemble(chunks: readonly StreamChunk[]): BlockAssembler {
  const a = new BlockAssembler()
  for (const c of chunks) a.push(c)
  return a
}

const failure = { message: 'boom', code: 'SERVER' }

describe('BlockAssembler rules (docs/adapters.md, "The chunk grammar")', () => {
  it('the first block-end wins and replaces whatever the deltas accumulated', () => {
    const a = assemble([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'text-delta', index: 0, text: 'from deltas' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'authoritative' } },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'second close ignored' } },
    ])
    expect(a.blocks()).toEqual([{ type: 'text', text: 'authoritative' }])
  })

  it('deltas arriving after the block closed are ignored', () => {
    const a = assemble([
      { type: 'block-start', index: 0, blockType: 'tool-call' },
      { type: 'tool-call-delta', index: 0, id: 'c1', name: 'f', argumentsDelta: '{}' },
      { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c1', name: 'f', arguments: '{}' } },
      { type: 'tool-call-delta', index: 0, id: 'c2', name: 'g', argumentsDelta: 'junk' },
      { type: 'block-start', index: 1, blockType: 'text' },
      { type: 'block-end', index: 1, block: { type: 'text', text: 'done' } },
      { type: 'text-delta', index: 1, text: ' more' },
    ])
    expect(a.blocks()).toEqual([
      { type: 'tool-call', id: 'c1', name: 'f', arguments: '{}' },
      { type: 'text', text: 'done' },
    ])
  })

  it('deltas without a block-start open the block implicitly (delta-only protocols)', () => {
    const a = assemble([
      { type: 'reasoning-delta', index: 0, text: 'think ' },
      { type: 'reasoning-delta', index: 0, text: 'hard' },
      { type: 'text-delta', index: 1, text: 'answer' },
      { type: 'tool-call-delta', index: 2, id: 'x', name: 'run', argumentsDelta: '{"a"' },
      { type: 'tool-call-delta', index: 2, id: '', argumentsDelta: ':1}' },
    ])
    expect(a.blocks()).toEqual([
      { type: 'reasoning', text: 'think hard' },
      { type: 'text', text: 'answer' },
      { type: 'tool-call', id: 'x', name: 'run', arguments: '{"a":1}' },
    ])
  })

  it('a block-end without any earlier chunk creates the block from its payload', () => {
    const block: ContentBlock = { type: 'reasoning', text: 'r', signature: 'sig' }
    expect(assemble([{ type: 'block-end', index: 5, block }]).blocks()).toEqual([block])
  })

  it('an open tool call with no id becomes call-<index> and a missing name becomes the empty string', () => {
    const a = assemble([
      { type: 'block-start', index: 3, blockType: 'tool-call' },
      { type: 'tool-call-delta', index: 3, id: '', argumentsDelta: '{"q":' },
      { type: 'tool-call-delta', index: 3, id: '', name: '', argumentsDelta: '2}' },
    ])
    expect(a.blocks()).toEqual([{ type: 'tool-call', id: 'call-3', name: '', arguments: '{"q":2}' }])
  })

  it('tool-call deltas: the id is overwritten by the last non-empty id, the name by the last non-empty name', () => {
    const a = assemble([
      { type: 'tool-call-delta', index: 0, id: 'first', name: 'a', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 0, id: 'second', argumentsDelta: '' },
      { type: 'tool-call-delta', index: 0, id: '', name: 'b', argumentsDelta: '' },
    ])
    expect(a.blocks()).toEqual([{ type: 'tool-call', id: 'second', name: 'b', arguments: '' }])
  })

  it('a repeated block-start is ignored and blocks keep first-seen index order', () => {
    const a = assemble([
      { type: 'block-start', index: 9, blockType: 'text' },
      { type: 'block-start', index: 2, blockType: 'reasoning' },
      { type: 'block-start', index: 9, blockType: 'reasoning' },
      { type: 'text-delta', index: 9, text: 'nine' },
      { type: 'reasoning-delta', index: 2, text: 'two' },
    ])
    expect(a.blocks()).toEqual([
      { type: 'text', text: 'nine' },
      { type: 'reasoning', text: 'two' },
    ])
  })

  it('a max-tokens finish drops every tool call, closed or open, and keeps the rest', () => {
    const a = assemble([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'text-delta', index: 0, text: 'partial' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'partial' } },
      { type: 'block-start', index: 1, blockType: 'tool-call' },
      { type: 'block-end', index: 1, block: { type: 'tool-call', id: 'c', name: 'f', arguments: '{}' } },
      { type: 'tool-call-delta', index: 2, id: 'd', name: 'g', argumentsDelta: '{"trunc' },
      { type: 'finish', reason: { kind: 'max-tokens' } },
    ])
    expect(a.blocks()).toEqual([{ type: 'text', text: 'partial' }])
    expect(a.finish).toEqual({ kind: 'max-tokens' })
  })

  it('other finishes keep tool calls (a stop finish with calls still has them)', () => {
    const a = assemble([
      { type: 'block-end', index: 0, block: { type: 'tool-call', id: 'c', name: 'f', arguments: '{}' } },
      { type: 'finish', reason: { kind: 'stop' } },
    ])
    expect(a.blocks()).toHaveLength(1)
  })

  it('an open block of an unknown type throws when assembled, naming the index and type', () => {
    const a = assemble([{ type: 'block-start', index: 4, blockType: 'image' as BlockType }])
    expect(() => a.blocks()).toThrow(/block 4 of type 'image'/)
  })

  it('a closed block of a type that cannot be built from deltas is fine', () => {
    const image: ContentBlock = { type: 'image', attachment: { attachmentId: 'sha256:ab', mediaType: 'image/png', bytes: 3 } }
    const a = assemble([
      { type: 'block-start', index: 0, blockType: 'image' },
      { type: 'block-end', index: 0, block: image },
    ])
    expect(a.blocks()).toEqual([image])
  })

  it('finish defaults to stop and usage to undefined when neither arrived', () => {
    const a = assemble([{ type: 'text-delta', index: 0, text: 'hi' }])
    expect(a.finish).toEqual({ kind: 'stop' })
    expect(a.finished).toBe(false)
    expect(a.usage).toBeUndefined()
    expect(a.replayState()).toBeUndefined()
  })

  it('usage: the last usage chunk wins', () => {
    const u1: TokenUsage = { inputTokens: 1, outputTokens: 2 }
    const u2: TokenUsage = { inputTokens: 3, outputTokens: 4, cacheReadTokens: 5 }
    const a = assemble([
      { type: 'usage', usage: u1 },
      { type: 'usage', usage: u2 },
    ])
    expect(a.usage).toEqual(u2)
  })

  describe('replayState', () => {
    const blocks3: StreamChunk[] = [
      { type: 'block-end', index: 0, block: { type: 'reasoning', text: 'r' } },
      { type: 'block-end', index: 1, block: { type: 'tool-call', id: 'c', name: 'f', arguments: '{}' } },
      { type: 'block-end', index: 2, block: { type: 'text', text: 't' } },
    ]

    it('passes an envelope without per-block entries through unchanged', () => {
      const state: JsonValue = { response: { id: 'resp-1' } }
      const a = assemble([...blocks3, { type: 'finish', reason: { kind: 'stop' }, replayState: state }])
      expect(a.replayState()).toEqual(state)
      const scalar = assemble([{ type: 'finish', reason: { kind: 'stop' }, replayState: 'opaque' }])
      expect(scalar.replayState()).toBe('opaque')
    })

    it('passes per-block entries through when their count matches the blocks seen', () => {
      const state: JsonValue = { response: 1, blocks: ['R', 'C', 'T'] }
      const a = assemble([...blocks3, { type: 'finish', reason: { kind: 'tool-calls' }, replayState: state }])
      expect(a.replayState()).toEqual(state)
    })

    it('drops the whole envelope when the per-block entry count does not match', () => {
      const a = assemble([...blocks3, { type: 'finish', reason: { kind: 'stop' }, replayState: { response: 1, blocks: ['R', 'C'] } }])
      expect(a.replayState()).toBeUndefined()
    })

    it('on max-tokens prunes the entries of the dropped tool calls at the same positions', () => {
      const a = assemble([...blocks3, { type: 'finish', reason: { kind: 'max-tokens' }, replayState: { response: 1, blocks: ['R', 'C', 'T'] } }])
      expect(a.replayState()).toEqual({ response: 1, blocks: ['R', 'T'] })
      expect(a.blocks().map((b) => b.type)).toEqual(['reasoning', 'text'])
    })

    it('the last finish wins for reason and replay state', () => {
      const a = assemble([
        { type: 'finish', reason: { kind: 'stop' }, replayState: 'first' },
        { type: 'finish', reason: { kind: 'tool-calls' }, replayState: 'second' },
      ])
      expect(a.finish).toEqual({ kind: 'tool-calls' })
      expect(a.replayState()).toBe('second')
    })
  })

  describe('interruptedBlocks()', () => {
    it('keeps only non-blank text and reasoning blocks (open or closed), in stream order, and no tool calls', () => {
      const a = assemble([
        { type: 'reasoning-delta', index: 0, text: 'plan' },
        { type: 'block-end', index: 1, block: { type: 'text', text: '   \n\t' } },
        { type: 'block-end', index: 2, block: { type: 'tool-call', id: 'c', name: 'f', arguments: '{}' } },
        { type: 'text-delta', index: 3, text: 'visible so far' },
        { type: 'text-delta', index: 4, text: '  ' },
        { type: 'tool-call-delta', index: 5, id: '', argumentsDelta: '{' },
      ])
      expect(a.interruptedBlocks()).toEqual([
        { type: 'reasoning', text: 'plan' },
        { type: 'text', text: 'visible so far' },
      ])
    })

    it('does not throw on an open block of an unknown type (it is simply not kept)', () => {
      const a = assemble([
        { type: 'block-start', index: 0, blockType: 'image' },
        { type: 'text-delta', index: 1, text: 'x' },
      ])
      expect(a.interruptedBlocks()).toEqual([{ type: 'text', text: 'x' }])
    })
  })
})

// ---------------------------------------------------------------------------------------------------------
// Property: random grammar-valid chunk streams.

type GenBlock =
  | { kind: 'text' | 'reasoning'; parts: string[] }
  | { kind: 'tool-call'; id: string; name: string; argParts: string[] }

const genBlock: fc.Arbitrary<GenBlock> = fc.oneof(
  fc.record({ kind: fc.constantFrom('text' as const, 'reasoning' as const), parts: fc.array(fc.string(), { maxLength: 5 }) }),
  fc.record({
    kind: fc.constant('tool-call' as const),
    id: fc.string({ minLength: 1, maxLength: 8 }),
    name: fc.string({ minLength: 1, maxLength: 8 }),
    argParts: fc.array(fc.string(), { minLength: 1, maxLength: 5 }),
  }),
)

const finishKinds = ['stop', 'tool-calls', 'max-tokens', 'error', 'aborted'] as const

const genStream = fc
  .record({
    blocks: fc.array(genBlock, { maxLength: 6 }),
    finish: fc.constantFrom(...finishKinds),
    usage: fc.option(fc.record({ inputTokens: fc.nat(), outputTokens: fc.nat() }), { nil: undefined }),
    withReplay: fc.boolean(),
    seed: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 64, maxLength: 64 }),
    indexGap: fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 6, maxLength: 6 }),
    leaveOpen: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
  })
  .map((g) => serialise(g))

function blockOf(b: GenBlock): ContentBlock {
  return b.kind === 'tool-call' ? { type: 'tool-call', id: b.id, name: b.name, arguments: b.argParts.join('') } : { type: b.kind, text: b.parts.join('') }
}

/** Serialises generated blocks into a grammar-valid, randomly interleaved chunk stream. */
function serialise(g: {
  blocks: GenBlock[]
  finish: (typeof finishKinds)[number]
  usage: TokenUsage | undefined
  withReplay: boolean
  seed: number[]
  indexGap: number[]
  leaveOpen: boolean[]
}) {
  const failureFinish = g.finish === 'error' || g.finish === 'aborted'
  let nextIndex = 0
  const perBlock = g.blocks.map((b, i) => {
    const index = nextIndex
    nextIndex += g.indexGap[i] ?? 1
    const chunks: StreamChunk[] = [{ type: 'block-start', index, blockType: b.kind }]
    if (b.kind === 'tool-call') {
      b.argParts.forEach((argumentsDelta, j) =>
        chunks.push(j === 0 ? { type: 'tool-call-delta', index, id: b.id, name: b.name, argumentsDelta } : { type: 'tool-call-delta', index, id: b.id, argumentsDelta }),
      )
    } else {
      for (const text of b.parts) chunks.push(b.kind === 'text' ? { type: 'text-delta', index, text } : { type: 'reasoning-delta', index, text })
    }
    // Only a failure finish may leave a block open.
    const open = failureFinish && g.leaveOpen[i] === true
    if (!open) chunks.push({ type: 'block-end', index, block: blockOf(b) })
    return chunks
  })
  // Random interleaving that keeps each block's own order: give every chunk a random key, sort the keys within a
  // block, then merge all chunks by key.
  let k = 0
  const keyed: { key: number; block: number; chunk: StreamChunk }[] = []
  perBlock.forEach((chunks, block) => {
    const keys = chunks.map(() => g.seed[k++ % g.seed.length] as number).sort((x, y) => x - y)
    chunks.forEach((chunk, j) => keyed.push({ key: keys[j] as number, block, chunk }))
  })
  keyed.sort((x, y) => x.key - y.key || x.block - y.block)
  const stream = keyed.map((x) => x.chunk)
  // Blocks appear in the order of their first chunk.
  const order = [...new Set(keyed.map((x) => x.block))]
  if (g.usage !== undefined) stream.splice(Math.floor((g.seed[0] as number) * stream.length), 0, { type: 'usage', usage: g.usage })
  const reason: FinishReason = failureFinish ? { kind: g.finish as 'error' | 'aborted', failure } : { kind: g.finish as 'stop' | 'tool-calls' | 'max-tokens' }
  const replayState: JsonValue | undefined = g.withReplay ? { response: 'r', blocks: order.map((b) => `entry-${b}`) } : undefined
  stream.push(replayState === undefined ? { type: 'finish', reason } : { type: 'finish', reason, replayState })
  return { stream, blocks: order.map((b) => g.blocks[b] as GenBlock), order, finish: g.finish, usage: g.usage, replayState }
}

describe('BlockAssembler on random grammar-valid streams (property)', () => {
  it('never throws, passes StreamGrammar, reassembles the generated blocks and drops tool calls on max-tokens', () => {
    fc.assert(
      fc.property(genStream, (s) => {
        const grammar = new StreamGrammar()
        for (const chunk of s.stream) expect(grammar.check(chunk)).toBeUndefined()
        expect(grammar.end()).toBeUndefined()

        const a = new BlockAssembler()
        for (const chunk of s.stream) a.push(chunk)
        const out = a.blocks()
        const dropCalls = s.finish === 'max-tokens'
        const expected = s.blocks.filter((b) => !(dropCalls && b.kind === 'tool-call')).map(blockOf)
        expect(out).toEqual(expected)
        if (dropCalls) expect(out.some((b) => b.type === 'tool-call')).toBe(false)
        expect(a.finish.kind).toBe(s.finish)
        expect(a.usage).toEqual(s.usage)
        if (s.replayState !== undefined) {
          const keptEntries = s.order.filter((b, i) => !(dropCalls && s.blocks[i]?.kind === 'tool-call')).map((b) => `entry-${b}`)
          expect(a.replayState()).toEqual({ response: 'r', blocks: keptEntries })
        } else {
          expect(a.replayState()).toBeUndefined()
        }
        const interrupted = a.interruptedBlocks()
        expect(interrupted.every((b) => (b.type === 'text' || b.type === 'reasoning') && b.text.trim() !== '')).toBe(true)
      }),
      { numRuns: 300 },
    )
  })
})
