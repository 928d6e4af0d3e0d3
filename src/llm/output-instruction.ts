// The words that ask a model for structured output where its provider has no native mode for it (or, for
// DeepSeek's `json_object`, where the mode needs the schema spelled out): one text shared by every adapter, so a
// request rebuilt from the log gets exactly the system prompt the original had.
import type { GenerateOptions, OutputSpec } from './types.js'

/**
 * The instruction that asks for an answer valid under `output.schema`: a single JSON value, no prose around it.
 * Adapters without a native structured-output mode append it to the system prompt ({@link systemWithOutput}).
 */
export function outputInstruction(output: OutputSpec): string {
  const what = output.description !== undefined && output.description !== '' ? ` (${output.description})` : ''
  return (
    `When you give your final answer${what}, reply with a single JSON value and nothing else — no prose, no code fence. ` +
    `It must be valid under this JSON Schema:\n${JSON.stringify(output.schema)}`
  )
}

/** The request's system prompt with the output instruction appended (the system prompt alone without `output`). */
export function systemWithOutput(request: Pick<GenerateOptions, 'system' | 'output'>): string | undefined {
  if (request.output === undefined) return request.system
  const instruction = outputInstruction(request.output)
  return request.system === undefined || request.system === '' ? instruction : `${request.system}\n\n${instruction}`
}
