import { streamTranslatedEvents } from './translated-stream.js'
import type { GenerateOptions, LlmAdapter, ModelInfo, StreamChunk } from '../types.js'
import { anthropicBody, type AnthropicEndpointTraits } from './anthropic-request.js'
import { AnthropicTranslator } from './anthropic-stream.js'
import { joinUrl, missingKeyFinish, resolveApiKey } from './endpoint.js'

/** Anthropic's API base; `/v1/messages` is appended. */
export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com'

/** The Messages API version header every request carries. */
export const ANTHROPIC_VERSION = '2023-06-01'

/** Options of {@link anthropicAdapter}. */
export interface AnthropicAdapterOptions {
  /** API key; when absent, `ANTHROPIC_API_KEY` is read at request time. */
  readonly apiKey?: string
  /**
   * Endpoint base (default {@link ANTHROPIC_BASE_URL}). DeepSeek's Anthropic-format endpoint works by base URL
   * alone: `https://api.deepseek.com/anthropic` (with a DeepSeek key).
   */
  readonly baseURL?: string
  /**
   * Model facts by exact model name. None are built in (Claude model names change often); without an entry a
   * model passes through, and `max_tokens` falls back to the request's `maxTokens` or 8192.
   */
  readonly models?: Readonly<Record<string, ModelInfo>>
  /** Idle-stream watchdog in ms (default 300000). */
  readonly idleTimeoutMs?: number
  /** Longest wait for the HTTP response before `TIMEOUT` (default 10000; never more than the idle timeout). */
  readonly responseTimeoutMs?: number
  /** Extra request headers (a proxy's, a gateway's); the key and version headers win over them. */
  readonly headers?: Readonly<Record<string, string>>
  /** `fetch` implementation (tests); the global one by default. */
  readonly fetch?: typeof fetch
}

/** First-party Anthropic, or an Anthropic-format endpoint elsewhere (DeepSeek, gateways), judged by host. */
function endpointTraits(baseURL: string): AnthropicEndpointTraits {
  let host = ''
  try {
    host = new URL(baseURL).hostname
  } catch {
    host = ''
  }
  const firstParty = host === 'api.anthropic.com'
  return { sendUnsignedThinking: !firstParty, sendOutputEffort: !firstParty }
}

/**
 * The Anthropic Messages adapter (provider `anthropic`): POST `{baseURL}/v1/messages` with `x-api-key` and
 * `anthropic-version: 2023-06-01`, streamed. The system prompt is the top-level `system` field; tool calls and
 * results map to `tool_use` / `tool_result`; thinking streams as reasoning blocks whose signature is kept and
 * sent back. `reasoningEffort` turns extended thinking on with a token budget:
 * `low` 2048, `medium` 8192, `high` 16384, `max` 32768 (`budget_tokens`, clamped below `max_tokens`), `off`
 * sends `thinking: {type: 'disabled'}`, unset sends nothing. Usage maps `cache_read_input_tokens` and
 * `cache_creation_input_tokens` to `cacheReadTokens` / `cacheWriteTokens`.
 *
 * @example
 * ```ts
 * const claude = anthropicAdapter()                                   // ANTHROPIC_API_KEY
 * const viaDeepseek = anthropicAdapter({ baseURL: 'https://api.deepseek.com/anthropic', apiKey: process.env.DEEPSEEK_API_KEY })
 * ```
 */
export function anthropicAdapter(options: AnthropicAdapterOptions = {}): LlmAdapter {
  const baseURL = options.baseURL ?? ANTHROPIC_BASE_URL
  const models = options.models ?? {}
  const traits = endpointTraits(baseURL)
  return {
    provider: 'anthropic',
    resolveModel: (model) => (Object.hasOwn(models, model) ? models[model] : undefined),
    stream: (request) => streamMessages(options, baseURL, traits, models, request),
  }
}

async function* streamMessages(
  options: AnthropicAdapterOptions,
  baseURL: string,
  traits: AnthropicEndpointTraits,
  models: Readonly<Record<string, ModelInfo>>,
  request: GenerateOptions,
): AsyncGenerator<StreamChunk> {
  const key = resolveApiKey({ ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}), env: 'ANTHROPIC_API_KEY', required: true })
  if (key === undefined) {
    yield missingKeyFinish('anthropic', 'ANTHROPIC_API_KEY')
    return
  }
  const body = anthropicBody(request, traits, Object.hasOwn(models, request.model) ? models[request.model]?.defaultMaxTokens : undefined)
  if (typeof body === 'string') {
    yield { type: 'finish', reason: { kind: 'error', failure: { message: body, code: 'BAD_REQUEST' } } }
    return
  }
  yield* streamTranslatedEvents(
    {
      provider: 'anthropic',
      url: joinUrl(baseURL, 'v1/messages'),
      headers: { ...options.headers, 'x-api-key': key, 'anthropic-version': ANTHROPIC_VERSION },
      body: JSON.stringify(body),
      secrets: [key],
      ...(request.signal !== undefined ? { signal: request.signal } : {}),
      ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
      ...(options.responseTimeoutMs !== undefined ? { responseTimeoutMs: options.responseTimeoutMs } : {}),
      ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
    },
    (requestId) => new AnthropicTranslator('anthropic', [key], requestId, request.output?.name),
  )
}
