import type { EmitHook, GuardHook, SerialHook, WaterfallHook } from '../hooks/types.js'
import type { JsonValue } from '../json/lossless.js'
import type { ContentBlock, GenerateOptions, LlmCallConfig, LlmFailure, RetryPolicy, StreamChunk, UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import type { Session } from '../session/session.js'
import type { ToolAgentRef } from '../tools/types.js'

// The hook table of the loop, over the type of the agent its payloads name. The loop's layers (driver, turn,
// step, attempt) and the tool pipeline use it over an AgentHandle: they only pass the agent along and scope
// dispatches by its id, so none of them depends on the Agent class. agent.ts uses it over the class, and the
// public `LedgerHooks` (hook-types.ts) is the table over the class too, so every listener's payload names the
// full Agent. This file imports nothing from agent.ts.

/** The agent a hook payload names, as the loop's layers and the tool pipeline use it: by its id. */
export interface AgentHandle extends ToolAgentRef {
  /** Agent id (= session id): the scope key of every dispatch made for this agent. */
  readonly id: string
}

/** What `agent/pre-step` decides: enter a step with these messages, or reject (the turn ends `blocked`). */
export type PreStepDecision = { readonly kind: 'reject' } | { readonly kind: 'enter'; readonly messages: readonly UserMessage[] }

/** What `agent/request-error` may answer: retry the request in the same step, or nothing (the turn fails). */
export type RequestErrorAction = { readonly kind: 'retry' } | undefined

/** One tool call as the pipeline sees it. */
export interface ToolCall {
  readonly turn: number
  readonly step: number
  readonly callId: string
  readonly name: string
  /** Parsed arguments: `{}` for an empty string, the JSON value when it parses, else the raw string. */
  readonly arguments: JsonValue
  /** The arguments exactly as the model streamed them. */
  readonly rawArguments: string
}

/** `tools/pre-execute` decision. `ask` goes to the `tools/approve` seam (no approver ⇒ denied). */
export type PreToolDecision =
  | { readonly kind: 'allow' }
  | { readonly kind: 'deny'; readonly reason: string }
  | { readonly kind: 'ask'; readonly reason: string }

/** `tools/approve` answer. */
export type ApprovalDecision = { readonly kind: 'allow' } | { readonly kind: 'deny'; readonly reason: string }

/** A tool call's outcome before it is logged (what `tools/post-execute` may rewrite). */
export interface ToolCallResult {
  readonly content: readonly ContentBlock[]
  readonly isError: boolean
  /** Stable failure code and error name (logged in `tool/result.error`). */
  readonly error?: { readonly name: string; readonly code: string }
  readonly meta?: JsonValue
  readonly additionalContexts?: readonly UserMessage[]
  readonly concludesTurn?: boolean
}

/**
 * Every hook of ledgerloop, with its dispatch mode and payload, over the agent type `A` the payloads carry
 * (`LedgerHooks` is this table over the Agent class). Names and payloads are part of the API.
 */
export interface LoopHooks<A extends AgentHandle = AgentHandle> {
  'agent/pre-step': WaterfallHook<
    { readonly agent: A; readonly messages: readonly UserMessage[]; readonly turn: number; readonly step: number; readonly signal: AbortSignal },
    PreStepDecision
  >
  'agent/request': WaterfallHook<{ readonly agent: A; readonly turn: number; readonly step: number; readonly signal: AbortSignal }, LlmCallConfig>
  'agent/request-error': WaterfallHook<
    {
      readonly agent: A
      readonly turn: number
      readonly step: number
      readonly provider: string
      readonly failure: LlmFailure
      readonly retryPolicy?: RetryPolicy
      /** 1 for the first failed attempt of this step, 2 for the next, … */
      readonly attempt: number
      readonly signal: AbortSignal
    },
    RequestErrorAction
  >
  'agent/turn-stopping': SerialHook<{ readonly agent: A; readonly turn: number; readonly signal: AbortSignal }>
  'agent/status': EmitHook<{ readonly agent: A; readonly status: 'idle' | 'running' }>
  'agent/error': EmitHook<{ readonly agent: A; readonly turn: number; readonly step: number; readonly error: unknown }>
  'agent/inbox/inserted': EmitHook<{ readonly agent: A; readonly message: UserMessage }>
  'agent/inbox/claimed': EmitHook<{ readonly agent: A; readonly message: UserMessage; readonly turn: number }>
  /** A send whose submission key is already in the log was ignored; `messageId` is the input first sent with it. */
  'agent/inbox/duplicate': EmitHook<{ readonly agent: A; readonly key: string; readonly messageId: string }>
  'agent/inbox/discarded': EmitHook<{ readonly agent: A; readonly message: UserMessage }>
  'session/event': EmitHook<{ readonly session: Session; readonly event: SessionEvent }>
  /** Runs before an event commits; a throw vetoes the append (invariant companions). */
  'session/validate': GuardHook<{ readonly session: Session; readonly event: SessionEvent }>
  'llm/stream': WaterfallHook<GenerateOptions, AsyncIterable<StreamChunk>>
  'tools/pre-execute': WaterfallHook<{ readonly agent: A; readonly call: ToolCall; readonly signal: AbortSignal }, PreToolDecision>
  'tools/approve': WaterfallHook<{ readonly agent: A; readonly call: ToolCall; readonly reason: string; readonly signal: AbortSignal }, ApprovalDecision>
  'tools/post-execute': WaterfallHook<
    { readonly agent: A; readonly call: ToolCall; readonly result: ToolCallResult; readonly signal: AbortSignal },
    ToolCallResult
  >
}
