import { Ajv, type ValidateFunction } from 'ajv'
import formats from 'ajv-formats'
import { z, type ZodType } from 'zod'
import { HarnessError } from '../errors/harness-error.js'
import { deepFreeze, snapshotJson, type JsonValue } from '../json/lossless.js'
import type { ToolSchema } from '../llm/types.js'
import type { JsonSchema, ToolContext, ToolDefinition, ToolOutput } from './types.js'

const NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/

/** A tool after `defineTool`: its model-facing schema computed once and an argument validator. */
export interface DefinedTool<Args = unknown> extends ToolDefinition<Args> {
  /** `{name, description, parameters}` as JSON Schema (frozen). */
  readonly schema: ToolSchema
  /** Validates parsed arguments; returns the (possibly coerced) value or the list of problems. */
  validate(args: unknown): { ok: true; value: Args } | { ok: false; problems: string[] }
}

/**
 * Defines a tool. Parameters are a zod schema (arguments typed from it) or a plain JSON Schema (validated with
 * ajv); either way the model sees JSON Schema and bad arguments come back to the model as `INVALID_ARGS`.
 * @example
 * ```ts
 * const add = defineTool({
 *   name: 'add', description: 'Adds two numbers',
 *   parameters: z.object({ a: z.number(), b: z.number() }),
 *   execute: ({ a, b }) => String(a + b),
 *   concurrencySafe: true,
 * })
 * ```
 * @throws HarnessError `INVALID_TOOL` for a bad name, missing description/execute or an uncompilable schema
 */
export function defineTool<S extends ZodType>(
  definition: Omit<ToolDefinition<z.infer<S>>, 'parameters'> & { readonly parameters: S },
): DefinedTool<z.infer<S>>
export function defineTool<Args = Record<string, unknown>>(
  definition: Omit<ToolDefinition<Args>, 'parameters'> & { readonly parameters: JsonSchema },
): DefinedTool<Args>
export function defineTool(definition: ToolDefinition<unknown>): DefinedTool<unknown> {
  if (isDefinedTool(definition)) return definition
  if (typeof definition !== 'object' || definition === null) throw new HarnessError('a tool definition must be an object', 'INVALID_TOOL')
  const { name, description, parameters, execute } = definition
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new HarnessError(`tool name ${JSON.stringify(name)} must match ${String(NAME_PATTERN)}`, 'INVALID_TOOL')
  }
  if (typeof description !== 'string') throw new HarnessError(`tool '${name}' needs a description`, 'INVALID_TOOL')
  if (typeof execute !== 'function') throw new HarnessError(`tool '${name}' needs an execute function`, 'INVALID_TOOL')
  const replay: unknown = definition.replay
  if (replay !== undefined && replay !== 'never' && replay !== 'safe' && replay !== 'keyed') {
    throw new HarnessError(`tool '${name}': replay must be 'never', 'safe' or 'keyed', got ${JSON.stringify(replay)}`, 'INVALID_TOOL')
  }
  const { jsonSchema, validate } = compileParameters(name, parameters)
  const schema = deepFreeze({ name, description, parameters: jsonSchema })
  return Object.freeze({ ...definition, schema, validate, [DEFINED]: true })
}

const DEFINED = Symbol('ledgerloop.definedTool')

function isDefinedTool(value: unknown): value is DefinedTool {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[DEFINED] === true
}

function isZod(value: unknown): value is ZodType {
  return typeof value === 'object' && value !== null && typeof (value as { safeParse?: unknown }).safeParse === 'function'
}

// The standard `format` names (uri, email, date-time, …) are registered so schemas using them are checked as the
// MCP SDK checks them; without the table ajv ignores each and says so through console.warn on every compile.
const ajv = new Ajv({ allErrors: true, strict: false })
// ajv-formats is CommonJS: under Node's ESM loader the default import is the plugin itself, which also carries
// itself as `.default` (the name TypeScript's NodeNext view of the module gives it).
formats.default(ajv)

function compileParameters(name: string, parameters: unknown): { jsonSchema: JsonValue; validate: DefinedTool['validate'] } {
  if (isZod(parameters)) {
    let raw: unknown
    try {
      raw = z.toJSONSchema(parameters, { io: 'input', unrepresentable: 'any' })
    } catch (error) {
      throw new HarnessError(`tool '${name}': its zod schema cannot be expressed as JSON Schema`, 'INVALID_TOOL', { cause: error })
    }
    const { $schema: _drop, ...jsonSchema } = raw as Record<string, unknown>
    return {
      jsonSchema: snapshotJson(jsonSchema, `tool '${name}' parameters`),
      validate(args) {
        const parsed = parameters.safeParse(args)
        if (parsed.success) return { ok: true, value: parsed.data }
        return { ok: false, problems: parsed.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${i.message}`) }
      },
    }
  }
  if (typeof parameters !== 'object' || parameters === null || Array.isArray(parameters)) {
    throw new HarnessError(`tool '${name}': parameters must be a zod schema or a JSON Schema object`, 'INVALID_TOOL')
  }
  const jsonSchema = snapshotJson(parameters, `tool '${name}' parameters`)
  let check: ValidateFunction
  try {
    check = ajv.compile(jsonSchema as object)
  } catch (error) {
    throw new HarnessError(`tool '${name}': invalid JSON Schema: ${(error as Error).message}`, 'INVALID_TOOL', { cause: error })
  }
  return {
    jsonSchema,
    validate(args) {
      if (check(args)) return { ok: true, value: args }
      return { ok: false, problems: (check.errors ?? []).map((e) => `${e.instancePath === '' ? '(root)' : e.instancePath}: ${e.message ?? 'invalid'}`) }
    },
  }
}

/** Normalises what a tool body returned. */
export function normalizeToolOutput(value: string | ToolOutput): ToolOutput {
  if (typeof value === 'string') return { content: value }
  if (typeof value !== 'object' || value === null || !('content' in value)) {
    throw new HarnessError('a tool must return a string or {content}', 'INVALID_TOOL_OUTPUT')
  }
  return value
}

export type { ToolContext }
