import { HarnessError } from '../errors/harness-error.js'
import type { LlmFailure } from './types.js'

/** Failure codes adapters and the runtime use. Providers may add others (e.g. `CONTENT_FILTER`). */
export const LlmFailureCode = {
  RATE_LIMIT: 'RATE_LIMIT',
  SERVER: 'SERVER',
  TIMEOUT: 'TIMEOUT',
  TRANSPORT: 'TRANSPORT',
  EMPTY_RESPONSE: 'EMPTY_RESPONSE',
  CONTEXT_WINDOW_EXCEEDED: 'CONTEXT_WINDOW_EXCEEDED',
  AUTH: 'AUTH',
  BAD_REQUEST: 'BAD_REQUEST',
  INSUFFICIENT_BALANCE: 'INSUFFICIENT_BALANCE',
  MALFORMED_RESPONSE: 'MALFORMED_RESPONSE',
  NO_ADAPTER: 'NO_ADAPTER',
  ABORTED: 'ABORTED',
  UNKNOWN: 'UNKNOWN',
} as const

/** Codes the retry plugin retries by default. */
export const RETRYABLE_CODES: readonly string[] = Object.freeze(['RATE_LIMIT', 'SERVER', 'TIMEOUT', 'TRANSPORT', 'EMPTY_RESPONSE'])

/** Constructor input of {@link LlmError}: the fields of an {@link LlmFailure}. */
export type LlmErrorInit = LlmFailure

/**
 * A model request failure with a frozen, serialisable `failure` (what `turn/end {error}` records).
 * @example
 * ```ts
 * throw new LlmError({ message: 'rate limited', code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 2000 })
 * ```
 */
export class LlmError extends HarnessError {
  /** The structured failure (frozen). */
  readonly failure: LlmFailure

  /** @param init - message and code are required; the rest is validated (status 100–599, positive retry-after). */
  constructor(init: LlmErrorInit, options?: { cause?: unknown }) {
    const failure = validateFailure(init)
    super(failure.message, failure.code, options)
    this.failure = failure
  }
}

function validateFailure(init: LlmFailure): LlmFailure {
  const message = typeof init.message === 'string' && init.message !== '' ? init.message : 'LLM request failed'
  const code = typeof init.code === 'string' && init.code !== '' ? init.code : 'UNKNOWN'
  const out: { -readonly [K in keyof LlmFailure]: LlmFailure[K] } = { message, code }
  if (Number.isInteger(init.status) && (init.status as number) >= 100 && (init.status as number) <= 599) out.status = init.status
  const retry = init.providerRetryAfterMs
  if (typeof retry === 'number' && Number.isFinite(retry) && retry > 0) out.providerRetryAfterMs = retry
  if (typeof init.requestId === 'string' && init.requestId !== '') out.requestId = init.requestId
  return Object.freeze(out)
}

/** True when `value` has the exact shape of an {@link LlmFailure}. */
export function isLlmFailure(value: unknown): value is LlmFailure {
  if (typeof value !== 'object' || value === null) return false
  const v = value as Record<string, unknown>
  return typeof v.message === 'string' && v.message !== '' && typeof v.code === 'string' && v.code !== ''
}

/**
 * Turns anything thrown into an {@link LlmFailure}. An error's own `failure` is trusted only when it is valid
 * and agrees with the error's `code` (copies across realms or packages); third-party errors become `UNKNOWN`.
 */
export function normalizeLlmFailure(thrown: unknown): LlmFailure {
  if (thrown instanceof Error) {
    const own = thrown as Error & { failure?: unknown; code?: unknown }
    if (isLlmFailure(own.failure) && own.failure.code === own.code) return validateFailure(own.failure)
    const code = thrown instanceof HarnessError ? thrown.code : 'UNKNOWN'
    return validateFailure({ message: thrown.message || 'LLM adapter failed', code })
  }
  let text: string
  try {
    text = String(thrown)
  } catch {
    text = 'LLM adapter failed'
  }
  return validateFailure({ message: text || 'LLM adapter failed', code: 'UNKNOWN' })
}
