import type { DefinedTool } from '../tools/define-tool.js'
import type { Agent } from './agent.js'

/**
 * What a harness needs to start a child agent for a parent's tool call: the route, and how the child differs
 * from a top-level agent (its profile). The child's session header links it to the parent.
 */
export interface ChildAgentSpec {
  readonly provider: string
  readonly model: string
  readonly maxTokens?: number
  /** The parent's tool call this child answers (logged in the child's header). */
  readonly parentCallId: string
  /** Profile name (logged in the child's header). */
  readonly profile: string
  /** Names of harness tools the child is offered (default: every tool). */
  readonly tools?: readonly string[]
  /** Per-agent setup once the child exists, before its first turn (persona, brief, step budget). */
  readonly prepare?: (child: Agent) => void
}

/** Starts a child agent of `parent` on the parent's harness and store. */
export type ChildAgentStarter = (parent: Agent, spec: ChildAgentSpec) => Promise<Agent>

// Agents are built by a harness; a tool body only holds the agent. This is how it finds the harness again
// without the public Agent growing a harness reference.
const starters = new WeakMap<Agent, ChildAgentStarter>()

/** @internal Records which harness built `agent` (called by the harness for every agent it starts). */
export function linkAgentToHarness(agent: Agent, start: ChildAgentStarter): void {
  starters.set(agent, start)
}

/** The starter of the harness that built `agent`, if a harness built it. */
export function childAgentStarter(agent: unknown): ChildAgentStarter | undefined {
  return typeof agent === 'object' && agent !== null ? starters.get(agent as Agent) : undefined
}

/** How deep `agent` is in a delegation chain: 0 for a top-level agent, 1 for its child, … */
export function delegationDepth(agent: Agent): number {
  return agent.session.header.delegationDepth ?? 0
}

const OFFERED_TO = Symbol('ledgerloop.offeredTo')

/** A tool that is offered only to some agents (e.g. the sub-agent tool past the depth limit is not). */
export type AgentGatedTool<T> = T & { readonly [OFFERED_TO]: (agent: Agent) => boolean }

/**
 * Marks a tool definition as offered only to the agents `offeredTo` accepts (asked once per agent and
 * registry change, so it must be stable for a given agent). `defineTool` keeps the mark.
 */
export function gateToolByAgent<T extends object>(tool: T, offeredTo: (agent: Agent) => boolean): AgentGatedTool<T> {
  return Object.assign(tool, { [OFFERED_TO]: offeredTo })
}

/** Whether `tool` is offered to `agent` (true for every tool without a gate). */
export function isToolOfferedTo(tool: DefinedTool, agent: Agent): boolean {
  const gate = (tool as Partial<AgentGatedTool<DefinedTool>>)[OFFERED_TO]
  return gate === undefined || gate(agent) === true
}

/** How a child started under a profile differs from a top-level agent, re-applied when the child is resumed. */
export interface ChildProfileSetup {
  /** Names of harness tools the child is offered (default: every tool). */
  readonly tools?: readonly string[]
  /** Per-agent setup after the agent exists (persona, brief, step budget). */
  prepare(child: Agent): void
}

const CHILD_PROFILES = Symbol('ledgerloop.childProfiles')

/** Marks a tool definition as the starter of children under named profiles (so a resumed child gets its profile back). */
export function withChildProfiles<T extends object>(tool: T, resolve: (profile: string) => ChildProfileSetup | undefined): T {
  return Object.assign(tool, { [CHILD_PROFILES]: resolve })
}

/**
 * The setup of profile `profile` from the first tool in `tools` that starts children under that name, if any
 * (a resumed child's header names only its profile, not the tool that started it).
 */
export function findChildProfile(tools: Iterable<DefinedTool | undefined>, profile: string): ChildProfileSetup | undefined {
  for (const tool of tools) {
    const resolve = (tool as { [CHILD_PROFILES]?: (profile: string) => ChildProfileSetup | undefined } | undefined)?.[CHILD_PROFILES]
    const setup = resolve?.(profile)
    if (setup !== undefined) return setup
  }
  return undefined
}
