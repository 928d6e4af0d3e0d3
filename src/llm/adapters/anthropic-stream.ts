import type { FinishReason, StreamChunk, TokenUsage } from '../types.js'
import { WireStream, type TranslatedEvent } from './translated-stream.js'
import { failureFromStreamError } from './provider-failure.js'
import { StreamBlocks } from './stream-blocks.js'

type Json = Record<string, unknown>

const asRecord = (v: unknown): Json => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : {})
const asString = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)
const asCount = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined)

/**
 * One stateful pass over a Messages API stream. `message_start` carries the input usage, each
 * `content_block_start … content_block_stop` becomes one block (`text`; `thinking` → reasoning with its
 * signature; `tool_use` → tool call fed by `input_json_delta`), `message_delta` carries the stop reason and the
 * output count, `message_stop` ends the reply. `ping` and unknown events are ignored; an `error` event ends the
 * stream with a failure.
 */
export class AnthropicTranslator {
  readonly #blocks = new StreamBlocks()
  readonly #wire: WireStream
  /** Wire index → the kind of block we opened for it (`ignored` for kinds we do not model, `answer` for the answer tool). */
  readonly #kinds = new Map<string, 'text' | 'thinking' | 'tool_use' | 'answer' | 'ignored'>()
  /** The structured-output answer tool's name, when the request had `output`. */
  readonly #answerTool: string | undefined
  readonly #toolArgsSeen = new Set<string>()
  #usage: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number } = {}
  #stopReason: string | undefined

  /**
   * @param provider - route name for messages
   * @param secrets - redacted from provider-authored text
   * @param requestId - the response's request id, attached to failures
   * @param answerTool - the structured-output answer tool: its call is read as the answer's text (its input)
   */
  constructor(provider: string, secrets: readonly string[], requestId?: string, answerTool?: string) {
    this.#wire = new WireStream(provider, secrets, requestId)
    this.#answerTool = answerTool
  }

  /** Translates one event (its `data`; the `type` inside the data is authoritative over the SSE event name). */
  accept(data: string): TranslatedEvent {
    if (this.#wire.done) return { chunks: [], done: true }
    const read = this.#wire.parse(data)
    if ('ended' in read) return read.ended
    const parsed = read.value
    const event = asRecord(parsed)
    switch (event.type) {
      case 'message_start':
        this.#addUsage(asRecord(asRecord(event.message).usage))
        return { chunks: [], done: false }
      case 'content_block_start':
        return { chunks: this.#start(String(event.index), asRecord(event.content_block)), done: false }
      case 'content_block_delta':
        return { chunks: this.#delta(String(event.index), asRecord(event.delta)), done: false }
      case 'content_block_stop':
        return { chunks: this.#stop(String(event.index)), done: false }
      case 'message_delta':
        this.#stopReason = asString(asRecord(event.delta).stop_reason) ?? this.#stopReason
        this.#addUsage(asRecord(event.usage))
        return { chunks: [], done: false }
      case 'message_stop':
        return this.#complete()
      case 'error':
        return this.#wire.fail(failureFromStreamError(this.#wire.provider, event, this.#wire.secrets, this.#wire.requestId))
      default:
        // `ping` and event types added later carry nothing we model.
        return { chunks: [], done: false }
    }
  }

  /** The stream ended without `message_stop`: the connection dropped mid-reply. */
  endOfStream(): TranslatedEvent {
    if (this.#wire.done) return { chunks: [], done: true }
    return this.#wire.fail({ message: `${this.#wire.provider} closed the stream before the reply was complete`, code: 'TRANSPORT' })
  }

  #start(key: string, block: Json): StreamChunk[] {
    switch (block.type) {
      case 'text':
        this.#kinds.set(key, 'text')
        return this.#blocks.text(key, asString(block.text) ?? '')
      case 'thinking': {
        this.#kinds.set(key, 'thinking')
        const chunks = this.#blocks.reasoning(key, asString(block.thinking) ?? '')
        chunks.push(...this.#blocks.signature(key, asString(block.signature) ?? ''))
        return chunks
      }
      case 'tool_use':
        // The answer is the tool's input: as text it is the turn's answer, not a call for the loop to run.
        if (this.#answerTool !== undefined && block.name === this.#answerTool) {
          this.#kinds.set(key, 'answer')
          return []
        }
        this.#kinds.set(key, 'tool_use')
        return this.#blocks.toolCall(key, { id: asString(block.id) ?? '', name: asString(block.name) ?? '', argumentsDelta: '' })
      default:
        // redacted_thinking, server tool blocks…: no block kind of ours can carry them.
        this.#kinds.set(key, 'ignored')
        return []
    }
  }

  #delta(key: string, delta: Json): StreamChunk[] {
    const kind = this.#kinds.get(key)
    switch (delta.type) {
      case 'text_delta':
        return kind === 'text' ? this.#blocks.text(key, asString(delta.text) ?? '') : []
      case 'thinking_delta':
        return kind === 'thinking' ? this.#blocks.reasoning(key, asString(delta.thinking) ?? '') : []
      case 'signature_delta':
        return kind === 'thinking' ? this.#blocks.signature(key, asString(delta.signature) ?? '') : []
      case 'input_json_delta': {
        if (kind !== 'tool_use' && kind !== 'answer') return []
        const part = asString(delta.partial_json) ?? ''
        if (part !== '') this.#toolArgsSeen.add(key)
        if (kind === 'answer') return this.#blocks.text(key, part)
        return this.#blocks.toolCall(key, { argumentsDelta: part })
      }
      default:
        return []
    }
  }

  #stop(key: string): StreamChunk[] {
    const chunks: StreamChunk[] = []
    // A tool called with no arguments streams no input_json_delta; its input is the empty object.
    if (this.#kinds.get(key) === 'tool_use' && !this.#toolArgsSeen.has(key)) chunks.push(...this.#blocks.toolCall(key, { argumentsDelta: '{}' }))
    if (this.#kinds.get(key) === 'answer' && !this.#toolArgsSeen.has(key)) chunks.push(...this.#blocks.text(key, '{}'))
    chunks.push(...this.#blocks.close(key))
    return chunks
  }

  #addUsage(raw: Json): void {
    const u = this.#usage
    u.input = asCount(raw.input_tokens) ?? u.input
    u.output = asCount(raw.output_tokens) ?? u.output
    u.cacheRead = asCount(raw.cache_read_input_tokens) ?? u.cacheRead
    u.cacheWrite = asCount(raw.cache_creation_input_tokens) ?? u.cacheWrite
  }

  #complete(): TranslatedEvent {
    this.#wire.done = true
    const chunks = this.#blocks.closeAll()
    const u = this.#usage
    if (u.input !== undefined || u.output !== undefined) {
      // Anthropic's input_tokens already excludes cache reads and writes: the buckets do not overlap.
      const usage: TokenUsage = {
        inputTokens: u.input ?? 0,
        outputTokens: u.output ?? 0,
        ...(u.cacheRead !== undefined ? { cacheReadTokens: u.cacheRead } : {}),
        ...(u.cacheWrite !== undefined ? { cacheWriteTokens: u.cacheWrite } : {}),
      }
      chunks.push({ type: 'usage', usage })
    }
    chunks.push({ type: 'finish', reason: this.#finishFor(this.#stopReason) })
    return { chunks, done: true }
  }

  #finishFor(reason: string | undefined): FinishReason {
    switch (reason ?? 'end_turn') {
      case 'end_turn':
      case 'stop_sequence':
      case 'pause_turn':
      case 'tool_use':
        if (!this.#blocks.anyOpened) return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} finished without any content`, 'EMPTY_RESPONSE') }
        // A reply whose only tool call was the answer tool is a final answer.
        return reason === 'tool_use' && this.#blocks.toolCallCount > 0 ? { kind: 'tool-calls' } : { kind: 'stop' }
      case 'max_tokens':
        return { kind: 'max-tokens' }
      case 'refusal':
        return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} refused to answer`, 'CONTENT_FILTER') }
      case 'model_context_window_exceeded':
        return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} stopped: the context window is full`, 'CONTEXT_WINDOW_EXCEEDED') }
      default:
        return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} stopped: ${String(reason)}`, String(reason).toUpperCase()) }
    }
  }


}
