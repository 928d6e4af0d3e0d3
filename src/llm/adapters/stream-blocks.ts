import type { ContentBlock, StreamChunk } from '../types.js'

type OpenBlock =
  | { readonly type: 'text'; readonly index: number; text: string }
  | { readonly type: 'reasoning'; readonly index: number; text: string; signature: string | undefined }
  | { readonly type: 'tool-call'; readonly index: number; id: string | undefined; name: string | undefined; args: string }

/**
 * Turns a provider's wire deltas into grammar-conforming chunks (stream-grammar.ts): a block opens with
 * `block-start` on its first delta, block indices are handed out in opening order, and `block-end` carries the
 * block rebuilt from everything streamed into it. Wire blocks are addressed by a caller-chosen key (Chat
 * Completions: `text`, `reasoning`, `tool:<wire index>`; Anthropic: the event's `index`), so interleaved
 * parallel tool calls stay apart.
 */
export class StreamBlocks {
  readonly #open = new Map<string, OpenBlock>()
  #nextIndex = 0
  #toolCalls = 0

  /** True once any block has opened (a stop with none is `EMPTY_RESPONSE`). */
  get anyOpened(): boolean {
    return this.#nextIndex > 0
  }

  /** Tool-call blocks opened so far. */
  get toolCallCount(): number {
    return this.#toolCalls
  }

  /** Appends visible text. An empty delta opens nothing. */
  text(key: string, delta: string): StreamChunk[] {
    if (delta === '') return []
    const out: StreamChunk[] = []
    const block = this.#ensure(key, 'text', out)
    if (block.type !== 'text') return out
    block.text += delta
    out.push({ type: 'text-delta', index: block.index, text: delta })
    return out
  }

  /** Appends reasoning. An empty delta opens nothing (DeepSeek's first thinking delta is `""`). */
  reasoning(key: string, delta: string): StreamChunk[] {
    if (delta === '') return []
    const out: StreamChunk[] = []
    const block = this.#ensure(key, 'reasoning', out)
    if (block.type !== 'reasoning') return out
    block.text += delta
    out.push({ type: 'reasoning-delta', index: block.index, text: delta })
    return out
  }

  /**
   * Records a reasoning signature (Anthropic `signature_delta`); it travels in the block-end payload. A signed
   * block whose thinking text is empty still opens, because the provider wants it back.
   */
  signature(key: string, signature: string): StreamChunk[] {
    if (signature === '') return []
    const out: StreamChunk[] = []
    const block = this.#ensure(key, 'reasoning', out)
    if (block.type === 'reasoning') block.signature = (block.signature ?? '') + signature
    return out
  }

  /**
   * Extends a tool call. `id` and `name` usually arrive on the first fragment only and are kept; each call
   * emits one `tool-call-delta` carrying the id known so far (or `''`) and the name the first time it is known.
   */
  toolCall(key: string, fragment: { readonly id?: string; readonly name?: string; readonly argumentsDelta: string }): StreamChunk[] {
    const out: StreamChunk[] = []
    const block = this.#ensure(key, 'tool-call', out)
    if (block.type !== 'tool-call') return out
    if (fragment.id !== undefined && fragment.id !== '') block.id = fragment.id
    const newName = fragment.name !== undefined && fragment.name !== '' && block.name === undefined ? fragment.name : undefined
    if (newName !== undefined) block.name = newName
    block.args += fragment.argumentsDelta
    if (fragment.argumentsDelta === '' && newName === undefined && out.length === 0) return out
    out.push({
      type: 'tool-call-delta',
      index: block.index,
      id: block.id ?? '',
      ...(newName !== undefined ? { name: newName } : {}),
      argumentsDelta: fragment.argumentsDelta,
    })
    return out
  }

  /** Closes one block (no-op when it is not open). */
  close(key: string): StreamChunk[] {
    const block = this.#open.get(key)
    if (block === undefined) return []
    this.#open.delete(key)
    return [{ type: 'block-end', index: block.index, block: finalBlock(block) }]
  }

  /** Closes every open block in opening order. */
  closeAll(): StreamChunk[] {
    return [...this.#open.keys()].flatMap((key) => this.close(key))
  }

  #ensure(key: string, type: OpenBlock['type'], out: StreamChunk[]): OpenBlock {
    const existing = this.#open.get(key)
    if (existing !== undefined) {
      if (existing.type === type) return existing
      // The wire reused a key for another block kind: close the old one so the grammar holds.
      out.push(...this.close(key))
    }
    const index = this.#nextIndex++
    let block: OpenBlock
    if (type === 'tool-call') {
      this.#toolCalls++
      block = { type, index, id: undefined, name: undefined, args: '' }
    } else if (type === 'reasoning') {
      block = { type, index, text: '', signature: undefined }
    } else {
      block = { type, index, text: '' }
    }
    this.#open.set(key, block)
    out.push({ type: 'block-start', index, blockType: type })
    return block
  }
}

function finalBlock(block: OpenBlock): ContentBlock {
  switch (block.type) {
    case 'text':
      return { type: 'text', text: block.text }
    case 'reasoning':
      return block.signature !== undefined && block.signature !== ''
        ? { type: 'reasoning', text: block.text, signature: block.signature }
        : { type: 'reasoning', text: block.text }
    case 'tool-call':
      // Same fallback id as BlockAssembler, so a replayed stream and a live one agree.
      return { type: 'tool-call', id: block.id ?? `call-${block.index}`, name: block.name ?? '', arguments: block.args }
  }
}
