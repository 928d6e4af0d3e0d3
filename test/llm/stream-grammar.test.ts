import { describe, expect, it } from 'vitest'
import { StreamGrammar } from '../../src/llm/stream-grammar.js'
import type { StreamChunk } from '../../src/llm/types.js'

/** Feeds chunks and returns every problem reported (undefined entries removed), plus the end() verdict. */
function run(chunks: readonly StreamChunk[]): { problems: string[]; end: string | undefined } {
  const g = new StreamGrammar()
  const problems: string[] = []
  for (const c of chunks) {
    const p = g.check(c)
    if (p !== undefined) problems.push(p)
  }
  return { problems, end: g.end() }
}

const failure = { message: 'x', code: 'SERVER' }

describe('StreamGrammar', () => {
  it('accepts a well-formed stream', () => {
    expect(
      run([
        { type: 'block-start', index: 0, blockType: 'reasoning' },
        { type: 'reasoning-delta', index: 0, text: 'r' },
        { type: 'block-start', index: 1, blockType: 'tool-call' },
        { type: 'tool-call-delta', index: 1, id: 'c', name: 'f', argumentsDelta: '{}' },
        { type: 'block-end', index: 0, block: { type: 'reasoning', text: 'r' } },
        { type: 'block-end', index: 1, block: { type: 'tool-call', id: 'c', name: 'f', arguments: '{}' } },
        { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
        { type: 'finish', reason: { kind: 'tool-calls' } },
      ]),
    ).toEqual({ problems: [], end: undefined })
  })

  it.each([
    ['a negative index', [{ type: 'block-start', index: -1, blockType: 'text' }], /bad block index -1/],
    ['a fractional index', [{ type: 'text-delta', index: 1.5, text: 'x' }], /bad block index 1.5/],
    ['an unsafe index', [{ type: 'block-start', index: 2 ** 53, blockType: 'text' }], /bad block index/],
  ] as const)('names %s', (_, chunks, pattern) => {
    expect(run(chunks as readonly StreamChunk[]).problems[0]).toMatch(pattern)
  })

  it('names a repeated block-start, even after the block closed', () => {
    const { problems } = run([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'block-end', index: 0, block: { type: 'text', text: '' } },
      { type: 'block-start', index: 0, blockType: 'text' },
    ])
    expect(problems).toEqual(['block-start repeated for index 0'])
  })

  it('names a delta into a block that is not open (never started, or already closed)', () => {
    expect(run([{ type: 'text-delta', index: 3, text: 'x' }]).problems).toEqual(['text delta for index 3 that is not open'])
    const closed = run([
      { type: 'block-start', index: 0, blockType: 'reasoning' },
      { type: 'block-end', index: 0, block: { type: 'reasoning', text: '' } },
      { type: 'reasoning-delta', index: 0, text: 'late' },
    ])
    expect(closed.problems).toEqual(['reasoning delta for index 0 that is not open'])
  })

  it('names a delta whose type does not match the open block', () => {
    const { problems } = run([
      { type: 'block-start', index: 2, blockType: 'text' },
      { type: 'tool-call-delta', index: 2, id: 'c', argumentsDelta: '' },
    ])
    expect(problems).toEqual(["tool-call delta into a 'text' block at index 2"])
  })

  it('names a block-end for a block that is not open', () => {
    expect(run([{ type: 'block-end', index: 7, block: { type: 'text', text: '' } }]).problems).toEqual(['block-end for index 7 that is not open'])
  })

  it('names a block-end whose block type differs from the open block', () => {
    const { problems } = run([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'block-end', index: 0, block: { type: 'reasoning', text: '' } },
    ])
    expect(problems).toEqual(["block-end of type 'reasoning' closes a 'text' block at index 0"])
  })

  it('names a second usage chunk', () => {
    const u = { inputTokens: 1, outputTokens: 1 }
    expect(
      run([
        { type: 'usage', usage: u },
        { type: 'usage', usage: u },
      ]).problems,
    ).toEqual(['second usage chunk'])
  })

  it('names any chunk after finish, including a second finish', () => {
    const { problems } = run([
      { type: 'finish', reason: { kind: 'stop' } },
      { type: 'usage', usage: { inputTokens: 1, outputTokens: 1 } },
      { type: 'finish', reason: { kind: 'stop' } },
    ])
    expect(problems).toEqual(["chunk 'usage' after finish", "chunk 'finish' after finish"])
  })

  it('names a non-failure finish that leaves blocks open, listing them', () => {
    const { problems } = run([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'block-start', index: 4, blockType: 'tool-call' },
      { type: 'finish', reason: { kind: 'max-tokens' } },
    ])
    expect(problems).toEqual(["finish 'max-tokens' with open blocks 0, 4"])
  })

  it('lets a failure finish (error or aborted) leave blocks open', () => {
    for (const kind of ['error', 'aborted'] as const) {
      const { problems, end } = run([
        { type: 'block-start', index: 0, blockType: 'text' },
        { type: 'finish', reason: { kind, failure } },
      ])
      expect(problems).toEqual([])
      expect(end).toBeUndefined()
    }
  })

  it('names a stream that ended without a finish', () => {
    expect(run([{ type: 'block-start', index: 0, blockType: 'text' }]).end).toBe('stream ended without a finish chunk')
    expect(run([]).end).toBe('stream ended without a finish chunk')
  })
})
