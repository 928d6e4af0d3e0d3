import { normalizeLlmFailure } from '../llm-error.js'
import { streamTranslatedEvents } from './translated-stream.js'
import { failureFinish } from '../registry.js'
import type { GenerateOptions, LlmAdapter, ModelInfo, StreamChunk } from '../types.js'
import { chatCompletionsBody, type ChatCompletionsDialect } from './chat-completions-request.js'
import { ChatCompletionsTranslator } from './chat-completions-stream.js'
import { joinUrl, missingKeyFinish, resolveApiKey, type ApiKeySource } from './endpoint.js'

/** Everything the shared Chat Completions adapter needs; DeepSeek and the generic adapter both build one. */
export interface ChatCompletionsAdapterConfig {
  readonly provider: string
  /** Base URL; `/chat/completions` is appended. */
  readonly baseURL: string
  readonly key: ApiKeySource
  /** Extra request headers (OpenRouter attribution, proxies). */
  readonly headers?: Readonly<Record<string, string>>
  /** Model facts by exact model name; unknown names pass through with no defaults. */
  readonly models: Readonly<Record<string, ModelInfo>>
  readonly dialect: ChatCompletionsDialect
  readonly idleTimeoutMs?: number
  readonly responseTimeoutMs?: number
  readonly fetch?: typeof fetch
}

/**
 * Builds a Chat Completions adapter: POST `{baseURL}/chat/completions` with `stream: true`, SSE translated into
 * stream chunks, every failure reported in-band as a `finish` (`error`, or `aborted` when the caller cancelled).
 */
export function createChatCompletionsAdapter(config: ChatCompletionsAdapterConfig): LlmAdapter {
  return {
    provider: config.provider,
    resolveModel: (model) => (Object.hasOwn(config.models, model) ? config.models[model] : undefined),
    stream: (request) => streamChatCompletions(config, request),
  }
}

async function* streamChatCompletions(config: ChatCompletionsAdapterConfig, request: GenerateOptions): AsyncGenerator<StreamChunk> {
  const key = resolveApiKey(config.key)
  if (key === undefined && config.key.required) {
    yield missingKeyFinish(config.provider, config.key.env)
    return
  }
  const secrets = key !== undefined ? [key] : []
  const outputMode = (Object.hasOwn(config.models, request.model) ? config.models[request.model]?.structuredOutput : undefined) ?? config.dialect.outputMode ?? 'json-schema'
  let body: string
  try {
    body = JSON.stringify(chatCompletionsBody(request, config.dialect, outputMode))
  } catch (error) {
    yield failureFinish(normalizeLlmFailure(error), request.signal)
    return
  }
  yield* streamTranslatedEvents(
    {
      provider: config.provider,
      url: joinUrl(config.baseURL, 'chat/completions'),
      headers: { ...config.headers, ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) },
      body,
      secrets,
      ...(request.signal !== undefined ? { signal: request.signal } : {}),
      ...(config.idleTimeoutMs !== undefined ? { idleTimeoutMs: config.idleTimeoutMs } : {}),
      ...(config.responseTimeoutMs !== undefined ? { responseTimeoutMs: config.responseTimeoutMs } : {}),
      ...(config.fetch !== undefined ? { fetch: config.fetch } : {}),
    },
    // JSON mode may answer with empty content (DeepSeek documents it): a failure to retry, not an answer to repair.
    (requestId) => new ChatCompletionsTranslator(config.provider, secrets, requestId, { requireText: request.output !== undefined && outputMode === 'json-object' }),
  )
}
