import { Ajv, type ValidateFunction } from 'ajv'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { errorBody } from './http-errors.js'

/** What Fastify hands a validator compiler (the part of the request a schema is for). */
export interface ValidatorRoute {
  readonly schema: object
  readonly httpPart?: string
}

/**
 * The validator compiler of `serve`: JSON bodies are checked as sent — no type coercion (`{"text":5}` is not the
 * string "5"), no silent removal of unknown fields (they are refused) — while path parameters and query strings,
 * which are always text on the wire, are coerced to the schema's types (`?limit=10` is the integer 10).
 * Defaults from the schemas are filled in for both.
 */
export function createValidatorCompiler(): (route: ValidatorRoute) => ValidateFunction {
  // Fastify's own defaults, minus coercion for bodies and minus removeAdditional for everything.
  // allErrors stays off: collecting every error of a hostile body is a denial-of-service vector.
  const common = { useDefaults: true, removeAdditional: false, allErrors: false, strict: false } as const
  const body = new Ajv({ ...common, coerceTypes: false })
  const text = new Ajv({ ...common, coerceTypes: 'array' })
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text).compile(schema)
}

/**
 * A `preValidation` hook for routes that take no body (cancel, compact): an absent body or `{}` (what the page and
 * most clients send) passes, anything else is a 400 — an unknown field must never be mistaken for an option.
 */
export async function refuseBody(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
  const given: unknown = request.body
  if (given === undefined) return undefined
  if (given !== null && typeof given === 'object' && !Array.isArray(given)) {
    const fields = Object.keys(given)
    if (fields.length === 0) return undefined
    return reply.code(400).send(errorBody('INVALID_REQUEST', `this route takes no body fields; unknown: ${fields.join(', ')}`))
  }
  return reply.code(400).send(errorBody('INVALID_REQUEST', 'this route takes no body (send none, or {})'))
}
