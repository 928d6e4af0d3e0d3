import type { ZodType } from 'zod'
import type { JsonValue } from '../json/lossless.js'
import type { ContentBlock, UserMessage } from '../llm/types.js'
import type { CancelCause } from '../session/events.js'
import type { Session } from '../session/session.js'

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
  /** How this call may start child agents of its agent (set by the harness; absent where no harness runs the tool). */
  readonly delegation?: ToolDelegation
  /**
   * A key for this call that stays the same across crashes, processes and workers (derived from the session id
   * and the call id): a body with side effects that dedupe by key (payment and ticket APIs, queue producers)
   * passes it on, so a re-run after a crash (`replay: 'keyed'`) does its work once.
   */
  readonly idempotencyKey: string
}

/**
 * What may happen to a call whose `tool/call` was logged but whose result was not when a crash stopped the
 * session (docs/scaling.md, "Continuation after a crash"): `never` — the model reads `TOOL_OUTCOME_UNKNOWN` and
 * decides; `safe` — the body runs again in the continuation (read-only or naturally idempotent tools);
 * `keyed` — it runs again with the same {@link ToolContext.idempotencyKey}.
 */
export type ToolReplayPolicy = 'never' | 'safe' | 'keyed'

/**
 * How a tool body starts child agents of the agent it runs for (the sub-agent tool does): the harness that
 * built the agent puts it in every {@link ToolContext}.
 */
export interface ToolDelegation {
  /** How deep the calling agent is in a delegation chain: 0 for a top-level agent, 1 for its child, … */
  readonly depth: number
  /**
   * Starts a child of the calling agent on the same harness and store, in a new session whose header links it
   * to the calling agent's session and tool call; resolves once the child exists, before its first turn.
   * @throws HarnessError `HARNESS_CLOSED`, or `INVALID_CONFIG` for a profile the tool does not define or one
   * that names tools the harness does not have
   */
  start(request: ChildAgentRequest): Promise<DelegatedAgent>
}

/** What {@link ToolDelegation.start} is asked for. */
export interface ChildAgentRequest {
  /** The tool starting the child: the harness applies that tool's setup of `profile` (persona, tools, budget). */
  readonly tool: string
  /** Profile name (logged in the child's header; a resumed child gets the same setup back). */
  readonly profile: string
  /** The calling agent's tool call this child answers (logged in the child's header). */
  readonly parentCallId: string
  /** Adapter route for the child (default: the calling agent's, with its `maxTokens` when the model is the same too). */
  readonly provider?: string
  /** Model for the child (default: the calling agent's). */
  readonly model?: string
}

/** A child agent as the tool that started it drives it (the harness's `Agent`). */
export interface DelegatedAgent {
  /** Agent id (= the child's session id). */
  readonly id: string
  /** The child's session log. */
  readonly session: Session
  /** Queues input for a new turn and wakes the child. */
  followup(input: string): void
  /** Cancels the child's running turn. */
  cancel(cause?: CancelCause): void
  /** Resolves when the child is idle. */
  whenIdle(): Promise<void>
  /** Releases the child's session (its writer and lock). */
  dispose(): Promise<void>
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
  /** What a crash that cut a call off leaves to the continuation (default `never`; see {@link ToolReplayPolicy}). */
  readonly replay?: ToolReplayPolicy
}
