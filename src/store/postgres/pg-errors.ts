import type pg from 'pg'
import { HarnessError } from '../../errors/harness-error.js'

// SQLSTATEs that mean "this database cannot serve you right now", whatever the statement: too many connections
// (for the server, the database or the role: `CONNECTION LIMIT`), and the server shutting down or starting up.
// Class 08 (connection exception) is matched as a class.
const UNAVAILABLE_STATES = new Set(['53300', '57P01', '57P02', '57P03'])

// Socket errors of a connection attempt or of a connection that died under a query.
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENOTFOUND', 'EAI_AGAIN'])

// What `pg` itself says when a connection ends or cannot be made (it gives these errors no code).
const PG_CONNECTION_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection lost)/

interface ErrorFields {
  readonly code?: unknown
  readonly severity?: unknown
  readonly message?: unknown
}

/**
 * True when `error` says the database could not be reached or would not serve this connection (refused, reset,
 * too many clients, shutting down, starting up, a FATAL that ended the session), as opposed to a statement that
 * failed on its merits. An `AggregateError` (every address of a host refused) counts when its members do.
 */
export function isStoreUnavailable(error: unknown): boolean {
  if (error instanceof AggregateError && error.errors.length > 0 && error.errors.every((e) => isStoreUnavailable(e))) return true
  if (error === null || typeof error !== 'object') return false
  const { code, severity, message } = error as ErrorFields
  if (typeof code === 'string' && (UNAVAILABLE_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code) || SOCKET_CODES.has(code))) return true
  // A FATAL (or PANIC) error ends the server process of the connection: not-accepting, auth, missing database.
  if (severity === 'FATAL' || severity === 'PANIC') return true
  return typeof message === 'string' && PG_CONNECTION_MESSAGES.test(message)
}

/**
 * The `STORE_UNAVAILABLE` error for a failure {@link isStoreUnavailable} recognises, or `error` unchanged. The
 * message names the SQLSTATE or socket code when there is one; it never carries the connection string.
 */
export function storeFailure(error: unknown): unknown {
  if (error instanceof HarnessError || !isStoreUnavailable(error)) return error
  const { code, message } = error as ErrorFields
  const why = typeof message === 'string' && message !== '' ? message : 'the connection failed'
  const tag = typeof code === 'string' ? ` (${/^[0-9A-Z]{5}$/.test(code) ? 'SQLSTATE ' : ''}${code})` : ''
  return new HarnessError(`the PostgreSQL store is unavailable: ${why}${tag}`, 'STORE_UNAVAILABLE', { cause: error })
}

/**
 * A flush that failed: `STORE_UNAVAILABLE` when the database could not be reached, a {@link HarnessError} of the
 * store's own (`LEASE_LOST`, `SESSION_CORRUPT`) as it is, anything else `SESSION_WRITE_FAILED` like the file stores.
 */
export function writeFailure(sessionId: string, error: unknown): unknown {
  const mapped = storeFailure(error)
  if (mapped instanceof HarnessError) return mapped
  return new HarnessError(`could not write session '${sessionId}' to PostgreSQL: ${(error as Error).message}`, 'SESSION_WRITE_FAILED', { cause: error })
}

/**
 * The pool as the store uses it: `query` and `connect` reject with `STORE_UNAVAILABLE` (see {@link storeFailure})
 * when the database cannot be reached, so every caller — reads, flushes, leases, approvals, the LISTEN connection —
 * meets one stable code instead of `pg`'s and the socket's. Other errors pass unchanged (the store still reads their
 * SQLSTATE: a duplicate key is a lost lease). Everything else goes to the pool itself, which is not modified.
 */
export function withStoreErrors(pool: pg.Pool): pg.Pool {
  const mapped = (method: (...args: unknown[]) => unknown) =>
    (...args: unknown[]): unknown => {
      // The callback form is left alone (the store never uses it).
      if (typeof args[args.length - 1] === 'function') return method(...args)
      const result = method(...args)
      const thenable = result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function'
      return thenable ? Promise.resolve(result).catch((error: unknown) => Promise.reject(storeFailure(error))) : result
    }
  const query = mapped(pool.query.bind(pool) as (...args: unknown[]) => unknown)
  const connect = mapped(pool.connect.bind(pool) as (...args: unknown[]) => unknown)
  return new Proxy(pool, {
    get(target, key) {
      if (key === 'query') return query
      if (key === 'connect') return connect
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}

/**
 * The store's "schema is ready" promise, attempted again by the next waiter after the database was unavailable:
 * a store created while PostgreSQL was down (or refusing clients) works once it is back, instead of rejecting
 * every call until the process restarts. Other failures (a schema newer than this build) are kept: retrying
 * cannot fix them.
 */
export class Readiness implements PromiseLike<void> {
  readonly #attempt: () => Promise<void>
  #current: Promise<void>
  #retry = false

  /** @param attempt - creates or migrates the schema; called once now, and again after an unavailable failure */
  constructor(attempt: () => Promise<void>) {
    this.#attempt = attempt
    this.#current = this.#start()
  }

  /** Waits for the current attempt (a fresh one when the last failed for want of a database). */
  then<A = void, B = never>(onFulfilled?: ((value: void) => A | PromiseLike<A>) | null, onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null): Promise<A | B> {
    if (this.#retry) this.#current = this.#start()
    return this.#current.then(onFulfilled, onRejected)
  }

  #start(): Promise<void> {
    this.#retry = false
    const attempt = this.#attempt().catch((error: unknown) => {
      const mapped = storeFailure(error)
      this.#retry = mapped instanceof HarnessError && mapped.code === 'STORE_UNAVAILABLE'
      throw mapped
    })
    // Nobody may be waiting yet: the failure is someone's only once they wait.
    attempt.catch(() => undefined)
    return attempt
  }
}
