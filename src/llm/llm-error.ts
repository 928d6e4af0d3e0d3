import { HarnessError } from '../errors/harness-error.js'
import type { LlmFailure } from './types.js'

/** Failure codes adapters and the runtime use. Providers may add others (e.g. `CONTENT_FILTER`). */
export const LlmFailureCode = {
  RATE_LIMIT: 'RATE_LIMIT',
  SERVER: 'SERVER',
  TIMEOUT: 'TIMEOUT',
  TRANSPORT: 'TRANSPORT',
  EMPTY_RESPONSE: 'EMPTY_RESPONSE',
  /** The model declined to answer (OpenAI `refusal`); the refusal text is in the message. Never retried. */
  MODEL_REFUSED: 'MODEL_REFUSED',
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

  /**
   * @param init - `message` and `code` non-empty; `status` an integer 100–599; `providerRetryAfterMs` positive
   *   and finite; `requestId` non-empty. Absent optional fields stay absent.
   * @throws HarnessError `INVALID_LLM_FAILURE` naming the first field that breaks these rules
   */
  constructor(init: LlmErrorInit, options?: { cause?: unknown }) {
    const problem = failureProblem(init)
    if (problem !== undefined) throw new HarnessError(`invalid LlmError: ${problem}`, 'INVALID_LLM_FAILURE')
    const failure = copyFailure(init)
    super(failure.message, failure.code, options)
    this.failure = failure
  }
}

/** What makes `value` an invalid {@link LlmFailure}, or `undefined` when it is valid. */
function failureProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return 'a failure must be an object'
  const v = value as Record<string, unknown>
  if (typeof v.message !== 'string' || v.message === '') return 'message must be a non-empty string'
  if (typeof v.code !== 'string' || v.code === '') return 'code must be a non-empty string'
  if (v.status !== undefined && !(Number.isInteger(v.status) && (v.status as number) >= 100 && (v.status as number) <= 599)) {
    return `status ${String(v.status)} must be an integer from 100 to 599`
  }
  const retry = v.providerRetryAfterMs
  if (retry !== undefined && !(typeof retry === 'number' && Number.isFinite(retry) && retry > 0)) {
    return `providerRetryAfterMs ${String(retry)} must be a positive finite number`
  }
  if (v.requestId !== undefined && (typeof v.requestId !== 'string' || v.requestId === '')) return 'requestId must be a non-empty string'
  return undefined
}

/** A frozen copy of a valid failure holding exactly its known fields. */
function copyFailure(init: LlmFailure): LlmFailure {
  const out: { -readonly [K in keyof LlmFailure]: LlmFailure[K] } = { message: init.message, code: init.code }
  if (init.status !== undefined) out.status = init.status
  if (init.providerRetryAfterMs !== undefined) out.providerRetryAfterMs = init.providerRetryAfterMs
  if (init.requestId !== undefined) out.requestId = init.requestId
  return Object.freeze(out)
}

/** True when `value` is a valid {@link LlmFailure} (the rules the {@link LlmError} constructor enforces). */
export function isLlmFailure(value: unknown): value is LlmFailure {
  try {
    return failureProblem(value) === undefined
  } catch {
    return false
  }
}

const FALLBACK_MESSAGE = 'LLM adapter failed'

/**
 * Turns anything thrown into a frozen {@link LlmFailure}; never throws. An error's own data property `failure`
 * is trusted only when it is valid and its `code` equals the error's own data property `code` (copies across
 * realms or packages); otherwise the result is `{message, code}` with the `HarnessError` code, or `UNKNOWN` for
 * third-party errors and non-Error values (rendered with a hostile-safe `String()`).
 */
export function normalizeLlmFailure(thrown: unknown): LlmFailure {
  try {
    if (thrown instanceof Error) {
      const own = ownData(thrown, 'failure')
      if (isLlmFailure(own) && own.code === ownData(thrown, 'code')) return copyFailure(own)
      const code = thrown instanceof HarnessError && typeof thrown.code === 'string' && thrown.code !== '' ? thrown.code : 'UNKNOWN'
      const message: unknown = thrown.message
      return copyFailure({ message: typeof message === 'string' && message !== '' ? message : FALLBACK_MESSAGE, code })
    }
  } catch {
    // A hostile proxy or getter: fall through to the generic rendering below.
  }
  let text: string
  try {
    text = String(thrown)
  } catch {
    text = FALLBACK_MESSAGE
  }
  return copyFailure({ message: text !== '' ? text : FALLBACK_MESSAGE, code: 'UNKNOWN' })
}

/** The value of an own data property (getters are never run). */
function ownData(target: object, key: string): unknown {
  const desc = Object.getOwnPropertyDescriptor(target, key)
  return desc !== undefined && 'value' in desc ? desc.value : undefined
}

/**
 * A valid failure built from whatever an adapter put in an in-band `finish {error|aborted}`: valid fields are
 * kept, invalid optional fields dropped, a missing message or code replaced (`UNKNOWN`). Never throws.
 */
export function sanitizeLlmFailure(value: unknown): LlmFailure {
  if (isLlmFailure(value)) return copyFailure(value)
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>
  const pick = (key: string): unknown => {
    try {
      return v[key]
    } catch {
      return undefined
    }
  }
  const message = pick('message')
  const code = pick('code')
  const out: { -readonly [K in keyof LlmFailure]: LlmFailure[K] } = {
    message: typeof message === 'string' && message !== '' ? message : FALLBACK_MESSAGE,
    code: typeof code === 'string' && code !== '' ? code : 'UNKNOWN',
  }
  for (const key of ['status', 'providerRetryAfterMs', 'requestId'] as const) {
    const candidate = { message: out.message, code: out.code, [key]: pick(key) }
    if (candidate[key] !== undefined && failureProblem(candidate) === undefined) Object.assign(out, { [key]: candidate[key] })
  }
  return Object.freeze(out)
}
