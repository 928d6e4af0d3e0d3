import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'

/** A fresh random access token (URL-safe, 192 bits). */
export function generateToken(): string {
  return randomBytes(24).toString('base64url')
}

/** True for hosts that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

/**
 * True when a `Host` header names this machine's loopback interface: `localhost`, `[::1]` or an address in
 * 127.0.0.0/8, with or without a port. Strict on purpose — a name that merely resolves to 127.0.0.1 today
 * (`localhost.`, `x.localhost`, an attacker's domain) goes through DNS, and DNS is what a rebinding attack controls.
 */
export function isLoopbackHostHeader(header: string | undefined): boolean {
  if (header === undefined) return false
  const match = /^(\[[^\]]*\]|[^:[\]]*)(?::(\d{1,5}))?$/.exec(header.trim().toLowerCase())
  if (match === null) return false
  const name = match[1] as string
  if (name === 'localhost' || name === '[::1]') return true
  const octets = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name)
  return octets !== null && octets.slice(1).every((o) => Number(o) <= 255)
}

/** Why a request was refused, as the API answers it. */
export interface Refusal {
  readonly status: 401 | 403
  readonly code: 'UNAUTHORIZED' | 'FORBIDDEN_ORIGIN' | 'FORBIDDEN_HOST'
  readonly message: string
}

/** Options of {@link AccessGuard}. */
export interface AccessGuardOptions {
  /** The token every API request must carry; `undefined` = no token (loopback only, by explicit choice). */
  readonly token: string | undefined
  /** Origins allowed besides the server's own (a reverse proxy's public origin, e.g. `https://agents.example.com`). */
  readonly allowedOrigins?: readonly string[]
}

/**
 * Decides whether a request may reach the API: a browser request from a foreign `Origin` is refused (a page on
 * another site must not drive agents), and every API request must carry the token as `Authorization: Bearer T`
 * or `?token=T`. Tokens are compared in constant time. Without a token, only requests whose `Host` names the
 * loopback interface are served (see {@link AccessGuard.checkHost}).
 */
export class AccessGuard {
  readonly #token: Buffer | undefined
  readonly #origins: Set<string>

  constructor(options: AccessGuardOptions) {
    this.#token = options.token === undefined ? undefined : digest(options.token)
    this.#origins = new Set((options.allowedOrigins ?? []).map((o) => o.replace(/\/+$/, '').toLowerCase()))
  }

  /**
   * Without a token, a refusal for a `Host` that is not a loopback name or address, else undefined. A page on
   * another site can rebind its own domain to 127.0.0.1: its requests then reach this server with the attacker's
   * name in `Host` and a matching `Origin`, so the origin check alone lets them through. With a token the Host
   * is not checked: a reverse proxy may forward its public name, and the page cannot know the token.
   */
  checkHost(headers: IncomingHttpHeaders): Refusal | undefined {
    if (this.#token !== undefined || isLoopbackHostHeader(headers.host)) return undefined
    const named = headers.host === undefined ? 'no Host header' : `Host ${JSON.stringify(headers.host)}`
    return {
      status: 403,
      code: 'FORBIDDEN_HOST',
      message: `this server runs without a token and only answers requests to a loopback host (127.0.0.1, localhost, [::1]), not ${named}`,
    }
  }

  /** A refusal for a foreign `Origin`, else undefined. The server's own origin is the one the `Host` header names. */
  checkOrigin(headers: IncomingHttpHeaders): Refusal | undefined {
    const origin = headers.origin
    if (origin === undefined) return undefined
    const normalized = origin.toLowerCase()
    const host = headers.host?.toLowerCase()
    if (host !== undefined && (normalized === `http://${host}` || normalized === `https://${host}`)) return undefined
    if (this.#origins.has(normalized)) return undefined
    return { status: 403, code: 'FORBIDDEN_ORIGIN', message: `requests from origin ${origin} are not allowed (serve --allow-origin adds one)` }
  }

  /** A refusal when the request carries no token or the wrong one, else undefined. */
  checkToken(headers: IncomingHttpHeaders, queryToken: string | undefined): Refusal | undefined {
    if (this.#token === undefined) return undefined
    const auth = headers.authorization
    const bearer = auth !== undefined && /^Bearer\s+/i.test(auth) ? auth.replace(/^Bearer\s+/i, '').trim() : undefined
    const given = bearer ?? queryToken
    if (given === undefined || given === '') return { status: 401, code: 'UNAUTHORIZED', message: 'a token is required: Authorization: Bearer TOKEN, or ?token=TOKEN' }
    // Said apart from a missing token: a wrong one is usually a stale URL from before `serve` restarted.
    if (!timingSafeEqual(digest(given), this.#token)) {
      return { status: 401, code: 'UNAUTHORIZED', message: 'the token given is not this server\'s: use the one in the URL serve printed at its start (a restart makes a new one unless --token is set)' }
    }
    return undefined
  }
}

// Equal-length digests let timingSafeEqual compare tokens of any length.
function digest(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}
