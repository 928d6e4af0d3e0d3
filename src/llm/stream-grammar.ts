import type { BlockType, StreamChunk } from './types.js'

/**
 * Checks a chunk stream against the adapter grammar one chunk at a time (docs/adapters.md, "The chunk
 * grammar"): indices are non-negative safe integers; `block-start` never repeats; a delta addresses an open
 * block of its type; `block-end` closes an open block of the same type; at most one `usage`; exactly one
 * `finish`, last; a non-failure finish leaves no block open. `check` returns a problem description or `undefined`.
 */
export class StreamGrammar {
  readonly #open = new Map<number, BlockType>()
  readonly #seen = new Set<number>()
  #usage = false
  #finished = false

  /** Validates the next chunk; returns what is wrong with it, or `undefined`. */
  check(chunk: StreamChunk): string | undefined {
    if (this.#finished) return `chunk '${chunk.type}' after finish`
    if ('index' in chunk && (!Number.isSafeInteger(chunk.index) || chunk.index < 0)) return `bad block index ${String(chunk.index)}`
    switch (chunk.type) {
      case 'block-start':
        if (this.#seen.has(chunk.index)) return `block-start repeated for index ${chunk.index}`
        this.#seen.add(chunk.index)
        this.#open.set(chunk.index, chunk.blockType)
        return undefined
      case 'text-delta':
        return this.#delta(chunk.index, 'text')
      case 'reasoning-delta':
        return this.#delta(chunk.index, 'reasoning')
      case 'tool-call-delta':
        return this.#delta(chunk.index, 'tool-call')
      case 'block-end': {
        const open = this.#open.get(chunk.index)
        if (open === undefined) return `block-end for index ${chunk.index} that is not open`
        if (open !== chunk.block.type) return `block-end of type '${chunk.block.type}' closes a '${open}' block at index ${chunk.index}`
        this.#open.delete(chunk.index)
        return undefined
      }
      case 'usage':
        if (this.#usage) return 'second usage chunk'
        this.#usage = true
        return undefined
      case 'finish': {
        this.#finished = true
        const failure = chunk.reason.kind === 'error' || chunk.reason.kind === 'aborted'
        if (!failure && this.#open.size > 0) return `finish '${chunk.reason.kind}' with open blocks ${[...this.#open.keys()].join(', ')}`
        return undefined
      }
    }
  }

  /** Problem with ending the stream now (no finish seen), or `undefined`. */
  end(): string | undefined {
    return this.#finished ? undefined : 'stream ended without a finish chunk'
  }

  #delta(index: number, type: BlockType): string | undefined {
    const open = this.#open.get(index)
    if (open === undefined) return `${type} delta for index ${index} that is not open`
    if (open !== type) return `${type} delta into a '${open}' block at index ${index}`
    return undefined
  }
}
