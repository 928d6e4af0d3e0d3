import { HarnessError, errorChain } from '../errors/harness-error.js'
import { LlmError } from '../llm/llm-error.js'
import type { LlmFailure } from '../llm/types.js'
import type { CancelCause } from '../session/events.js'

/** The durable failure of a turn: an LlmError's failure verbatim, anything else UNKNOWN with its chain. */
export function failureOf(error: unknown): LlmFailure {
  if (error instanceof LlmError) return error.failure
  const code = error instanceof HarnessError ? error.code : 'UNKNOWN'
  return { message: errorChain(error), code }
}

/** The cause recorded for an aborted turn, read from its signal's reason (a user cancel when unrecognised). */
export function cancelCauseOf(reason: unknown): CancelCause {
  const r = reason as { kind?: unknown; reason?: unknown } | undefined
  switch (r?.kind) {
    case 'user':
    case 'parent':
    case 'disposed':
      return { kind: r.kind }
    case 'hook':
      return { kind: 'hook', reason: typeof r.reason === 'string' ? r.reason : 'cancelled by a hook' }
    default:
      return { kind: 'user' }
  }
}

/**
 * What a flush of `writer` failed with — a synchronous throw included, and never `undefined` for a failure —
 * or `undefined` once it resolved (the turn-end flush: docs/stores.md, "When a write fails").
 */
export async function flushFailure(writer: { flush(): Promise<void> }): Promise<unknown> {
  try {
    await writer.flush()
    return undefined
  } catch (error) {
    return error ?? new Error('the flush failed without a reason')
  }
}
