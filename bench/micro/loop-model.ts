/**
 * The model the loop micro scripts drive (loop-alloc.ts, loop-compare.ts): `steps` requests, each streaming 20 text
 * chunks and, but for the last, one call of the `noop` tool. By default it replays prebuilt frozen chunks;
 * `plain` builds every chunk unfrozen as it is yielded (the bench's verdict-row model).
 */
import type { GenerateOptions, LlmAdapter, StreamChunk } from '../../src/index.js'

type Lib = typeof import('../../src/index.js')
const K = 20

/** A scripted `bench` adapter counting its requests in `calls`. */
export function loopModel(lib: Lib, steps: number, plain = false): LlmAdapter & { calls: number } {
  const toolStep = lib.scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `), toolCalls: [{ id: 'c', name: 'noop', arguments: { n: 1 } }] })
  const lastStep = lib.scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `) })
  const adapter = {
    provider: 'bench',
    calls: 0,
    async *stream(_request: GenerateOptions): AsyncGenerator<StreamChunk> {
      const call = ++adapter.calls
      if (!plain) {
        for (const c of call < steps ? toolStep : lastStep) yield c.type === 'tool-call-delta' ? { ...c, id: `call_${call}` } : c
        return
      }
      yield { type: 'block-start', index: 0, blockType: 'text' }
      let text = ''
      for (let i = 0; i < K; i++) {
        text += `tok${i} `
        yield { type: 'text-delta', index: 0, text: `tok${i} ` }
      }
      yield { type: 'block-end', index: 0, block: { type: 'text', text } }
      if (call < steps) {
        const id = `call_${call}`
        yield { type: 'block-start', index: 1, blockType: 'tool-call' }
        yield { type: 'tool-call-delta', index: 1, id, name: 'noop', argumentsDelta: '{"n":1}' }
        yield { type: 'block-end', index: 1, block: { type: 'tool-call', id, name: 'noop', arguments: '{"n":1}' } }
      }
      yield { type: 'usage', usage: { inputTokens: 10, outputTokens: 5 } }
      yield { type: 'finish', reason: { kind: call < steps ? 'tool-calls' : 'stop' } }
    },
  }
  return adapter
}
