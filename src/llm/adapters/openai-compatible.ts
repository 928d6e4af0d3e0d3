import type { GenerateOptions, LlmAdapter, ModelInfo } from '../types.js'
import type { ReasoningParams } from './chat-completions-request.js'
import { createChatCompletionsAdapter } from './chat-completions.js'

/** Known differences between Chat Completions servers; every field has a sensible default. */
export interface ChatCompletionsQuirks {
  /**
   * Field for the output cap. Default `max_completion_tokens` for provider `openai` (its newer models reject
   * `max_tokens`), `max_tokens` elsewhere (vLLM, llama.cpp, Ollama, OpenRouter).
   */
  readonly maxTokensField?: 'max_tokens' | 'max_completion_tokens'
  /**
   * Send assistant reasoning back in history under this field (`reasoning_content` for DeepSeek-style servers
   * that require it, `reasoning` for some vLLM builds), or `false` (default) to leave it out.
   */
  readonly sendReasoningAs?: 'reasoning_content' | 'reasoning' | false
  /** Ask for a usage chunk with `stream_options.include_usage` (default true; turn off for servers that reject it). */
  readonly streamUsage?: boolean
  /** Send `reasoningEffort` as the `reasoning_effort` field (default true). */
  readonly sendReasoningEffort?: boolean
}

/** Options of {@link openaiCompatibleAdapter}. */
export interface OpenaiCompatibleAdapterOptions {
  /** Route name requests select it by (`openai`, `vllm`, `ollama`, `openrouter`, …). */
  readonly provider: string
  /** Base URL including any version segment, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:11434/v1`. */
  readonly baseURL: string
  /** API key; optional for local servers. For provider `openai`, `OPENAI_API_KEY` is read when absent. */
  readonly apiKey?: string
  /** Model facts by exact model name (context window, default max tokens, reasoning efforts). */
  readonly models?: Readonly<Record<string, ModelInfo>>
  /** Extra request headers (e.g. OpenRouter's `HTTP-Referer`). */
  readonly headers?: Readonly<Record<string, string>>
  readonly quirks?: ChatCompletionsQuirks
  /** Idle-stream watchdog in ms (default 300000). */
  readonly idleTimeoutMs?: number
  /** Longest wait for the HTTP response before `TIMEOUT` (default 10000; never more than the idle timeout). */
  readonly responseTimeoutMs?: number
  /** `fetch` implementation (tests); the global one by default. */
  readonly fetch?: typeof fetch
}

/**
 * An adapter for any OpenAI Chat Completions endpoint (OpenAI, vLLM, llama.cpp server, Ollama, OpenRouter…).
 * Streams with usage when the server supports it and copes with what servers leave out: no usage chunk (no
 * `usage` chunk is emitted), tool calls without ids (`call-<index>`), reasoning under `reasoning_content` or
 * `reasoning`, no `[DONE]` after the finish reason. The key is optional (local servers get no Authorization
 * header); only provider `openai` falls back to `OPENAI_API_KEY`. Without any key no Authorization header is
 * sent, and a server that needs one answers 401 (`AUTH`).
 *
 * @example
 * ```ts
 * const local = openaiCompatibleAdapter({ provider: 'ollama', baseURL: 'http://127.0.0.1:11434/v1',
 *   models: { 'qwen3:8b': { contextWindow: 40_960 } } })
 * ```
 */
export function openaiCompatibleAdapter(options: OpenaiCompatibleAdapterOptions): LlmAdapter {
  const quirks = options.quirks ?? {}
  const isOpenai = options.provider === 'openai'
  const sendEffort = quirks.sendReasoningEffort ?? true
  const reasoningParams = (request: GenerateOptions): ReasoningParams =>
    sendEffort && request.reasoningEffort !== undefined ? { fields: { reasoning_effort: request.reasoningEffort }, temperatureApplies: true } : { fields: {}, temperatureApplies: true }
  return createChatCompletionsAdapter({
    provider: options.provider,
    baseURL: options.baseURL,
    key: {
      ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}),
      ...(isOpenai ? { env: 'OPENAI_API_KEY' } : {}),
      // Optional even for `openai`: the CLI points that route at local servers too; a real endpoint answers 401.
      required: false,
    },
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
    models: options.models ?? {},
    dialect: {
      maxTokensField: quirks.maxTokensField ?? (isOpenai ? 'max_completion_tokens' : 'max_tokens'),
      reasoningHistoryField: quirks.sendReasoningAs ?? false,
      streamUsage: quirks.streamUsage ?? true,
      reasoningParams,
      // A model whose server lacks `json_schema` says so in its table entry (`structuredOutput`).
      outputMode: 'json-schema',
    },
    ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
    ...(options.responseTimeoutMs !== undefined ? { responseTimeoutMs: options.responseTimeoutMs } : {}),
    ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
  })
}
