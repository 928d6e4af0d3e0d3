// What the loop's layers (driver.ts, turn.ts, step.ts, attempt.ts) are handed: one LoopContext per agent, built
// by the Agent, and one StepContext per step, built by the turn. State is passed in these values, never read
// from the Agent's private fields.
import type { HookBus } from '../hooks/hook-bus.js'
import type { LlmRegistry } from '../llm/registry.js'
import type { Session } from '../session/session.js'
import type { SessionWriter } from '../session/session-writer.js'
import type { ToolRegistry } from '../tools/tool-registry.js'
import type { ToolDelegation } from '../tools/types.js'
import type { AgentHandle, LoopHooks } from './hook-table.js'
import type { Inbox } from './inbox.js'
import type { PromptRegistry, PromptRenderCache } from './prompt.js'
import type { RuntimeContextProjection } from './runtime-context.js'

/** Options of an agent (`harness.createAgent`). */
export interface AgentOptions {
  /** Adapter route, e.g. `deepseek`. */
  readonly provider: string
  /** Model name passed to the adapter. */
  readonly model: string
  /** Output token limit for every request (default: the model's). */
  readonly maxTokens?: number
  /** Session id (default: a random UUID). */
  readonly sessionId?: string
  /** Working directory (the `{{cwd}}` prompt variable; default `process.cwd()`). */
  readonly cwd?: string
}

/** One agent's loop: its log and inbox, the harness's registries, and the little state that outlives a step. */
export interface LoopContext {
  /** The agent hook payloads name (the Agent itself). */
  readonly agent: AgentHandle
  readonly session: Session
  readonly inbox: Inbox
  readonly options: AgentOptions
  readonly hooks: HookBus<LoopHooks>
  readonly llm: LlmRegistry
  /** The tools this agent is offered. */
  readonly tools: ToolRegistry
  readonly writer: SessionWriter
  /** Most concurrency-safe tool bodies running at once per step. */
  readonly maxParallelToolCalls: number
  /** How this agent's tools start child agents (set by the harness). */
  readonly delegation: ToolDelegation | undefined
  /** Prompt layers, farthest first: the harness's, then the agent's own. */
  readonly promptLayers: readonly PromptRegistry[]
  /** Reuses the last prompt rendering while a text-only prompt is unchanged. */
  readonly prompts: PromptRenderCache
  /** Decides when a runtime-context snapshot enters the log. */
  readonly runtimeContext: RuntimeContextProjection
  /** Whether this loop instance has logged its first `request/header` (reason `initial` or `resume`). */
  headerLogged: boolean
}

/** Where a step is: its turn and step numbers, and the signal of the turn it belongs to. */
export interface StepContext {
  readonly turn: number
  readonly step: number
  readonly signal: AbortSignal
}

/** Reports an error of this agent's work on `agent/error` (live only: the turn's end records it durably). */
export function reportError(loop: LoopContext, error: unknown, turn: number, step: number): void {
  loop.hooks.emit('agent/error', { agent: loop.agent, turn, step, error }, loop.agent.id)
}
