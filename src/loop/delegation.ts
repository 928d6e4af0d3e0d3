// Delegation as declared values. A tool that starts child agents (the sub-agent tool) declares it on its
// definition, under `delegation`: how deep an agent may be to be offered the tool, and how a child started
// under each of its profiles differs from a top-level agent. The tool body starts children through its
// `ToolContext.delegation` (tools/types.ts), which the harness sets; the harness reads these declarations to
// offer the tool per agent and to set a child up, both when it starts and when it is resumed.
import type { DefinedTool } from '../tools/define-tool.js'
import type { Agent } from './agent.js'

/** How a child started under a profile differs from a top-level agent, re-applied when the child is resumed. */
export interface ChildProfileSetup {
  /** Names of harness tools the child is offered (default: every tool). */
  readonly tools?: readonly string[]
  /** Per-agent setup once the child exists, before its first turn (persona, brief, step budget). */
  prepare(child: Agent): void
}

/** What a tool that starts child agents declares (its definition's `delegation`). */
export interface DelegationPolicy {
  /** Most delegation levels: an agent at depth d (0 for a top-level agent) is offered the tool only while d < maxDepth. */
  readonly maxDepth: number
  /** The setup of a child started under `profile`, if the tool defines that profile. */
  profile(profile: string): ChildProfileSetup | undefined
}

/** A tool definition that starts child agents. */
export interface DelegatingTool {
  /** Who is offered the tool, and how its children are set up. */
  readonly delegation: DelegationPolicy
}

/** The delegation `tool` declares, if it starts child agents. */
export function delegationOf(tool: object | undefined): DelegationPolicy | undefined {
  const policy = (tool as Partial<DelegatingTool> | undefined)?.delegation
  return typeof policy === 'object' && policy !== null && typeof policy.maxDepth === 'number' && typeof policy.profile === 'function' ? policy : undefined
}

/** Whether `tool` is offered to an agent `depth` delegations deep (true for every tool that starts no children). */
export function isOfferedAtDepth(tool: DefinedTool, depth: number): boolean {
  const policy = delegationOf(tool)
  return policy === undefined || depth < policy.maxDepth
}

/**
 * The setup of profile `profile` from the first tool in `tools` that defines it, if any (a resumed child's
 * header names only its profile, not the tool that started it).
 */
export function findChildProfile(tools: Iterable<DefinedTool | undefined>, profile: string): ChildProfileSetup | undefined {
  for (const tool of tools) {
    const setup = delegationOf(tool)?.profile(profile)
    if (setup !== undefined) return setup
  }
  return undefined
}
