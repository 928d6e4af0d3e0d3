// Layer 3 of the seed's layer table (§1), "Step": starts when pre-step (turn.ts) accepts a non-empty first batch,
// or when tool results need another request; owns one model call (its request attempts) and its tool batch,
// from `step/start` to `step/end` (the turn writes both); ends when the model finishes, the tools ask for
// another step, a tool concludes the turn, or something throws. Its outcomes are the table of §5. Read after
// turn.ts; the request attempt is attempt.ts.
import { LlmError } from '../llm/llm-error.js'
import type { ToolCallBlock, UserMessage } from '../llm/types.js'
import type { LoopContext, StepContext } from './loop-context.js'
import { attempt, type RequestParts } from './attempt.js'
import { executeToolCalls } from './tool-calls.js'

/** A step pre-step let in (turn.ts): the batch to log as its input, and the request parts rendered for it. */
export interface EnteredStep extends RequestParts {
  readonly kind: 'enter'
  readonly messages: readonly UserMessage[]
}

/**
 * How a step ended, as the turn reads it: `continue` (tool results the model must read: the turn opens another
 * step), `completed` (the model finished, or a tool concluded the turn), `max-tokens` (cut off at the output
 * token limit: sticky for the rest of the turn, §7).
 */
export type StepOutcome = { readonly kind: 'continue' } | { readonly kind: 'completed' } | { readonly kind: 'max-tokens' }

/** Another step is needed (tool results to read). */
export const CONTINUE: StepOutcome = Object.freeze({ kind: 'continue' })
/** The step ended the turn's work normally. */
export const COMPLETED = Object.freeze({ kind: 'completed' as const })
/** The step was cut off at the output token limit. */
export const MAX_TOKENS = Object.freeze({ kind: 'max-tokens' as const })

/**
 * The body of an entered step (its `step/start` and input are logged): request attempts until one finishes
 * (a provider failure no listener retries fails the turn), the completion anchor, then the tool batch. A
 * `max-tokens` finish runs no tool call: the calls may be truncated.
 */
export async function runStep(loop: LoopContext, at: StepContext, entered: EnteredStep): Promise<StepOutcome> {
  for (let ordinal = 1; ; ordinal++) {
    const result = await attempt(loop, at, entered, ordinal)
    if (result.kind === 'retry') continue
    if (result.kind === 'failed') throw new LlmError(result.failure)
    if (result.truncated) return MAX_TOKENS
    const calls = result.message.content.filter((b): b is ToolCallBlock => b.type === 'tool-call')
    if (calls.length === 0) return COMPLETED
    const concluded = await executeToolCalls(
      {
        agent: loop.agent,
        session: loop.session,
        hooks: loop.hooks,
        tools: loop.tools,
        delegation: loop.delegation,
        turn: at.turn,
        step: at.step,
        signal: at.signal,
        maxParallel: loop.maxParallelToolCalls,
        flush: () => loop.writer.flush(),
        acceptContext: (m) => loop.inbox.append('next-step', m),
      },
      calls,
    )
    return concluded ? COMPLETED : CONTINUE
  }
}
