// The public hook table: the loop's table (hook-table.ts) over the Agent class, so every listener's payload
// names the full Agent. Only this file names both; agent.ts and the loop's layers import hook-table.ts.
import type { Agent } from './agent.js'
import type { LoopHooks } from './hook-table.js'

export type { AgentHandle, ApprovalDecision, PreStepDecision, PreToolDecision, RequestErrorAction, ToolCall, ToolCallResult } from './hook-table.js'

/** Every hook of ledgerloop, with its dispatch mode and payload. Names and payloads are part of the API. */
export interface LedgerHooks extends LoopHooks<Agent> {}
