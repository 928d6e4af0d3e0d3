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
  INVALID_BOUNDARY: 400,
  INVALID_CONFIG: 400,
  NO_ADAPTER: 400,
  UNSUPPORTED_OPTION: 400,
  INVALID_INPUT: 400,
  HARNESS_CLOSED: 503,
}

// Fastify's own error codes for bodies it could not take.
const FASTIFY_CODES: Readonly<Record<string, { status: number; code: string }>> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'INVALID_JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'INVALID_JSON' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'BODY_TOO_LARGE' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'INVALID_REQUEST' },
}

/** Maps any error a route meets to a status and the error body; unknown failures are 500 without internals. */
export function errorAnswer(error: unknown): { status: number; body: ErrorBody } {
  if (error instanceof HarnessError) {
    return { status: STATUS_BY_CODE[error.code] ?? 500, body: { error: { code: error.code, message: error.message } } }
  }
  const e = error as { code?: string; statusCode?: number; message?: string; validation?: unknown }
  if (e.validation !== undefined) return { status: 400, body: { error: { code: 'INVALID_REQUEST', message: e.message ?? 'invalid request' } } }
  const known = e.code !== undefined ? FASTIFY_CODES[e.code] : undefined
  if (known !== undefined) return { status: known.status, body: { error: { code: known.code, message: e.message ?? known.code } } }
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500) {
    return { status: e.statusCode, body: { error: { code: e.code ?? 'BAD_REQUEST', message: e.message ?? 'bad request' } } }
  }
  return { status: 500, body: { error: { code: 'INTERNAL', message: 'the server failed to answer this request (see its log)' } } }
}

/** A 404 answer body. */
export function notFound(message: string): ErrorBody {
  return { error: { code: 'NOT_FOUND', message } }
}
