import type { JsonValue } from '../json/lossless.js'
import type { BlockType, ContentBlock, FinishReason, StreamChunk, TokenUsage } from './types.js'

interface PartialBlock {
  readonly blockType: BlockType
  text: string
  toolCallId: string | undefined
  toolCallName: string | undefined
  toolCallArguments: string
  /** Set by the first `block-end`; authoritative once present. */
  closed: ContentBlock | undefined
}

/**
 * Folds a stream of chunks into content blocks (docs/adapters.md, "The chunk grammar"). Tolerant by design:
 * deltas without a `block-start` open the block implicitly; the first `block-end` for an index wins and replaces what the
 * deltas accumulated; anything for a closed index is ignored. On a `max-tokens` finish every tool call is
 * dropped, because a truncated call is unsafe to run.
 */
export class BlockAssembler {
  readonly #partials = new Map<number, PartialBlock>()
  #usage: TokenUsage | undefined
  #finish: FinishReason | undefined
  #replayState: JsonValue | undefined

  /** Adds one chunk. */
  push(chunk: StreamChunk): void {
    switch (chunk.type) {
      case 'block-start':
        if (!this.#partials.has(chunk.index)) this.#partials.set(chunk.index, newPartial(chunk.blockType))
        return
      case 'text-delta':
      case 'reasoning-delta': {
        const p = this.#open(chunk.index, chunk.type === 'text-delta' ? 'text' : 'reasoning')
        if (p !== undefined) p.text += chunk.text
        return
      }
      case 'tool-call-delta': {
        const p = this.#open(chunk.index, 'tool-call')
        if (p === undefined) return
        if (chunk.id !== '') p.toolCallId = chunk.id
        if (chunk.name !== undefined && chunk.name !== '') p.toolCallName = chunk.name
        p.toolCallArguments += chunk.argumentsDelta
        return
      }
      case 'block-end': {
        let p = this.#partials.get(chunk.index)
        if (p === undefined) {
          p = newPartial(chunk.block.type)
          this.#partials.set(chunk.index, p)
        }
        p.closed ??= chunk.block
        return
      }
      case 'usage':
        this.#usage = chunk.usage
        return
      case 'finish':
        this.#finish = chunk.reason
        this.#replayState = chunk.replayState
        return
    }
  }

  /** @internal Adds a text or reasoning delta given as its parts: the same as `push({type, index, text})`. */
  pushText(type: 'text-delta' | 'reasoning-delta', index: number, text: string): void {
    const p = this.#open(index, type === 'text-delta' ? 'text' : 'reasoning')
    if (p !== undefined) p.text += text
  }

  /** The finish reason; `{kind:'stop'}` when no finish chunk arrived. */
  get finish(): FinishReason {
    return this.#finish ?? { kind: 'stop' }
  }

  /** True once a finish chunk arrived. */
  get finished(): boolean {
    return this.#finish !== undefined
  }

  /** The last usage chunk's usage, if any. */
  get usage(): TokenUsage | undefined {
    return this.#usage
  }

  /**
   * The assembled blocks in first-seen index order. Open text/reasoning use their accumulated text; an open
   * tool call gets `call-<index>` when no id arrived. An open block of an unknown type throws.
   */
  blocks(): ContentBlock[] {
    const dropToolCalls = this.#finish?.kind === 'max-tokens'
    const out: ContentBlock[] = []
    for (const [index, p] of this.#partials) {
      const block = p.closed ?? materialise(index, p)
      if (dropToolCalls && block.type === 'tool-call') continue
      out.push(block)
    }
    return out
  }

  /**
   * Adapter replay state, pruned to the emitted blocks: when it carries per-block entries whose count does not
   * match the blocks seen, it is dropped whole; entries of tool calls dropped by max-tokens are removed.
   */
  replayState(): JsonValue | undefined {
    const state = this.#replayState
    if (typeof state !== 'object' || state === null || Array.isArray(state) || !Array.isArray(state.blocks)) return state
    const entries = state.blocks
    if (entries.length !== this.#partials.size) return undefined
    if (this.#finish?.kind !== 'max-tokens') return state
    const kept: JsonValue[] = []
    let i = 0
    for (const [index, p] of this.#partials) {
      const block = p.closed ?? materialise(index, p)
      if (block.type !== 'tool-call') kept.push(entries[i] as JsonValue)
      i++
    }
    return { ...state, blocks: kept }
  }

  /** What a cancelled stream leaves the user: non-blank text and reasoning blocks only, in stream order. */
  interruptedBlocks(): ContentBlock[] {
    const out: ContentBlock[] = []
    for (const [index, p] of this.#partials) {
      if (p.blockType !== 'text' && p.blockType !== 'reasoning') continue
      const block = p.closed ?? materialise(index, p)
      if ((block.type === 'text' || block.type === 'reasoning') && block.text.trim() !== '') out.push(block)
    }
    return out
  }

  #open(index: number, type: BlockType): PartialBlock | undefined {
    let p = this.#partials.get(index)
    if (p === undefined) {
      p = newPartial(type)
      this.#partials.set(index, p)
    }
    return p.closed === undefined ? p : undefined
  }
}

function newPartial(blockType: BlockType): PartialBlock {
  return { blockType, text: '', toolCallId: undefined, toolCallName: undefined, toolCallArguments: '', closed: undefined }
}

function materialise(index: number, p: PartialBlock): ContentBlock {
  switch (p.blockType) {
    case 'text':
      return { type: 'text', text: p.text }
    case 'reasoning':
      return { type: 'reasoning', text: p.text }
    case 'tool-call':
      return { type: 'tool-call', id: p.toolCallId ?? `call-${index}`, name: p.toolCallName ?? '', arguments: p.toolCallArguments }
    default:
      throw new Error(`stream left block ${index} of type '${p.blockType}' open and it cannot be assembled from deltas`)
  }
}
