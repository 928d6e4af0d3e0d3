// The pure half of the sub-agent views: which listed sessions are a parent's children, and how children's trees
// hang under the tool calls that started them, with their usage and cost rolled up. Reading the children's logs
// from a store is app/'s part (app/child-sessions.ts): views/ only looks at what it is given.
import { addTokenUsage, emptyTokenTotals, type TokenTotals } from '../llm/token-usage.js'
import type { TokenUsage } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import { sessionCost, type PricingCatalogue } from './cost.js'

/** A sub-agent session as its parent's store lists it. */
export interface ChildSessionLink {
  /** The child's session id. */
  readonly session: string
  /** The parent's tool call the child answered. */
  readonly callId: string
  /** The child's profile name. */
  readonly profile?: string
  /** The child's delegation depth (1 for a child of a top-level session). */
  readonly depth?: number
}

/** What a store's listing says about a session's links (a store's `SessionSummary` is one). */
export interface ListedLinks {
  readonly id: string
  /** ms since epoch of the session's creation. */
  readonly createdAt: number
  /** The session this one was forked from, or (with `parentCallId`) the parent of a sub-agent. */
  readonly parentSession?: string
  /** A sub-agent's parent tool call (absent for top-level sessions and forks). */
  readonly parentCallId?: string
  readonly agentProfile?: string
  readonly delegationDepth?: number
}

/** The smallest shape of a session tree this module can attach children to (`inspect`'s tree has it). */
export interface ToolTreeShape {
  readonly turns: readonly { readonly steps: readonly { readonly tools: readonly { readonly callId: string }[] }[] }[]
}

/**
 * What {@link nestChildTrees} adds to a tree (and to each nested child tree). Besides these, each tool node
 * that started a child gains `subagent: {session, profile?, tree}` holding the child's tree.
 */
export interface SubagentTreeFields {
  /** Set on a sub-agent's own tree: its parent and the call that started it. */
  readonly parent?: { readonly session: string; readonly callId: string; readonly profile?: string; readonly depth?: number }
  /** Direct children, in the order they were created. */
  readonly subagents: readonly ChildSessionLink[]
  /**
   * Token usage of every descendant session (children, their children, …), summed bucket by bucket: a separate
   * figure, never mixed into the tree's own usage. A running sum, not a shown total: `inspect --json` has
   * always printed the provider's buckets here, and the text view turns it into the shown figure.
   */
  readonly subagentUsage: TokenTotals
  /**
   * What every descendant session cost, summed, when a price catalogue was given and something was priced; a
   * separate figure beside the tree's own cost. Descendants priced in another currency than the first are left
   * out and counted in `unpriced`.
   */
  readonly subagentCost?: { readonly total: number; readonly currency: 'USD' | 'CNY'; readonly unpriced: number }
}

/** A child whose log was read, with its own children already nested, as {@link nestChildTrees} takes it. */
export interface ReadChild<T extends ToolTreeShape> {
  readonly link: ChildSessionLink
  /** The child's own log: its usage and cost count toward the parent's roll-up. */
  readonly events: readonly SessionEvent[]
  readonly tree: T & SubagentTreeFields
}

/**
 * The children of `parentId` among a store's sessions (forks, which have no parent call, are not children): in
 * the order of the parent's calls that started them when `callOrder` (the parent's tool call ids, in log order)
 * is given, then oldest first. Children started by parallel calls are created in the same millisecond, so their
 * creation times alone do not order them.
 */
export function childSessionLinks(summaries: readonly ListedLinks[], parentId: string, callOrder: readonly string[] = []): ChildSessionLink[] {
  const position = new Map(callOrder.map((id, i) => [id, i] as const))
  const at = (s: ListedLinks): number => position.get(s.parentCallId as string) ?? Number.MAX_SAFE_INTEGER
  return summaries
    .filter((s) => s.parentSession === parentId && s.parentCallId !== undefined)
    .sort((a, b) => at(a) - at(b) || a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
    .map((s) => ({
      session: s.id,
      callId: s.parentCallId as string,
      ...(s.agentProfile !== undefined ? { profile: s.agentProfile } : {}),
      ...(s.delegationDepth !== undefined ? { depth: s.delegationDepth } : {}),
    }))
}

/** Whether a store row is a sub-agent's session (hidden by `sessions --roots`). */
export function isSubagentSession(summary: Pick<ListedLinks, 'parentSession' | 'parentCallId'>): boolean {
  return summary.parentSession !== undefined && summary.parentCallId !== undefined
}

/** Token usage summed over a log's completions (`assistant/message` usage). */
export function logUsage(events: readonly SessionEvent[]): TokenTotals {
  const total: TokenTotals = emptyTokenTotals()
  for (const e of events) if (e.type === 'assistant/message') addTokenUsage(total, (e.data as { usage?: TokenUsage }).usage)
  return total
}

/**
 * Nests each read child's tree under the parent's tool call that started it, lists every link in `subagents`
 * (a child whose log could not be read is listed but not nested), and rolls the children's usage and cost
 * (their own and their descendants') up into `subagentUsage` and `subagentCost`.
 */
export function nestChildTrees<T extends ToolTreeShape>(
  tree: T,
  header: SessionHeader,
  links: readonly ChildSessionLink[],
  children: readonly ReadChild<T>[],
  catalogue?: PricingCatalogue,
): T & SubagentTreeFields {
  const nested = new Map<string, { session: string; profile?: string; tree: T & SubagentTreeFields }>()
  const usage: TokenTotals = emptyTokenTotals()
  const cost = new CostRollUp()
  for (const { link, events, tree: child } of children) {
    addTokenUsage(usage, logUsage(events))
    addTokenUsage(usage, child.subagentUsage)
    if (catalogue !== undefined) {
      const own = sessionCost(events, catalogue)
      cost.add(own.total, own.currency, own.unpriced)
      if (child.subagentCost !== undefined) cost.add(child.subagentCost.total, child.subagentCost.currency, child.subagentCost.unpriced)
    }
    nested.set(link.callId, { session: link.session, ...(link.profile !== undefined ? { profile: link.profile } : {}), tree: child })
  }
  const turns = tree.turns.map((turn) => ({
    ...turn,
    steps: turn.steps.map((step) => ({
      ...step,
      tools: step.tools.map((tool) => {
        const child = nested.get(tool.callId)
        return child === undefined ? tool : { ...tool, subagent: child }
      }),
    })),
  }))
  const parent =
    header.parentSession !== undefined && header.parentCallId !== undefined
      ? {
          session: header.parentSession,
          callId: header.parentCallId,
          ...(header.agentProfile !== undefined ? { profile: header.agentProfile } : {}),
          ...(header.delegationDepth !== undefined ? { depth: header.delegationDepth } : {}),
        }
      : undefined
  const subagentCost = cost.figure()
  return { ...tree, ...(parent !== undefined ? { parent } : {}), turns, subagents: links, subagentUsage: usage, ...(subagentCost !== undefined ? { subagentCost } : {}) } as T & SubagentTreeFields
}

/** Sums costs in the first currency met; anything in another currency is counted as unpriced. */
class CostRollUp {
  #total = 0
  #currency: 'USD' | 'CNY' | undefined
  #unpriced = 0

  add(total: number, currency: 'USD' | 'CNY' | undefined, unpriced: number): void {
    this.#unpriced += unpriced
    if (currency === undefined) return
    this.#currency ??= currency
    if (currency === this.#currency) this.#total += total
    else this.#unpriced++
  }

  figure(): SubagentTreeFields['subagentCost'] {
    return this.#currency === undefined ? undefined : { total: this.#total, currency: this.#currency, unpriced: this.#unpriced }
  }
}
