import type { LlmFailure } from '../types.js'

/**
 * What a provider told us about a failure: the HTTP status (absent for in-stream `error` events) and the
 * fields of its JSON error object, which differ per provider (`error.type` on Anthropic, `error.code` on
 * OpenAI, both on DeepSeek).
 */
export interface ProviderErrorDetail {
  readonly status?: number
  readonly type?: string
  readonly code?: string
  readonly message?: string
}

/**
 * Context-overflow wording of DeepSeek/OpenAI/vLLM ("maximum context length is N tokens"), Anthropic ("prompt
 * is too long", "input length and `max_tokens` exceed context limit") and llama.cpp ("exceeds the available
 * context size"). Each pattern ties the excess to the context explicitly, so ordinary validation errors such
 * as "max_tokens must be ≤ 8192" stay BAD_REQUEST.
 */
const CONTEXT_OVERFLOW_PATTERNS: readonly RegExp[] = [
  /maximum context length is \d+/i,
  /\bcontext[_ ]length[_ ]exceeded\b/i,
  /\bprompt is too long\b/i,
  /input length and `?max_tokens`? exceed context limit/i,
  /exceeds? the (available |maximum )?context (size|window|length)/i,
  /\bexceed_context_size/i,
  /\bcontext window (is )?exceeded\b/i,
]

/** Wording of an exhausted balance, quota or spend cap (terminal: retrying cannot help). */
const BALANCE_PATTERNS: readonly RegExp[] = [
  /insufficient[ _](balance|quota|credits?|funds)/i,
  /credit balance is too low/i,
  /\benforced_spend_limit_reached\b/i,
  /\bbilling_error\b/i,
]

/** True when the provider's code, type and message together describe a prompt that overflows the context. */
export function isContextOverflow(detail: ProviderErrorDetail): boolean {
  const text = [detail.code, detail.type, detail.message].filter((s) => s !== undefined).join(' ')
  return CONTEXT_OVERFLOW_PATTERNS.some((re) => re.test(text))
}

function isBalanceExhausted(detail: ProviderErrorDetail): boolean {
  const text = [detail.code, detail.type, detail.message].filter((s) => s !== undefined).join(' ')
  return BALANCE_PATTERNS.some((re) => re.test(text))
}

/**
 * Classifies a provider failure into an {@link LlmFailure} code. Order matters: an exhausted balance answered
 * with 429 (OpenAI `insufficient_quota`, Anthropic spend caps) is `INSUFFICIENT_BALANCE`, not a retryable
 * `RATE_LIMIT`; an overflow answered with 400 or 413 is `CONTEXT_WINDOW_EXCEEDED`.
 */
export function classifyProviderError(detail: ProviderErrorDetail): string {
  const { status, type } = detail
  if (status === 401 || status === 403 || type === 'authentication_error' || type === 'permission_error') return 'AUTH'
  if (status === 402 || isBalanceExhausted(detail)) return 'INSUFFICIENT_BALANCE'
  if (status === 429 || type === 'rate_limit_error') return 'RATE_LIMIT'
  if (isContextOverflow(detail)) return 'CONTEXT_WINDOW_EXCEEDED'
  if (status === 529 || type === 'overloaded_error' || type === 'api_error') return 'SERVER'
  if (status === 408 || type === 'timeout_error') return 'TIMEOUT'
  if (status !== undefined && status >= 500) return 'SERVER'
  if (status === 400 || status === 404 || status === 413 || status === 422) return 'BAD_REQUEST'
  if (type === 'invalid_request_error' || type === 'not_found_error' || type === 'request_too_large') return 'BAD_REQUEST'
  return status !== undefined ? `HTTP_${status}` : 'UNKNOWN'
}

/**
 * Milliseconds the provider asks us to wait, from `retry-after-ms` (OpenAI-style, milliseconds) or `Retry-After`
 * (seconds or an HTTP date). We would use a library for this, but no pinned dependency parses `Retry-After`,
 * so these few lines use `Date.parse`. Non-positive or unparsable values are dropped.
 */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | undefined {
  const positive = (ms: number): number | undefined => (Number.isFinite(ms) && ms > 0 ? Math.ceil(ms) : undefined)
  const ms = headers.get('retry-after-ms')?.trim()
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return positive(Number(ms))
  const value = headers.get('retry-after')?.trim()
  if (value === undefined || value === '') return undefined
  if (/^\d+(\.\d+)?$/.test(value)) return positive(Number(value) * 1000)
  const date = Date.parse(value)
  return Number.isNaN(date) ? undefined : positive(date - now)
}

/** The provider's request id from the response headers (`x-request-id`, Anthropic's `request-id`). */
export function requestIdFrom(headers: Headers): string | undefined {
  const id = headers.get('x-request-id') ?? headers.get('request-id')
  return id !== null && id.trim() !== '' ? id.trim() : undefined
}

/**
 * Replaces every occurrence of a secret with `[redacted]`. Providers echo parts of keys in auth errors, and a
 * key must never appear in an error message (docs/adapters.md), so every provider-authored text passes through
 * here.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of secrets) {
    if (secret.length >= 4) out = out.split(secret).join('[redacted]')
  }
  return out
}

/** Reads `{error: {type, code, message}}` (or `{type, message}` / a bare string) out of a provider error body. */
export function providerErrorFields(body: unknown): { type?: string; code?: string; message?: string } {
  if (typeof body !== 'object' || body === null) return {}
  const record = body as Record<string, unknown>
  const inner = typeof record.error === 'object' && record.error !== null ? (record.error as Record<string, unknown>) : record
  const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined)
  const details = typeof inner.details === 'object' && inner.details !== null ? (inner.details as Record<string, unknown>) : undefined
  // Anthropic's spend-cap 429 says so only in error.details.error_code.
  const code = str(inner.code) ?? str(details?.error_code)
  const message = str(inner.message) ?? (typeof record.error === 'string' ? record.error : undefined)
  return {
    ...(str(inner.type) !== undefined ? { type: str(inner.type) } : {}),
    ...(code !== undefined ? { code } : {}),
    ...(message !== undefined ? { message } : {}),
  }
}

/** Facts for {@link failureFromHttpResponse}. */
export interface HttpFailureInput {
  /** Route name used in the message (`deepseek`, `anthropic`, …). */
  readonly provider: string
  readonly status: number
  readonly headers: Headers
  /** The response body as text (JSON error object, HTML from a proxy, or empty). */
  readonly bodyText: string
  /** Values that must never appear in the message (the API key). */
  readonly secrets: readonly string[]
}

/**
 * Maps a non-2xx response to an {@link LlmFailure}: 401/403 `AUTH`, 402 `INSUFFICIENT_BALANCE`, 400/413/422
 * `BAD_REQUEST` or `CONTEXT_WINDOW_EXCEEDED`, 429 `RATE_LIMIT` (with `providerRetryAfterMs`), 5xx/529 `SERVER`.
 * The message carries the provider's own error text, with secrets redacted.
 */
export function failureFromHttpResponse(input: HttpFailureInput): LlmFailure {
  let parsed: unknown
  try {
    parsed = JSON.parse(input.bodyText)
  } catch {
    parsed = undefined
  }
  const fields = providerErrorFields(parsed)
  const code = classifyProviderError({ status: input.status, ...fields })
  const snippet = fields.message ?? input.bodyText.trim().slice(0, 300)
  const text = `${input.provider} answered HTTP ${input.status}${snippet !== '' ? `: ${snippet}` : ''}`
  const retryAfter = retryAfterMs(input.headers)
  const requestId = requestIdFrom(input.headers)
  return {
    message: redactSecrets(text, input.secrets),
    code,
    status: input.status,
    ...(retryAfter !== undefined ? { providerRetryAfterMs: retryAfter } : {}),
    ...(requestId !== undefined ? { requestId } : {}),
  }
}

/** Maps an error object that arrived inside an otherwise healthy stream (Anthropic `error` event, OpenRouter). */
export function failureFromStreamError(provider: string, body: unknown, secrets: readonly string[], requestId?: string): LlmFailure {
  const fields = providerErrorFields(body)
  const code = classifyProviderError(fields)
  const text = `${provider} reported an error mid-stream${fields.message !== undefined ? `: ${fields.message}` : ''}`
  return { message: redactSecrets(text, secrets), code, ...(requestId !== undefined ? { requestId } : {}) }
}
