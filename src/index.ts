/**
 * ledgerloop — an agent harness whose every model request is rebuildable from a durable session log.
 *
 * Start with {@link createHarness}; see README.md and docs/ for a tour.
 * @packageDocumentation
 */
export { HarnessError, InvariantError, errorChain } from './errors/harness-error.js'
export { checkJsonSnapshot, deepFreeze, isJsonValue, snapshotJson, snapshotJsonFrozen, snapshotJsonValue } from './json/lossless.js'
export type { JsonIssue, JsonObject, JsonSnapshotResult, JsonValue } from './json/lossless.js'

export { createHookBus } from './hooks/hook-bus.js'
export type { HookBus, HookBusOptions, Plugin, ScopedHooks } from './hooks/hook-bus.js'
export type { EmitHook, GuardHook, HookRegistrar, ListenerErrorReporter, ListenerOf, OnOptions, SerialHook, WaterfallHook, WaterfallNext } from './hooks/types.js'

export type * from './llm/types.js'
export { BlockAssembler } from './llm/block-assembler.js'
export { StreamGrammar } from './llm/stream-grammar.js'
export { LlmError, LlmFailureCode, RETRYABLE_CODES, isLlmFailure, normalizeLlmFailure } from './llm/llm-error.js'
export type { LlmErrorInit } from './llm/llm-error.js'
export { createAssistantMessage, createToolResultMessage, createUserMessage, isToolResultMessage } from './llm/messages.js'
export { DEFAULT_RETRY_POLICY, LlmRegistry, callConfigEquals } from './llm/registry.js'
export type { PreparedCall, StreamMiddleware } from './llm/registry.js'
export { scriptedAdapter, scriptChunks } from './llm/adapters/scripted.js'
export type { ScriptStep, ScriptedAdapter, ScriptedAdapterOptions } from './llm/adapters/scripted.js'

export type { CancelCause, CoreEventData, CoreEventType, RequestHeader, SessionEvent, SurfaceOp, TurnEndReason } from './session/events.js'
export { KNOWN_EVENT_TYPES, SURFACE_TYPES } from './session/events.js'
export { Session, SESSION_FORMAT_VERSION } from './session/session.js'
export type { AppendOptions, SessionHeader, SessionOptions, SessionWiring } from './session/session.js'
export { canonicalHeader, foldRequestHeader, headerEquals } from './session/request-header.js'
export { foldMessages } from './session/surface.js'
export { closerEvents, interruptedTurnClosers } from './session/repair.js'
export { LogGrammar } from './session/log-grammar.js'
export { verifySessionLog } from './session/verify.js'
export type { VerifyResult } from './session/verify.js'
export { foldSession } from './session/fold.js'

export { defineTool } from './tools/define-tool.js'
export type { DefinedTool } from './tools/define-tool.js'
export { ToolRegistry } from './tools/tool-registry.js'
export type { JsonSchema, ToolAgentRef, ToolContext, ToolDefinition, ToolOutput, ToolParameters } from './tools/types.js'

export { createHarness } from './agent/harness.js'
export type { Harness, HarnessOptions } from './agent/harness.js'
export { Agent } from './agent/agent.js'
export type { AgentContext, AgentOptions } from './agent/agent.js'
export type { ApprovalDecision, LedgerHooks, PreStepDecision, PreToolDecision, RequestErrorAction, ToolCall, ToolCallResult } from './agent/hook-types.js'
export { PromptRegistry, joinContextSections } from './agent/prompt.js'
export type { PromptAssembly, PromptContext, PromptPart, PromptText } from './agent/prompt.js'
export { RUNTIME_CONTEXT_PLUGIN } from './agent/runtime-context.js'
export { currentInitiator } from './agent/initiator.js'
export { isLoopRequest } from './agent/loop-request.js'
export { invariantPlugin } from './agent/invariant.js'
export type { InvariantOptions } from './agent/invariant.js'

export { MemoryStore } from './store/memory-store.js'
export type { SessionStore, SessionSummary, SessionWriter, StoredSession, TailRepair } from './store/types.js'
export { JsonlStore } from './store/jsonl-store.js'
export type { JsonlStoreOptions } from './store/jsonl-store.js'
export { defaultSessionsDir } from './store/stored-log.js'

export { retryPlugin } from './plugins/retry.js'
export type { RetryEventData, RetryPluginOptions } from './plugins/retry.js'

export { anthropicAdapter, ANTHROPIC_BASE_URL, ANTHROPIC_VERSION } from './llm/adapters/anthropic.js'
export type { AnthropicAdapterOptions } from './llm/adapters/anthropic.js'
export { ANTHROPIC_THINKING_BUDGETS } from './llm/adapters/anthropic-request.js'
export { deepseekAdapter, DEEPSEEK_BASE_URL, DEEPSEEK_MODELS } from './llm/adapters/deepseek.js'
export type { DeepseekAdapterOptions } from './llm/adapters/deepseek.js'
export { openaiCompatibleAdapter } from './llm/adapters/openai-compatible.js'
export type { ChatCompletionsQuirks, OpenaiCompatibleAdapterOptions } from './llm/adapters/openai-compatible.js'
export { DEFAULT_IDLE_TIMEOUT_MS } from './llm/adapters/sse.js'

export { builtinTools } from './tools/builtin/index.js'
export type { BuiltinToolsOptions, SandboxMode, ToolLimits } from './tools/builtin/index.js'
export { DEFAULT_PERMISSION_RULES, permissionPlugin } from './plugins/permission.js'
export type { PermissionAnswer, PermissionDecision, PermissionDecisionData, PermissionPluginOptions, PermissionQuestion, PermissionRule, PermissionRules } from './plugins/permission.js'
export { turnBudgetPlugin } from './plugins/turn-budget.js'
export type { BudgetExceededData, TurnBudgetOptions } from './plugins/turn-budget.js'
