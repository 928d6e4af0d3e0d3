import { STATUS_CODES } from 'node:http'
import { HarnessError } from '../errors/harness-error.js'

/** The JSON body of every error answer: `{ error: { code, message } }`. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string }
}

// Harness codes that describe the request, not the server.
const STATUS_BY_CODE: Readonly<Record<string, number>> = {
  SESSION_NOT_FOUND: 404,
  INVALID_SESSION_ID: 404,
  NOT_FOUND: 404,
  SESSION_LOCKED: 409,
  LEASE_LOST: 409,
  OPEN_TURN: 409,
  AGENT_BUSY: 409,
  SESSION_EXISTS: 409,
  SESSION_QUARANTINED: 409,
  INVALID_BOUNDARY: 400,
  INVALID_CONFIG: 400,
  NO_ADAPTER: 400,
  UNSUPPORTED_OPTION: 400,
  INVALID_INPUT: 400,
  INVALID_REQUEST: 400,
  HARNESS_CLOSED: 503,
  // The database (or the server itself) cannot answer right now; the same request may work later.
  STORE_UNAVAILABLE: 503,
  STORE_CLOSED: 503,
  SERVER_CLOSING: 503,
}

// Fastify's own error codes for requests it could not take, by stable code of ours.
const FASTIFY_CODES: Readonly<Record<string, { status: number; code: string }>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'INVALID_JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'INVALID_JSON' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'BODY_TOO_LARGE' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'INVALID_REQUEST' },
  FST_ERR_BAD_URL: { status: 400, code: 'INVALID_URL' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, code: 'URI_TOO_LONG' },
}

// Other 4xx answers Fastify (or a plugin) may give: a code named after the status, never an `FST_ERR_…` name
// (those are Fastify's internals and change between its versions).
const CODE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'BAD_REQUEST',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  408: 'REQUEST_TIMEOUT',
  411: 'LENGTH_REQUIRED',
  413: 'BODY_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  431: 'HEADERS_TOO_LARGE',
}

/** An error body. */
export function errorBody(code: string, message: string): ErrorBody {
  return { error: { code, message } }
}

/** Maps any error a route meets to a status and the error body; unknown failures are 500 without internals. */
export function errorAnswer(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof HarnessError) {
    return { status: STATUS_BY_CODE[error.code] ?? 500, body: errorBody(error.code, error.message) }
  }
  const e = error as { code?: string; statusCode?: number; message?: string; validation?: unknown }
  if (e.validation !== undefined) return { status: 400, body: errorBody('INVALID_REQUEST', e.message ?? 'invalid request') }
  const known = e.code !== undefined ? FASTIFY_CODES[e.code] : undefined
  if (known !== undefined) return { status: known.status, body: errorBody(known.code, e.message ?? known.code) }
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: e.statusCode, body: errorBody(CODE_BY_STATUS[e.statusCode] ?? 'BAD_REQUEST', e.message ?? 'bad request') }
  }
  return { status: 500, body: errorBody('INTERNAL', 'the server failed to answer this request (see its log)') }
}

/** A 404 answer body. */
export function notFound(message: string): ErrorBody {
  return errorBody('NOT_FOUND', message)
}

/**
 * The whole HTTP response for a request Node's HTTP parser refused before any route saw it (a header block over
 * the size limit, a request line that is not HTTP, a header with a forbidden character), in the API's error
 * shape. `undefined` when nothing can be answered: the client already reset the connection.
 */
export function clientErrorResponse(error: { code?: string; message?: string }): string | undefined {
  if (error.code === 'ECONNRESET') return undefined
  const [status, code, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'HEADERS_TOO_LARGE', 'the request headers are larger than this server accepts']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'REQUEST_TIMEOUT', 'the request was not received in time']
        : [400, 'BAD_REQUEST', `the request is not valid HTTP (${error.code ?? 'parse error'})`]
  const body = JSON.stringify(errorBody(code, message))
  // `Connection: close`: after a parse error nothing more on this connection can be read reliably.
  return [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
    'X-Content-Type-Options: nosniff',
    '',
    body,
  ].join('\r\n')
}
