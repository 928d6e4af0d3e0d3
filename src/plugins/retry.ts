import { HarnessError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import { DEFAULT_RETRY_POLICY } from '../llm/registry.js'
import type { LedgerHooks } from '../loop/hook-types.js'

/** Options of {@link retryPlugin}. Unset fields come from the adapter's retry policy. */
export interface RetryPluginOptions {
  /** Attempts in all, the first included (default: the adapter policy's retries + 1, i.e. 6). */
  readonly maxAttempts?: number
  /** Delay before the first retry; doubles each time (default 500 ms). */
  readonly baseDelayMs?: number
  /** Cap on any delay, Retry-After included (default 10 s). */
  readonly maxDelayMs?: number
  /** 0..1: share of each delay drawn at random (default 0.1). */
  readonly jitterRatio?: number
  /** Codes worth retrying (default RATE_LIMIT, SERVER, TIMEOUT, TRANSPORT, EMPTY_RESPONSE). */
  readonly retryableCodes?: readonly string[]
  /** Random source in [0,1) (tests pin it). */
  readonly random?: () => number
}

/** Data of the `llm/retry` event the plugin logs before each wait. */
export interface RetryEventData {
  readonly turn: number
  readonly step: number
  /** The attempt that failed (1 = the first request of this step). */
  readonly attempt: number
  readonly code: string
  readonly message: string
  readonly delayMs: number
  readonly providerRetryAfterMs?: number
}

/**
 * Retries failed model requests inside the same step: retryable codes only, exponential backoff with jitter
 * and a cap, the provider's Retry-After honoured up to the cap, the wait aborted by cancel (cancel wins), an
 * `llm/retry` event logged before each wait, and after the last attempt the failure ends the turn `error`.
 * @example
 * ```ts
 * createHarness({ plugins: [retryPlugin({ maxAttempts: 4, maxDelayMs: 20_000 })] })
 * ```
 */
export function retryPlugin(options: RetryPluginOptions = {}): Plugin<HookRegistrar<LedgerHooks>> {
  for (const key of ['maxAttempts', 'baseDelayMs', 'maxDelayMs'] as const) {
    const v = options[key]
    if (v !== undefined && (!Number.isFinite(v) || v < (key === 'maxAttempts' ? 1 : 0))) {
      throw new HarnessError(`retryPlugin: ${key} must be a ${key === 'maxAttempts' ? 'number ≥ 1' : 'non-negative number'}`, 'INVALID_CONFIG')
    }
  }
  if (options.jitterRatio !== undefined && !(options.jitterRatio >= 0 && options.jitterRatio <= 1)) {
    throw new HarnessError('retryPlugin: jitterRatio must be between 0 and 1', 'INVALID_CONFIG')
  }
  const random = options.random ?? Math.random
  return {
    name: 'ledgerloop/retry',
    setup(hooks) {
      return hooks.on('agent/request-error', async (payload, next) => {
        const policy = payload.retryPolicy ?? DEFAULT_RETRY_POLICY
        const codes = options.retryableCodes ?? policy.retryableCodes
        const maxAttempts = options.maxAttempts ?? policy.maxRetries + 1
        const { failure, attempt, signal } = payload
        if (!codes.includes(failure.code) || attempt >= maxAttempts) return next()
        const base = options.baseDelayMs ?? policy.initialDelayMs
        const cap = options.maxDelayMs ?? policy.maxDelayMs
        const jitter = options.jitterRatio ?? policy.jitterRatio
        const backoff = Math.min(cap, base * 2 ** (attempt - 1))
        const jittered = backoff * (1 - jitter) + backoff * jitter * random()
        const delayMs = Math.round(Math.min(cap, Math.max(jittered, failure.providerRetryAfterMs ?? 0)))
        const data: RetryEventData = {
          turn: payload.turn,
          step: payload.step,
          attempt,
          code: failure.code,
          message: failure.message,
          delayMs,
          ...(failure.providerRetryAfterMs !== undefined ? { providerRetryAfterMs: failure.providerRetryAfterMs } : {}),
        }
        payload.agent.session.append('llm/retry', data)
        await abortableSleep(delayMs, signal)
        return { kind: 'retry' }
      })
    },
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
