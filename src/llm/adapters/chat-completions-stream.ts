import type { FinishReason, StreamChunk, TokenUsage } from '../types.js'
import { failureFromStreamError } from './provider-failure.js'
import { StreamBlocks } from './stream-blocks.js'

import { WireStream, type TranslatedEvent } from './translated-stream.js'

interface WireToolCallDelta {
  index?: unknown
  id?: unknown
  function?: { name?: unknown; arguments?: unknown }
}

/**
 * One stateful pass over a Chat Completions SSE stream (DeepSeek, OpenAI and compatible servers). Reasoning
 * (`reasoning_content`, or `reasoning` on vLLM/OpenRouter) opens one reasoning block, `content` one text block,
 * and each tool call is keyed by its wire `index`, so parallel calls stay apart. OpenAI's `refusal` pieces open
 * a text block of their own (the words are the model's and the user must see them) and turn a `stop` into the
 * non-retried failure `MODEL_REFUSED`. Blocks close, usage is reported and the finish is decided when `[DONE]`
 * arrives (or at a clean EOF after a `finish_reason`).
 */
export class ChatCompletionsTranslator {
  readonly #blocks = new StreamBlocks()
  readonly #wire: WireStream
  #finishReason: string | undefined
  #usage: TokenUsage | undefined
  /** The refusal text so far; non-empty means the model declined and the finish says so. */
  #refusal = ''
  readonly #requireText: boolean
  /** Whether any non-blank visible text arrived (JSON mode's empty-content check). */
  #sawText = false

  /**
   * @param provider - route name for messages
   * @param secrets - redacted from provider-authored text
   * @param requestId - the response's request id, attached to failures
   * @param options - `requireText`: a `stop` with no visible text and no tool call is `EMPTY_RESPONSE` (JSON mode)
   */
  constructor(provider: string, secrets: readonly string[], requestId?: string, options: { readonly requireText?: boolean } = {}) {
    this.#wire = new WireStream(provider, secrets, requestId)
    this.#requireText = options.requireText === true
  }

  /** Translates one event's `data`. */
  accept(data: string): TranslatedEvent {
    if (this.#wire.done) return { chunks: [], done: true }
    if (data.trim() === '[DONE]') return this.#complete()
    const read = this.#wire.parse(data)
    if ('ended' in read) return read.ended
    const parsed = read.value
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return this.#wire.fail({ message: `${this.#wire.provider} sent an event that is not a JSON object`, code: 'MALFORMED_RESPONSE' })
    }
    const event = parsed as Record<string, unknown>
    // OpenRouter and vLLM report failures inside a 200 stream as `{error: {...}}`.
    if (event.error !== undefined && event.error !== null) {
      return this.#wire.fail(failureFromStreamError(this.#wire.provider, event, this.#wire.secrets, this.#wire.requestId))
    }
    // The last usage wins: it may ride on the finish chunk or on a trailing usage-only chunk.
    if (typeof event.usage === 'object' && event.usage !== null) this.#usage = chatCompletionsUsage(event.usage as Record<string, unknown>)
    const chunks: StreamChunk[] = []
    const choices = Array.isArray(event.choices) ? event.choices : []
    // We never ask for n > 1, so only the first choice exists; others would be ignored.
    const choice = choices[0] as Record<string, unknown> | undefined
    if (choice !== undefined) {
      const delta = (typeof choice.delta === 'object' && choice.delta !== null ? choice.delta : {}) as Record<string, unknown>
      const reasoning = typeof delta.reasoning_content === 'string' ? delta.reasoning_content : typeof delta.reasoning === 'string' ? delta.reasoning : ''
      chunks.push(...this.#blocks.reasoning('reasoning', reasoning))
      if (typeof delta.content === 'string') {
        if (delta.content.trim() !== '') this.#sawText = true
        chunks.push(...this.#blocks.text('text', delta.content))
      }
      // OpenAI opens a refusal with `refusal: ""` beside `content: null`, then spells it in `refusal` pieces.
      if (typeof delta.refusal === 'string' && delta.refusal !== '') {
        this.#refusal += delta.refusal
        chunks.push(...this.#blocks.text('refusal', delta.refusal))
      }
      if (Array.isArray(delta.tool_calls)) {
        delta.tool_calls.forEach((raw: unknown, position: number) => {
          const call = (typeof raw === 'object' && raw !== null ? raw : {}) as WireToolCallDelta
          // Servers that send each call whole (Ollama, older llama.cpp) may omit `index`; position stands in.
          const wireIndex = typeof call.index === 'number' ? call.index : position
          chunks.push(
            ...this.#blocks.toolCall(`tool:${wireIndex}`, {
              ...(typeof call.id === 'string' ? { id: call.id } : {}),
              ...(typeof call.function?.name === 'string' ? { name: call.function.name } : {}),
              argumentsDelta: typeof call.function?.arguments === 'string' ? call.function.arguments : '',
            }),
          )
        })
      }
      if (typeof choice.finish_reason === 'string' && choice.finish_reason !== '') this.#finishReason = choice.finish_reason
    }
    return { chunks, done: false }
  }

  /**
   * The stream ended without `[DONE]`. After a `finish_reason` this is a server that omits `[DONE]` and the
   * reply is complete; before one, the connection dropped mid-answer (`TRANSPORT`).
   */
  endOfStream(): TranslatedEvent {
    if (this.#wire.done) return { chunks: [], done: true }
    if (this.#finishReason !== undefined) return this.#complete()
    return this.#wire.fail({ message: `${this.#wire.provider} closed the stream before the reply was complete`, code: 'TRANSPORT' })
  }

  #complete(): TranslatedEvent {
    this.#wire.done = true
    const chunks = this.#blocks.closeAll()
    if (this.#usage !== undefined) chunks.push({ type: 'usage', usage: this.#usage })
    chunks.push({ type: 'finish', reason: this.#finishFor(this.#finishReason) })
    return { chunks, done: true }
  }

  #finishFor(reason: string | undefined): FinishReason {
    const wireReason = reason ?? (this.#blocks.toolCallCount > 0 ? 'tool_calls' : 'stop')
    switch (wireReason) {
      case 'stop':
      case 'tool_calls':
      case 'function_call':
        // A refusal is an answer, not a glitch: retrying asks the same question and gets the same refusal.
        if (this.#refusal !== '') return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} refused: ${this.#refusal}`, 'MODEL_REFUSED') }
        if (!this.#blocks.anyOpened) return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} finished without any content`, 'EMPTY_RESPONSE') }
        if (this.#requireText && !this.#sawText && this.#blocks.toolCallCount === 0) {
          return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} finished a JSON-mode reply with empty content`, 'EMPTY_RESPONSE') }
        }
        return wireReason === 'stop' ? { kind: 'stop' } : { kind: 'tool-calls' }
      case 'length':
        return { kind: 'max-tokens' }
      case 'content_filter':
        return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} stopped the reply: content filter`, 'CONTENT_FILTER') }
      case 'insufficient_system_resource':
        return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} stopped the reply: insufficient system resource`, 'SERVER') }
      default:
        return { kind: 'error', failure: this.#wire.failure(`${this.#wire.provider} stopped the reply: ${wireReason}`, wireReason.toUpperCase()) }
    }
  }


}

/**
 * Usage in non-overlapping buckets. DeepSeek reports `prompt_cache_hit_tokens` / `prompt_cache_miss_tokens`;
 * OpenAI reports `prompt_tokens_details.cached_tokens` inside `prompt_tokens`. Uncached input = miss count, or
 * prompt tokens minus the cached ones. Reasoning is inside `completion_tokens` for OpenAI and DeepSeek but
 * outside it for xAI; `total_tokens` tells which (see {@link reasoningOutsideCompletion}), and output always
 * includes reasoning, because that is what is billed.
 */
export function chatCompletionsUsage(raw: Record<string, unknown>): TokenUsage {
  const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined)
  const details = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {})
  const prompt = num(raw.prompt_tokens) ?? 0
  const cacheRead = num(raw.prompt_cache_hit_tokens) ?? num(details(raw.prompt_tokens_details).cached_tokens)
  const input = num(raw.prompt_cache_miss_tokens) ?? Math.max(0, prompt - (cacheRead ?? 0))
  const reasoning = num(details(raw.completion_tokens_details).reasoning_tokens)
  const completion = num(raw.completion_tokens) ?? 0
  const outside = reasoning !== undefined && reasoningOutsideCompletion(prompt, completion, reasoning, num(raw.total_tokens))
  return {
    inputTokens: input,
    outputTokens: outside ? completion + reasoning : completion,
    ...(cacheRead !== undefined ? { cacheReadTokens: cacheRead } : {}),
    ...(reasoning !== undefined ? { reasoningTokens: reasoning } : {}),
  }
}

/**
 * True when a response counts reasoning apart from `completion_tokens` (xAI: prompt 12, completion 1, reasoning
 * 290, total 303). Only `total_tokens` can tell: prompt + completion = total means reasoning is inside the
 * completion count; prompt + completion + reasoning = total means it is outside. Without a total, or when
 * neither sum matches, the documented OpenAI convention (inside) is assumed.
 */
export function reasoningOutsideCompletion(prompt: number, completion: number, reasoning: number, total: number | undefined): boolean {
  if (total === undefined || reasoning === 0) return false
  return prompt + completion !== total && prompt + completion + reasoning === total
}
