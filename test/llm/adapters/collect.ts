import { expect } from 'vitest'
import { BlockAssembler } from '../../../src/llm/block-assembler.js'
import { StreamGrammar } from '../../../src/llm/stream-grammar.js'
import type { ContentBlock, FinishReason, GenerateOptions, LlmAdapter, LlmFailure, StreamChunk, TokenUsage } from '../../../src/llm/types.js'

/** Everything one adapter call produced, already checked against the chunk grammar. */
export interface CollectedStream {
  readonly chunks: StreamChunk[]
  readonly blocks: ContentBlock[]
  readonly finish: FinishReason
  readonly usage: TokenUsage | undefined
  /** The failure of an `error`/`aborted` finish. */
  readonly failure: LlmFailure | undefined
}

/**
 * Runs one request through an adapter, asserting every chunk against {@link StreamGrammar} (and that a finish
 * came last) and folding the chunks with {@link BlockAssembler}.
 */
export async function collect(adapter: LlmAdapter, request: GenerateOptions, onChunk?: (chunk: StreamChunk) => void): Promise<CollectedStream> {
  const grammar = new StreamGrammar()
  const assembler = new BlockAssembler()
  const chunks: StreamChunk[] = []
  for await (const chunk of adapter.stream(request)) {
    const problem = grammar.check(chunk)
    expect(problem, `grammar: ${problem ?? ''} in ${JSON.stringify(chunks.concat(chunk))}`).toBeUndefined()
    chunks.push(chunk)
    assembler.push(chunk)
    onChunk?.(chunk)
  }
  expect(grammar.end()).toBeUndefined()
  const finish = assembler.finish
  const failure = finish.kind === 'error' || finish.kind === 'aborted' ? finish.failure : undefined
  return { chunks, blocks: assembler.blocks(), finish, usage: assembler.usage, failure }
}

/** Every string in the collected output (chunks and failure), to assert a secret never leaks. */
export function allText(result: CollectedStream): string {
  return JSON.stringify(result.chunks)
}
