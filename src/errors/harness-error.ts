/**
 * The base class of every error a ledgerloop user can meet.
 *
 * `code` is the stable value to branch on (`SESSION_LOCKED`, `NO_ADAPTER`, …); the message is for people and
 * may change between versions.
 *
 * @example
 * ```ts
 * try { await harness.resumeAgent(id) } catch (e) {
 *   if (e instanceof HarnessError && e.code === 'SESSION_NOT_FOUND') startFresh()
 * }
 * ```
 */
export class HarnessError extends Error {
  /** Stable, machine-readable error code. */
  readonly code: string

  /**
   * @param message - what went wrong, for a person
   * @param code - the stable code (non-empty)
   * @param options - `cause` is kept as the standard `Error.cause`
   */
  constructor(message: string, code: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.code = code || 'UNKNOWN'
    this.name = new.target.name
  }
}

/** Thrown by the invariant companions when the log or a request breaks a contract (code `INVARIANT`). */
export class InvariantError extends HarnessError {
  /** @param message - which invariant broke, naming seqs where it can */
  constructor(message: string) {
    super(message, 'INVARIANT')
  }
}

/**
 * Renders an error with its `cause` chain and `AggregateError` members, for diagnostics only.
 * Never parse the result; branch on `code` instead.
 */
export function errorChain(value: unknown): string {
  const parts: string[] = []
  const seen = new Set<unknown>()
  let current: unknown = value
  while (current !== undefined && current !== null && !seen.has(current) && parts.length < 16) {
    seen.add(current)
    parts.push(describeOne(current))
    if (current instanceof AggregateError && current.errors.length > 0) {
      parts.push(`[${current.errors.map((e) => describeOne(e)).join('; ')}]`)
    }
    current = current instanceof Error ? current.cause : undefined
  }
  return parts.length > 0 ? parts.join(' <- caused by: ') : describeOne(value)
}

function describeOne(value: unknown): string {
  if (value instanceof Error) {
    const code = (value as { code?: unknown }).code
    const codeText = typeof code === 'string' && code !== '' ? ` [${code}]` : ''
    return `${value.name}${codeText}: ${value.message}`
  }
  try {
    return String(value)
  } catch {
    return '[unprintable value]'
  }
}
