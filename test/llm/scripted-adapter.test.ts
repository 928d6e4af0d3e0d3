import { describe, expect, it } from 'vitest'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import { BlockAssembler } from '../../src/llm/block-assembler.js'
import { LlmRegistry } from '../../src/llm/registry.js'
import { StreamGrammar } from '../../src/llm/stream-grammar.js'
import type { GenerateOptions, StreamChunk } from '../../src/llm/types.js'

const request = (extra: Partial<GenerateOptions> = {}): GenerateOptions => ({ provider: 'scripted', model: 'm', messages: [], ...extra })

/** Streams one request through a real registry and checks the grammar of what comes out. */
async function play(script: ScriptStep[] | ((r: GenerateOptions, i: number) => ScriptStep), count = 1, extra: Partial<GenerateOptions> = {}) {
  const model = scriptedAdapter({ script })
  const registry = new LlmRegistry()
  registry.register(model)
  const runs: StreamChunk[][] = []
  for (let i = 0; i < count; i++) {
    const chunks: StreamChunk[] = []
    const grammar = new StreamGrammar()
    for await (const c of registry.stream(request(extra))) {
      expect(grammar.check(c)).toBeUndefined()
      chunks.push(c)
    }
    expect(grammar.end()).toBeUndefined()
    runs.push(chunks)
  }
  return { model, runs }
}

function finishOf(chunks: StreamChunk[]) {
  const last = chunks[chunks.length - 1]
  if (last?.type !== 'finish') throw new Error('no finish')
  return last.reason
}

describe('scriptedAdapter', () => {
  it('recordRequests: false keeps no requests but still plays the script in order, with frozen chunks', async () => {
    const model = scriptedAdapter({ recordRequests: false, script: [{ text: 'one' }, { text: 'two' }] })
    const texts: string[] = []
    for (let i = 0; i < 2; i++) {
      for await (const chunk of model.stream({ provider: 'scripted', model: 'm', messages: [] })) {
        expect(Object.isFrozen(chunk)).toBe(true)
        if (chunk.type === 'text-delta') texts.push(chunk.text)
      }
    }
    expect(texts).toEqual(['one', 'two'])
    expect(model.requests).toEqual([])
  })

  it('streams each array element of text as one chunk and closes the block with the joined text', async () => {
    const { runs } = await play([{ text: ['Hel', 'lo'] }])
    expect(runs[0]).toEqual([
      { type: 'block-start', index: 0, blockType: 'text' },
      { type: 'text-delta', index: 0, text: 'Hel' },
      { type: 'text-delta', index: 0, text: 'lo' },
      { type: 'block-end', index: 0, block: { type: 'text', text: 'Hello' } },
      { type: 'finish', reason: { kind: 'stop' } },
    ])
  })

  it('streams reasoning before text, a plain string as one chunk', async () => {
    const { runs } = await play([{ reasoning: ['a', 'b'], text: 'answer' }])
    const a = new BlockAssembler()
    for (const c of runs[0] ?? []) a.push(c)
    expect(a.blocks()).toEqual([
      { type: 'reasoning', text: 'ab' },
      { type: 'text', text: 'answer' },
    ])
    expect((runs[0] ?? []).filter((c) => c.type === 'text-delta')).toHaveLength(1)
  })

  it('streams tool calls: object arguments stringified, string arguments verbatim, default ids, finish tool-calls', async () => {
    const { runs } = await play([
      { text: 'x' },
      {
        toolCalls: [
          { name: 'read_file', arguments: { path: 'README.md', limit: 3 } },
          { id: 'mine', name: 'bash', arguments: '{"command":"ls"}' },
        ],
      },
    ], 2)
    const a = new BlockAssembler()
    for (const c of runs[1] ?? []) a.push(c)
    expect(a.blocks()).toEqual([
      { type: 'tool-call', id: 'call_2_1', name: 'read_file', arguments: '{"path":"README.md","limit":3}' },
      { type: 'tool-call', id: 'mine', name: 'bash', arguments: '{"command":"ls"}' },
    ])
    expect(a.finish).toEqual({ kind: 'tool-calls' })
    // The arguments really stream in pieces.
    expect((runs[1] ?? []).filter((c) => c.type === 'tool-call-delta').length).toBe(4)
  })

  it.each(['stop', 'tool-calls', 'max-tokens'] as const)('honours finish %s', async (finish) => {
    const { runs } = await play([{ text: 't', toolCalls: [{ name: 'f', arguments: {} }], finish }])
    expect(finishOf(runs[0] ?? [])).toEqual({ kind: finish })
  })

  it('sends usage right before the finish', async () => {
    const usage = { inputTokens: 10, outputTokens: 3, cacheReadTokens: 2 }
    const { runs } = await play([{ text: 'x', usage }])
    const chunks = runs[0] ?? []
    expect(chunks[chunks.length - 2]).toEqual({ type: 'usage', usage })
  })

  it('an error step ends the request with an in-band failure carrying status and retry-after', async () => {
    const { runs } = await play([{ error: { code: 'RATE_LIMIT', message: 'slow down', status: 429, retryAfterMs: 1200 } }, { error: { code: 'SERVER' } }], 2)
    expect(runs[0]).toEqual([
      { type: 'finish', reason: { kind: 'error', failure: { code: 'RATE_LIMIT', message: 'slow down', status: 429, providerRetryAfterMs: 1200 } } },
    ])
    expect(finishOf(runs[1] ?? [])).toEqual({ kind: 'error', failure: { code: 'SERVER', message: 'scripted failure SERVER' } })
  })

  it('a script that runs out ends with SCRIPT_EXHAUSTED naming the request number', async () => {
    const { runs } = await play([{ text: 'only one' }], 2)
    const reason = finishOf(runs[1] ?? [])
    expect(reason.kind).toBe('error')
    if (reason.kind !== 'error') return
    expect(reason.failure.code).toBe('SCRIPT_EXHAUSTED')
    expect(reason.failure.message).toMatch(/request #2/)
  })

  it('records every request in order and passes request and index to a script function', async () => {
    const seen: number[] = []
    const { model } = await play(
      (r, i) => {
        seen.push(i)
        return { text: `reply ${i} to ${r.model}` }
      },
      3,
      { system: 'sys' },
    )
    expect(seen).toEqual([0, 1, 2])
    expect(model.requests).toHaveLength(3)
    expect(model.requests.every((r) => r.system === 'sys')).toBe(true)
  })

  it('a hang step streams nothing until the signal aborts, then ends aborted', async () => {
    const model = scriptedAdapter({ script: [{ hang: true }] })
    const registry = new LlmRegistry()
    registry.register(model)
    const ac = new AbortController()
    const started = Date.now()
    setTimeout(() => ac.abort(new Error('user cancel')), 30)
    const chunks: StreamChunk[] = []
    for await (const c of registry.stream(request({ signal: ac.signal }))) chunks.push(c)
    expect(Date.now() - started).toBeGreaterThanOrEqual(20)
    expect(chunks).toEqual([{ type: 'finish', reason: { kind: 'aborted', failure: { message: 'user cancel', code: 'ABORTED' } } }])
  })

  it('delayMs spaces the chunks out and the delay is abortable', async () => {
    const model = scriptedAdapter({ script: [{ text: ['a', 'b', 'c'], delayMs: 10_000 }] })
    const registry = new LlmRegistry()
    registry.register(model)
    const ac = new AbortController()
    setTimeout(() => ac.abort(new Error('enough')), 20)
    const started = Date.now()
    const chunks: StreamChunk[] = []
    for await (const c of registry.stream(request({ signal: ac.signal }))) chunks.push(c)
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(chunks).toEqual([{ type: 'finish', reason: { kind: 'aborted', failure: { message: 'enough', code: 'ABORTED' } } }])
  })

  it('delayMs really waits before each chunk', async () => {
    const started = Date.now()
    const { runs } = await play([{ text: 'x', delayMs: 5 }])
    expect(runs[0]).toHaveLength(4)
    expect(Date.now() - started).toBeGreaterThanOrEqual(4 * 4)
  })

  it('answers resolveModel from its models table (unknown models: undefined)', () => {
    const model = scriptedAdapter({ provider: 'fake', models: { m1: { contextWindow: 100, defaultMaxTokens: 10 } }, script: [] })
    expect(model.provider).toBe('fake')
    expect(model.resolveModel?.('m1')).toEqual({ contextWindow: 100, defaultMaxTokens: 10 })
    expect(model.resolveModel?.('m2')).toBeUndefined()
    expect(scriptedAdapter({ script: [] }).provider).toBe('scripted')
  })
})
