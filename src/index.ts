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
export { outputInstruction, systemWithOutput } from './llm/output-instruction.js'
export type { PreparedCall, StreamMiddleware } from './llm/registry.js'
export { scriptedAdapter, scriptChunks } from './llm/adapters/scripted.js'
export type { ScriptStep, ScriptedAdapter, ScriptedAdapterOptions } from './llm/adapters/scripted.js'

export type {
  CancelCause,
  CoreEventData,
  CoreEventType,
  EventEnvelope,
  EventRecord,
  KnownSessionEvent,
  LoggedData,
  OtherSessionEvent,
  RequestHeader,
  SessionEvent,
  SessionEventDataMap,
  SessionEventOf,
  SurfaceOp,
  TurnEndReason,
} from './session/events.js'
// The data shapes of ledgerloop's own plugin events, declared into SessionEventDataMap (types only).
import './plugins/event-data.js'
export { KNOWN_EVENT_TYPES, SURFACE_TYPES } from './session/events.js'
export { Session, SESSION_FORMAT_VERSION } from './session/session.js'
export type { AppendOptions, SessionHeader, SessionOptions, SessionWiring } from './session/session.js'
export type { EventLog } from './session/event-log.js'
export { canonicalHeader, foldRequestHeader, headerEquals } from './session/request-header.js'
export { foldMessages } from './session/surface.js'
export { closerEvents, interruptedTurnClosers } from './session/repair.js'
export { LogGrammar } from './session/log-grammar.js'
export { verifySessionLog } from './session/verify.js'
export type { VerifyResult } from './session/verify.js'
export { foldSession } from './session/fold.js'
export { formatCost, inPeak, sessionCost } from './views/cost.js'
export type { CostFigure, PricingCatalogue, RequestCost, SessionCost } from './views/cost.js'

export { defineTool } from './tools/define-tool.js'
export type { DefinedTool } from './tools/define-tool.js'
export { ToolRegistry } from './tools/tool-registry.js'
export type { ToolOffer } from './tools/tool-registry.js'
export type { JsonSchema, ToolAgentRef, ToolContext, ToolDefinition, ToolOutput, ToolParameters, ToolReplayPolicy } from './tools/types.js'

export { createHarness } from './harness/harness.js'
export type { Harness, HarnessOptions, ResumeOptions, RewindConflict, RewindOptions, RewindResult } from './harness/harness.js'
export { Agent } from './loop/agent.js'
export type { AgentContext, AgentOptions, OutputOf, OutputSchema, RunOptions, SendOptions, TurnStream } from './loop/agent.js'
export type { ApprovalDecision, LedgerHooks, PreStepDecision, PreToolDecision, RequestErrorAction, ToolCall, ToolCallResult } from './loop/hook-types.js'
export { PromptRegistry, joinContextSections } from './loop/prompt.js'
export type { PromptAssembly, PromptContext, PromptPart, PromptText } from './loop/prompt.js'
export { RUNTIME_CONTEXT_PLUGIN } from './loop/runtime-context.js'
export { currentInitiator } from './loop/initiator.js'
export { isLoopRequest } from './loop/loop-request.js'
export { invariantPlugin } from './plugins/invariant.js'
export { subagentTool } from './plugins/subagent.js'
export type { SubagentArgs, SubagentProfile, SubagentResultMeta, SubagentToolOptions } from './plugins/subagent.js'
export type { InvariantOptions } from './plugins/invariant.js'

export { MemoryStore } from './store/memory-store.js'
export type { CheckpointBlobStore, ForkChild, ForkPoint, SessionList, SessionListOptions, SessionStore, SessionSummary, SessionWriter, StoredSession, TailRepair } from './store/types.js'
export { JsonlStore } from './store/jsonl/jsonl-store.js'
export type { JsonlStoreOptions } from './store/jsonl/jsonl-store.js'
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

export { builtinTools, DEFAULT_BASH_ENV } from './tools/builtin/index.js'
export type { BuiltinToolsOptions, NetworkPolicy, SandboxMode, ToolLimits } from './tools/builtin/index.js'
export type { CheckpointRecord, FileChange } from './tools/checkpoint.js'
export { DEFAULT_PERMISSION_RULES, permissionPlugin } from './plugins/permission.js'
export type { AttributedAnswer, PermissionAnswer, PermissionDecision, PermissionDecisionData, PermissionPluginOptions, PermissionQuestion, PermissionRule, PermissionRules } from './plugins/permission.js'
export { compactionPlugin, compactNow } from './plugins/compaction/compaction.js'
export type { CompactionOptions, CompactionPlugin, CompactNowOptions } from './plugins/compaction/compaction.js'
export type { CompactionEndData, CompactionOutcome, CompactionResult, CompactionStartData, CompactionTrigger } from './plugins/compaction/replace.js'
export { isCompactionSummary } from './plugins/compaction/replace.js'
export { COMPACTION_PLUGIN, DEFAULT_SUMMARY_INSTRUCTION } from './plugins/compaction/summary.js'
export type { CompactionRequestData, CompactionSummaryData, Summarize, SummarizeContext } from './plugins/compaction/summary.js'
export type { CompactionPruneData } from './plugins/compaction/prune.js'
export { PRUNED_NOTE_PREFIX } from './plugins/compaction/prune.js'
export { turnBudgetPlugin } from './plugins/turn-budget.js'
export type { BudgetExceededData, TurnBudgetOptions } from './plugins/turn-budget.js'
export { COST_UNPRICED_EVENT, costBudgetPlugin } from './plugins/cost-budget.js'
export type { CostBudgetExceededData, CostBudgetOptions, CostBudgetUnpricedData } from './plugins/cost-budget.js'
export { COST_CAP_EVENT, costCapOf, recordedCostCap } from './views/cost-cap.js'
export type { CostBudgetCapData, CostCapFigure } from './views/cost-cap.js'
export { mcpTools } from './plugins/mcp/mcp.js'
export type { McpHttpServer, McpServerConfig, McpStdioServer, McpToolsOptions, ToolSet } from './plugins/mcp/mcp.js'
export { telemetryPlugin, traceSession, TELEMETRY_SCOPE } from './plugins/telemetry/telemetry.js'
export type { TelemetryPluginOptions, TelemetryTracerProvider } from './plugins/telemetry/telemetry.js'

export { buildSessionTree } from './views/session-tree.js'
export type { RequestNode, SessionTree, StepNode, ToolNode, TurnNode } from './views/session-tree.js'
export { buildTimeline } from './views/timeline.js'
export type { Timeline, TimelineRow, TimelineRowKind } from './views/timeline.js'
export { diffRequests, rebuildRequest, requestCount, requestWithDiff } from './views/request-view.js'
export type { ConfigChange, RebuiltRequest, RequestDiff } from './views/request-view.js'
export { loggedRequests, reconstructionProblems } from './views/request-reconstruction.js'
export type { LoggedRequest } from './views/request-reconstruction.js'
export { checkSession } from './views/session-check.js'
export type { SessionCheck } from './views/session-check.js'
export { summarizeLog } from './views/session-summary.js'
export type { LogSummary } from './views/session-summary.js'
export { sessionUsage } from './views/session-usage.js'
export { InputFateFold, inputFate, turnResult } from './views/turn-result.js'
export type { InputFate, TurnResult, TurnResultOptions, TurnToolCall } from './views/turn-result.js'
export { streamPartOf } from './views/turn-parts.js'
export type { ReasoningDeltaPart, StepEndPart, StepStartPart, TextDeltaPart, ToolCallPart, ToolResultPart, TurnEndPart, TurnStreamPart } from './views/turn-parts.js'
export type { UsageTotals } from './llm/token-usage.js'
export { replaySession } from './app/replay-session.js'
export type { ModelFacts, ReplayReport } from './app/replay-session.js'
export { replayAdapter } from './app/replay-adapter.js'
export type { ReplayAdapter, ReplayAdapterOptions, ReplayDivergedFailure } from './app/replay-adapter.js'
export { recordedTools } from './app/recorded-tools.js'
export type { Divergence } from './views/request-divergence.js'
export { compareSessions } from './views/compare-sessions.js'
export type { CompareOptions, ComparedToolCall, SessionComparison, TurnComparison, TurnFacts } from './views/compare-sessions.js'
export { rerunSession } from './app/rerun-session.js'
export type { RerunOptions, RerunReport } from './app/rerun-session.js'
