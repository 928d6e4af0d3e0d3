import type { JsonValue } from '../../json/lossless.js'
import type { GenerateOptions, LlmAdapter, ModelInfo, ModelPricing } from '../types.js'
import type { ReasoningParams } from './chat-completions-request.js'
import { createChatCompletionsAdapter } from './chat-completions.js'

/** DeepSeek's documented OpenAI-format endpoint. */
export const DEEPSEEK_BASE_URL = 'https://api.deepseek.com'

/**
 * DeepSeek's off-peak rule: half price outside 01:00–04:00 and 06:00–10:00 UTC, and all day on Saturday and
 * Sunday (UTC), per the "Models & Pricing" page.
 */
const DEEPSEEK_OFF_PEAK = Object.freeze({ share: 0.5, peakHoursUtc: Object.freeze(['01:00-04:00', '06:00-10:00']), peakWeekdaysUtc: Object.freeze([1, 2, 3, 4, 5]) })

/**
 * Prices in USD per million tokens at peak hours, from DeepSeek's "Models & Pricing" page as checked on the
 * `asOf` date. Cache hits are priced on their own; `cacheWriteTokens` do not occur on DeepSeek.
 */
const DEEPSEEK_FLASH_PRICING: ModelPricing = Object.freeze({
  currency: 'USD',
  inputPerMTok: 0.3,
  cachedInputPerMTok: 0.006,
  outputPerMTok: 1.2,
  asOf: '2026-11-15',
  offPeak: DEEPSEEK_OFF_PEAK,
})

const DEEPSEEK_PRO_PRICING: ModelPricing = Object.freeze({
  currency: 'USD',
  inputPerMTok: 1.32,
  cachedInputPerMTok: 0.044,
  outputPerMTok: 3.96,
  asOf: '2026-11-15',
  offPeak: DEEPSEEK_OFF_PEAK,
})

/**
 * DeepSeek models we know facts about (from DeepSeek's "Models & Pricing" and "Thinking Mode" pages). Both have a
 * 1M-token context and up to 384K output tokens; thinking mode is on by default at effort `high`.
 *
 * | model | contextWindow | maxOutputTokens | defaultMaxTokens | reasoning efforts (default) |
 * |---|---|---|---|---|
 * | `deepseek-flash` (DeepSeek-V4.1-Flash) | 1,000,000 | 384,000 | 65,536 | `off`, `low`, `high`, `max` (`high`) |
 * | `deepseek-v4-pro` | 1,000,000 | 384,000 | 65,536 | `off`, `high`, `max` (`high`) |
 *
 * `defaultMaxTokens` is ledgerloop's choice (a bounded default output cap), not a provider default; pass
 * `maxTokens` up to 384,000 for longer replies. `deepseek-v4-pro` is offered no `low`, because V4 serves `low` as
 * `high`. Retired names (`deepseek-chat`, `deepseek-reasoner`, `deepseek-v4-flash`) and any other model name
 * pass through unchanged with no defaults. `pricing` holds the published prices (peak, with the off-peak share).
 */
export const DEEPSEEK_MODELS: Readonly<Record<string, ModelInfo>> = Object.freeze({
  'deepseek-flash': Object.freeze({
    contextWindow: 1_000_000,
    maxOutputTokens: 384_000,
    defaultMaxTokens: 65_536,
    reasoningEfforts: Object.freeze(['off', 'low', 'high', 'max']),
    defaultReasoningEffort: 'high',
    pricing: DEEPSEEK_FLASH_PRICING,
  }),
  'deepseek-v4-pro': Object.freeze({
    contextWindow: 1_000_000,
    maxOutputTokens: 384_000,
    defaultMaxTokens: 65_536,
    reasoningEfforts: Object.freeze(['off', 'high', 'max']),
    defaultReasoningEffort: 'high',
    pricing: DEEPSEEK_PRO_PRICING,
  }),
})

/** Options of {@link deepseekAdapter}. */
export interface DeepseekAdapterOptions {
  /** API key; when absent, `DEEPSEEK_API_KEY` is read at request time. */
  readonly apiKey?: string
  /** Endpoint base (default {@link DEEPSEEK_BASE_URL}); `/chat/completions` is appended. */
  readonly baseURL?: string
  /** Model table; replaces {@link DEEPSEEK_MODELS} when given. */
  readonly models?: Readonly<Record<string, ModelInfo>>
  /** Idle-stream watchdog in ms (default 300000). */
  readonly idleTimeoutMs?: number
  /** Longest wait for the HTTP response before `TIMEOUT` (default 10000; never more than the idle timeout). */
  readonly responseTimeoutMs?: number
  /** Extra request headers (a proxy's, a gateway's). */
  readonly headers?: Readonly<Record<string, string>>
  /** `fetch` implementation (tests); the global one by default. */
  readonly fetch?: typeof fetch
}

/**
 * Maps our `reasoningEffort` onto DeepSeek's thinking parameters:
 * - unset → nothing is sent (the API default: thinking on, effort `high`);
 * - `off` (or `none`) → `thinking: {type: 'disabled'}`;
 * - `low` | `high` | `max` → `thinking: {type: 'enabled'}` and `reasoning_effort` with that value;
 *   `minimal` → `low`, `medium` / `xhigh` → `high`, `ultra` → `max` (DeepSeek's own mapping);
 * - anything else is sent as `reasoning_effort` unchanged, for the API to judge.
 * Temperature is left out whenever thinking is explicitly enabled, because thinking mode ignores it.
 */
export function deepseekReasoningParams(request: GenerateOptions): ReasoningParams {
  const effort = request.reasoningEffort
  if (effort === undefined) return { fields: {}, temperatureApplies: true }
  if (effort === 'off' || effort === 'none') return { fields: { thinking: { type: 'disabled' } }, temperatureApplies: true }
  const mapped: Record<string, string> = { minimal: 'low', low: 'low', medium: 'high', high: 'high', xhigh: 'high', max: 'max', ultra: 'max' }
  const fields: Record<string, JsonValue> = { thinking: { type: 'enabled' }, reasoning_effort: mapped[effort] ?? effort }
  return { fields, temperatureApplies: false }
}

/**
 * The DeepSeek adapter (provider `deepseek`): Chat Completions over SSE with thinking mode. Reasoning streams as
 * `reasoning` blocks and is sent back as `reasoning_content` on every assistant turn (DeepSeek answers 400 when a
 * tool-call turn's reasoning is missing from any later request). Usage maps `prompt_cache_hit_tokens` to
 * `cacheReadTokens` and `prompt_cache_miss_tokens` to `inputTokens`. A missing key is reported per request as
 * an `AUTH` failure naming `DEEPSEEK_API_KEY`; construction never fails, so registries work offline.
 *
 * @example
 * ```ts
 * const harness = createHarness({ adapters: [deepseekAdapter()] })
 * const agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-flash' })
 * ```
 */
export function deepseekAdapter(options: DeepseekAdapterOptions = {}): LlmAdapter {
  return createChatCompletionsAdapter({
    provider: 'deepseek',
    baseURL: options.baseURL ?? DEEPSEEK_BASE_URL,
    key: { ...(options.apiKey !== undefined ? { apiKey: options.apiKey } : {}), env: 'DEEPSEEK_API_KEY', required: true },
    models: options.models ?? DEEPSEEK_MODELS,
    dialect: {
      maxTokensField: 'max_tokens',
      reasoningHistoryField: 'reasoning_content',
      streamUsage: true,
      reasoningParams: deepseekReasoningParams,
      // DeepSeek's JSON Output is `json_object` only: the schema goes into the system prompt.
      outputMode: 'json-object',
    },
    ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
    ...(options.responseTimeoutMs !== undefined ? { responseTimeoutMs: options.responseTimeoutMs } : {}),
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
    ...(options.fetch !== undefined ? { fetch: options.fetch } : {}),
  })
}
