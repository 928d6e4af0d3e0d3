import type { ZodType } from 'zod'
import type { JsonValue } from '../json/lossless.js'
import type { ContentBlock, UserMessage } from '../llm/types.js'

/** A plain JSON Schema object describing tool parameters. */
export type JsonSchema = { readonly [key: string]: JsonValue }

/** The agent a tool runs for (the full `Agent` at run time; tools should need little more than this). */
export interface ToolAgentRef {
  /** Agent id (= session id). */
  readonly id: string
}

/** What a tool body receives besides its arguments. */
export interface ToolContext {
  /** Aborted when the turn is cancelled; long work must observe it. */
  readonly signal: AbortSignal
  /** The model's id for this call. */
  readonly callId: string
  /** The agent the call belongs to. */
  readonly agent: ToolAgentRef
}

/** A structured tool result. A plain string return is shorthand for `{content: string}`. */
export interface ToolOutput {
  /** What the model reads: text, or content blocks. */
  readonly content: string | readonly ContentBlock[]
  /** Marks the result as a failure the model should see as such. */
  readonly isError?: boolean
  /** Stable failure code when `isError` (logged in `tool/result.error`). */
  readonly errorCode?: string
  /** Log-only metadata (not shown to the model). */
  readonly meta?: JsonValue
  /** Messages to add to the next step's input, after all results of this batch. */
  readonly additionalContexts?: readonly UserMessage[]
  /** End the turn after this batch instead of asking the model again (unless steering is queued). */
  readonly concludesTurn?: boolean
}

/** Parameters accepted by {@link ToolDefinition}: a zod schema or a plain JSON Schema object. */
export type ToolParameters = ZodType | JsonSchema

/** A tool the model can call. */
export interface ToolDefinition<Args = unknown> {
  /** Name the model calls it by (`^[a-zA-Z0-9_-]{1,64}$`). */
  readonly name: string
  /** What it does and when to use it (the model reads this). */
  readonly description: string
  /** Argument schema (zod or JSON Schema); arguments are validated before `execute`. */
  readonly parameters: ToolParameters
  /** The body. Throw a `HarnessError` to fail with its code; any other throw fails with `TOOL_FAILED`. */
  execute(args: Args, ctx: ToolContext): string | ToolOutput | Promise<string | ToolOutput>
  /** Whether calls may run in parallel with other concurrency-safe calls (only an exact `true` counts). */
  readonly concurrencySafe?: boolean | ((args: Args) => boolean)
  /** Every successful call of this tool concludes the turn. */
  readonly concludesTurn?: boolean
}
