import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { LlmError } from '../llm-error.js'
import { failureFromHttpResponse, redactSecrets, requestIdFrom } from './provider-failure.js'
import { LEDGERLOOP_USER_AGENT } from './user-agent.js'

/** Default idle-stream watchdog: five minutes without a byte ends the attempt with `TIMEOUT`. */
export const DEFAULT_IDLE_TIMEOUT_MS = 300_000

/**
 * Default response watchdog: a server that has not begun to answer (no HTTP response) within ten seconds is
 * treated as down. Providers send their response headers at once and then stream (DeepSeek keeps a queued
 * request alive with `: keep-alive` comments), so this separates a dead endpoint, which should fail fast, from a
 * slow model, which the idle watchdog lets stream.
 */
export const DEFAULT_RESPONSE_TIMEOUT_MS = 10_000

/** Largest error body we read to build a failure message (a proxy's HTML page can be large). */
const MAX_ERROR_BODY_CHARS = 64 * 1024

/** One POST whose answer is a `text/event-stream`. */
export interface EventStreamRequest {
  /** Route name, used in failure messages. */
  readonly provider: string
  readonly url: string
  /** Request headers; `user-agent`, `accept` and `content-type` are added. */
  readonly headers: Readonly<Record<string, string>>
  /** The JSON request body, already serialised. */
  readonly body: string
  /** Caller cancellation: aborting closes the socket and ends the stream with `ABORTED`. */
  readonly signal?: AbortSignal
  /** Longest silence (no byte, comments included) before `TIMEOUT`; default {@link DEFAULT_IDLE_TIMEOUT_MS}. */
  readonly idleTimeoutMs?: number
  /**
   * Longest wait for the HTTP response (its status and headers) before `TIMEOUT`; default
   * {@link DEFAULT_RESPONSE_TIMEOUT_MS}, never longer than the idle timeout.
   */
  readonly responseTimeoutMs?: number
  /** Values that must never appear in a failure message (the API key). */
  readonly secrets: readonly string[]
  /** `fetch` to use; the global one by default (injectable for tests). */
  readonly fetch?: typeof fetch
}

/** One server-sent event: its `event:` name (if any) and its `data:` text. */
export interface ServerSentEvent {
  readonly event?: string
  readonly data: string
}

/** What {@link openEventStream} returns: the response's request id and the event iterator. */
export interface EventStream {
  /** From `x-request-id` / `request-id`, when the provider sent one. */
  readonly requestId?: string
  /** Events in order. Throws {@link LlmError} `TIMEOUT`, `ABORTED` or `TRANSPORT`; ends at EOF. */
  readonly events: AsyncGenerator<ServerSentEvent, void, undefined>
}

/**
 * The watchdog and cancellation shared by the request and its body: one controller aborts `fetch` (which closes
 * the socket), fired either by the caller's signal or by the idle timer. The first cause wins, so a caller abort
 * that races the timer is still reported as `ABORTED`.
 */
class AttemptControl {
  readonly controller = new AbortController()
  #cause: 'caller' | 'idle' | 'no-response' | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  readonly #idleMs: number
  readonly #responseMs: number
  readonly #callerSignal: AbortSignal | undefined
  readonly #onCallerAbort = (): void => this.#abort('caller')

  constructor(idleMs: number, responseMs: number, callerSignal: AbortSignal | undefined) {
    this.#idleMs = idleMs
    this.#responseMs = Math.min(responseMs, idleMs)
    this.#callerSignal = callerSignal
    callerSignal?.addEventListener('abort', this.#onCallerAbort, { once: true })
    if (callerSignal?.aborted === true) this.#abort('caller')
  }

  /** (Re)starts the idle timer: called whenever bytes arrive and whenever we wait on the network again. */
  arm(): void {
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => this.#abort('idle'), this.#idleMs)
  }

  /** Starts the response timer: armed while the request waits for the server's status and headers. */
  armResponse(): void {
    clearTimeout(this.#timer)
    this.#timer = setTimeout(() => this.#abort('no-response'), this.#responseMs)
  }

  /** Stops the idle timer while the consumer, not the network, holds us up. */
  pause(): void {
    clearTimeout(this.#timer)
  }

  /** Closes the connection (idempotent) and detaches from the caller's signal. */
  release(): void {
    this.pause()
    this.#callerSignal?.removeEventListener('abort', this.#onCallerAbort)
    if (!this.controller.signal.aborted) this.controller.abort()
  }

  /** The failure to report for a network error, naming the cause when we caused it ourselves. */
  failure(provider: string, what: string, error: unknown, secrets: readonly string[]): LlmError {
    if (this.#cause === 'caller') return new LlmError({ message: `${provider} request aborted by the caller`, code: 'ABORTED' }, { cause: error })
    if (this.#cause === 'no-response') {
      return new LlmError({ message: `${provider} sent no response within ${this.#responseMs} ms (response watchdog): ${what}`, code: 'TIMEOUT' }, { cause: error })
    }
    if (this.#cause === 'idle') {
      return new LlmError({ message: `${provider} stream was idle for ${this.#idleMs} ms (idle watchdog)`, code: 'TIMEOUT' }, { cause: error })
    }
    const detail = describeNetworkError(error)
    return new LlmError({ message: redactSecrets(`${provider} ${what} failed: ${detail}`, secrets), code: 'TRANSPORT' }, { cause: error })
  }

  get aborted(): boolean {
    return this.#cause !== undefined
  }

  #abort(cause: 'caller' | 'idle' | 'no-response'): void {
    this.#cause ??= cause
    clearTimeout(this.#timer)
    if (!this.controller.signal.aborted) this.controller.abort()
  }
}

/** An HTML error page shown by its title (or its text), so a proxy's page does not flood the message. */
function readableBody(text: string): string {
  if (!/^\s*(<!doctype html|<html)/i.test(text)) return text
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(text)?.[1]?.trim()
  const plain = text.replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ').replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim()
  return `HTML page: ${title !== undefined && title !== '' ? title : plain.slice(0, 120)}`
}

/** Node's fetch wraps the useful reason (`ECONNREFUSED`, `other side closed`) in `cause`. */
function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause
  if (cause instanceof Error && cause.message !== '' && cause.message !== error.message) return `${error.message} (${cause.message})`
  return error.message
}

/**
 * POSTs `request` and, on a 2xx answer, returns its server-sent events. A non-2xx answer throws the mapped
 * {@link LlmError} (see `failureFromHttpResponse`); a connection failure throws `TRANSPORT`; the watchdog and
 * the caller's signal cover the whole attempt, headers and body alike. Framing is `eventsource-parser`'s (never
 * hand-written here); bytes are decoded with one streaming `TextDecoder` call per network chunk, so a UTF-8
 * character split across chunks survives. When the consumer stops early, the socket is closed.
 */
export async function openEventStream(request: EventStreamRequest): Promise<EventStream> {
  const control = new AttemptControl(request.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, request.responseTimeoutMs ?? DEFAULT_RESPONSE_TIMEOUT_MS, request.signal)
  const doFetch = request.fetch ?? fetch
  let response: Response
  try {
    if (control.aborted) throw new Error('aborted before the request was sent')
    control.armResponse()
    response = await doFetch(request.url, {
      method: 'POST',
      headers: {
        ...request.headers,
        'content-type': 'application/json',
        accept: 'text/event-stream',
        'user-agent': LEDGERLOOP_USER_AGENT,
      },
      body: request.body,
      signal: control.controller.signal,
    })
  } catch (error) {
    control.release()
    throw control.failure(request.provider, `request to ${request.url}`, error, request.secrets)
  }
  // The server answered: from here on only silence in the body counts.
  control.arm()
  const requestId = requestIdFrom(response.headers)
  if (!response.ok) {
    let bodyText = ''
    try {
      bodyText = (await response.text()).slice(0, MAX_ERROR_BODY_CHARS)
    } catch (error) {
      if (control.aborted) {
        control.release()
        throw control.failure(request.provider, 'reading the error body', error, request.secrets)
      }
    }
    control.release()
    const failure = failureFromHttpResponse({ provider: request.provider, status: response.status, headers: response.headers, bodyText: readableBody(bodyText), secrets: request.secrets })
    // A 404 nearly always means the base URL is wrong (a missing `/v1`, a typo), not that the request was.
    throw new LlmError(response.status === 404 ? { ...failure, message: `${failure.message} — no endpoint at ${request.url}; check the base URL` } : failure)
  }
  const contentType = response.headers.get('content-type') ?? ''
  if (!/^text\/event-stream\b/i.test(contentType.trim()) && contentType.trim() !== '') {
    // A server that answers a streaming request with a JSON document or a web page is not a streaming chat
    // endpoint at this URL (often a base URL without `/v1`): retrying cannot help, so this is not retryable.
    let bodyText = ''
    try {
      bodyText = (await response.text()).slice(0, MAX_ERROR_BODY_CHARS)
    } catch {
      bodyText = ''
    }
    control.release()
    const snippet = readableBody(bodyText).trim().slice(0, 200)
    throw new LlmError({
      message: redactSecrets(
        `${request.provider} answered a streaming request to ${request.url} with ${contentType.split(';')[0]} instead of an event stream${snippet !== '' ? ` (${snippet})` : ''}; check the base URL`,
        request.secrets,
      ),
      code: 'NOT_STREAMING',
      status: response.status,
      ...(requestId !== undefined ? { requestId } : {}),
    })
  }
  if (response.body === null) {
    control.release()
    throw new LlmError({ message: `${request.provider} answered ${response.status} with no body`, code: 'EMPTY_RESPONSE', ...(requestId ? { requestId } : {}) })
  }
  return { ...(requestId !== undefined ? { requestId } : {}), events: readEvents(response.body, control, request) }
}

async function* readEvents(body: ReadableStream<Uint8Array>, control: AttemptControl, request: EventStreamRequest): AsyncGenerator<ServerSentEvent, void, undefined> {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  const pending: ServerSentEvent[] = []
  const parser = createParser({
    onEvent: (message: EventSourceMessage) => pending.push(message.event !== undefined ? { event: message.event, data: message.data } : { data: message.data }),
    // Comments (`: keep-alive`) only matter as activity, and any received byte already re-arms the watchdog.
  })
  let finished = false
  try {
    for (;;) {
      control.arm()
      let result: Awaited<ReturnType<typeof reader.read>>
      try {
        result = await reader.read()
      } catch (error) {
        throw control.failure(request.provider, 'stream', error, request.secrets)
      }
      control.pause()
      if (result.done) {
        const tail = decoder.decode()
        if (tail !== '') parser.feed(tail)
        finished = true
        yield* pending.splice(0)
        return
      }
      parser.feed(decoder.decode(result.value, { stream: true }))
      // Hand the events over with the timer paused: a slow consumer is not an idle provider.
      for (const event of pending.splice(0)) yield event
    }
  } finally {
    if (!finished) await reader.cancel().catch(() => undefined)
    control.release()
  }
}
