// Structured output for one run: the schema a run's final answer must satisfy, turned into what the request header
// logs (`LlmCallConfig.output`: name, JSON Schema, strictness) and into a check of the answer's text. The run
// (run.ts) sets the spec on its own turn's requests and checks the answer when the turn would end; the adapters
// ask each provider for it natively (docs/adapters.md, "Structured output").
import type { z, ZodType } from 'zod'
import { HarnessError } from '../errors/harness-error.js'
import { deepFreeze, type JsonValue } from '../json/lossless.js'
import { createUserMessage } from '../llm/messages.js'
import type { OutputSpec, UserMessage } from '../llm/types.js'
import { defineTool } from '../tools/define-tool.js'
import type { JsonSchema } from '../tools/types.js'

/** What `output` takes: a zod schema (the answer typed from it) or a plain JSON Schema object. */
export type OutputSchema = ZodType | JsonSchema

/** The type of a run's `output` for schema `S`: zod's output type, else any JSON value. */
export type OutputOf<S> = S extends ZodType ? z.output<S> : JsonValue

/** Repair steps a run allows by default before its turn ends `error` with `OUTPUT_INVALID`. */
export const DEFAULT_OUTPUT_REPAIRS = 2

/** The default answer name (OpenAI's `json_schema.name`, Anthropic's answer tool). */
export const DEFAULT_OUTPUT_NAME = 'final_answer'

/** Where a message that asks for a repair comes from (its `source.plugin`). */
export const STRUCTURED_OUTPUT_SOURCE = 'ledgerloop/structured-output'

/** How an answer's text fared against the schema: the parsed (for zod: transformed) value, or the issues. */
export type AnswerCheck = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly issues: readonly string[] }

/** A run's output mode: the spec its requests carry and the check its answer gets. */
export interface StructuredOutput {
  readonly spec: OutputSpec
  check(text: string): AnswerCheck
}

/**
 * Compiles `schema` the way tool parameters are compiled (zod → JSON Schema of its input; plain JSON Schema
 * checked with ajv) and decides strictness: OpenAI's strict mode needs an object root, every object closed
 * (`additionalProperties: false`) and every property required, so `strict` is true exactly then.
 * @throws HarnessError `INVALID_CONFIG` for a bad name or a schema that does not compile
 */
export function structuredOutput(schema: OutputSchema, options: { readonly name?: string; readonly description?: string } = {}): StructuredOutput {
  const name = options.name ?? DEFAULT_OUTPUT_NAME
  let compiled: ReturnType<typeof defineTool>
  try {
    // A tool definition is only the compiler here: nothing ever runs it.
    compiled = defineTool({ name, description: options.description ?? '', parameters: schema as JsonSchema, execute: () => '' })
  } catch (error) {
    throw new HarnessError(`output: ${(error as Error).message.replace(/^tool /, 'answer ')}`, 'INVALID_CONFIG', { cause: error })
  }
  // zod's default object strips unknown keys, so telling the model that none are allowed loses nothing, and
  // makes the schema strict-compatible (zod's input-side JSON Schema leaves objects open).
  const jsonSchema = isZodSchema(schema) ? deepFreeze(closeObjects(compiled.schema.parameters)) : compiled.schema.parameters
  const spec: OutputSpec = deepFreeze({
    name,
    ...(options.description !== undefined && options.description !== '' ? { description: options.description } : {}),
    schema: jsonSchema,
    strict: isObjectSchema(jsonSchema) && isStrictCompatible(jsonSchema),
  })
  return {
    spec,
    check(text) {
      const candidates = answerCandidates(text)
      if (candidates.length === 0) return { ok: false, issues: ['the answer has no text: reply with the JSON value itself'] }
      // The issues reported are the schema's verdict on the first candidate that is JSON, else the whole text's parse error.
      let schemaIssues: readonly string[] | undefined
      let parseIssue: string | undefined
      for (const candidate of candidates) {
        let value: unknown
        try {
          value = JSON.parse(candidate)
        } catch (error) {
          parseIssue ??= `the answer is not JSON (${(error as Error).message})`
          continue
        }
        const verdict = compiled.validate(value)
        if (verdict.ok) return { ok: true, value: verdict.value }
        schemaIssues ??= verdict.problems
      }
      return { ok: false, issues: schemaIssues ?? [parseIssue ?? 'the answer is not JSON'] }
    },
  }
}

/** The steer that sends a failed check back to the model. */
export function repairMessage(spec: OutputSpec, issues: readonly string[]): UserMessage {
  const text =
    `Your answer is not valid under the output schema:\n${issues.map((issue) => `- ${issue}`).join('\n')}\n` +
    `Reply again with only the corrected JSON value, valid under this JSON Schema:\n${JSON.stringify(spec.schema)}`
  return createUserMessage(text, { kind: 'plugin', plugin: STRUCTURED_OUTPUT_SOURCE, form: 'notice' })
}

/**
 * The texts worth parsing, best first: the whole answer; the inside of a Markdown code fence in it; from the
 * first line that opens a JSON object or array on (a model that wrote a sentence before the value).
 */
function answerCandidates(text: string): string[] {
  const trimmed = text.trim()
  if (trimmed === '') return []
  const out = [trimmed]
  const fenced = /```[a-zA-Z]*[ \t]*\n([\s\S]*?)\n?```/.exec(trimmed)
  if (fenced?.[1] !== undefined) out.push(fenced[1].trim())
  const lines = trimmed.split('\n')
  const opening = lines.findIndex((line, i) => i > 0 && /^[[{]/.test(line))
  if (opening > 0) out.push(lines.slice(opening).join('\n').trim())
  return out
}

function isZodSchema(schema: OutputSchema): schema is ZodType {
  return typeof (schema as { safeParse?: unknown }).safeParse === 'function'
}

/** A copy with `additionalProperties: false` on every object schema that says nothing about extra keys. */
function closeObjects(node: JsonValue): JsonValue {
  if (Array.isArray(node)) return node.map(closeObjects)
  if (typeof node !== 'object' || node === null) return node
  const out: { [key: string]: JsonValue } = {}
  for (const [key, child] of Object.entries(node)) {
    if (key === 'properties' || key === '$defs' || key === 'definitions') {
      out[key] = typeof child === 'object' && child !== null && !Array.isArray(child) ? Object.fromEntries(Object.entries(child).map(([k, v]) => [k, closeObjects(v)])) : child
    } else {
      out[key] = key === 'enum' || key === 'const' || key === 'default' || key === 'examples' ? child : closeObjects(child)
    }
  }
  if (node.type === 'object' && node.additionalProperties === undefined) out.additionalProperties = false
  return out
}

function isObjectSchema(schema: JsonValue): boolean {
  return typeof schema === 'object' && schema !== null && !Array.isArray(schema) && schema.type === 'object'
}

/** True when every object in the schema is closed and requires all its properties (OpenAI's strict rules). */
function isStrictCompatible(node: JsonValue): boolean {
  if (Array.isArray(node)) return node.every(isStrictCompatible)
  if (typeof node !== 'object' || node === null) return true
  const properties = node.properties
  if (node.type === 'object' || properties !== undefined) {
    if (node.additionalProperties !== false) return false
    const keys = typeof properties === 'object' && properties !== null && !Array.isArray(properties) ? Object.keys(properties) : []
    const required = Array.isArray(node.required) ? node.required : []
    if (!keys.every((key) => required.includes(key))) return false
  }
  for (const [key, child] of Object.entries(node)) {
    // `properties`, `$defs` and `definitions` map names to schemas; `enum`/`const` values are data, not schemas.
    if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples') continue
    if (key === 'properties' || key === '$defs' || key === 'definitions') {
      if (typeof child === 'object' && child !== null && !Array.isArray(child) && !Object.values(child).every(isStrictCompatible)) return false
    } else if (typeof child === 'object' && child !== null && !isStrictCompatible(child)) {
      return false
    }
  }
  return true
}
