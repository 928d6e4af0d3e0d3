import { addTokenUsage, emptyTokenTotals, type TokenTotals } from '../llm/token-usage.js'
import type { TokenUsage } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import type { SessionStore, SessionSummary, StoredSession } from '../store/types.js'
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

/** The smallest shape of a session tree this module can attach children to (`inspect`'s tree has it). */
export interface ToolTreeShape {
  readonly turns: readonly { readonly steps: readonly { readonly tools: readonly { readonly callId: string }[] }[] }[]
}

/**
 * What {@link attachChildTrees} adds to a tree (and to each nested child tree). Besides these, each tool node
 * that started a child gains `subagent: {session, profile?, tree}` holding the child's tree.
 */
export interface SubagentTreeFields {
  /** Set on a sub-agent's own tree: its parent and the call that started it. */
  readonly parent?: { readonly session: string; readonly callId: string; readonly profile?: string; readonly depth?: number }
  /** Direct children, in the order they were created. */
  readonly subagents: readonly ChildSessionLink[]
  /**
   * Token usage of every descendant session (children, their children, …), summed: a separate figure, never
   * mixed into the tree's own usage.
   */
  readonly subagentUsage: TokenTotals
  /**
   * What every descendant session cost, summed, when a price catalogue was given and something was priced; a
   * separate figure beside the tree's own cost. Descendants priced in another currency than the first are left
   * out and counted in `unpriced`.
   */
  readonly subagentCost?: { readonly total: number; readonly currency: 'USD' | 'CNY'; readonly unpriced: number }
}

/** The children of `parentId` among a store's sessions, oldest first (forks, which have no parent call, are not children). */
export function childSessionLinks(summaries: readonly SessionSummary[], parentId: string): ChildSessionLink[] {
  return summaries
    .filter((s) => s.parentSession === parentId && s.parentCallId !== undefined)
    .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1))
    .map((s) => ({
      session: s.id,
      callId: s.parentCallId as string,
      ...(s.agentProfile !== undefined ? { profile: s.agentProfile } : {}),
      ...(s.delegationDepth !== undefined ? { depth: s.delegationDepth } : {}),
    }))
}

/** Whether a store row is a sub-agent's session (hidden by `sessions --roots`). */
export function isSubagentSession(summary: Pick<SessionSummary, 'parentSession' | 'parentCallId'>): boolean {
  return summary.parentSession !== undefined && summary.parentCallId !== undefined
}

/** Token usage summed over a log's completions (`assistant/message` usage). */
export function logUsage(events: readonly SessionEvent[]): TokenTotals {
  const total: TokenTotals = emptyTokenTotals()
  for (const e of events) if (e.type === 'assistant/message') addTokenUsage(total, (e.data as { usage?: TokenUsage }).usage)
  return total
}

/**
 * Nests each sub-agent's tree under the parent's tool call that started it (recursively), and rolls the
 * descendants' token usage up into `subagentUsage`. `build` makes a tree from a stored session (the same
 * function that built `tree`). A child whose log cannot be read is listed in `subagents` but not nested.
 */
export async function attachChildTrees<T extends ToolTreeShape>(
  tree: T,
  header: SessionHeader,
  store: Pick<SessionStore, 'list' | 'read'>,
  build: (stored: StoredSession) => T,
  catalogue?: PricingCatalogue,
): Promise<T & SubagentTreeFields> {
  const summaries = await store.list()
  return attach(tree, header, summaries, store, build, new Set([header.id]), catalogue)
}

async function attach<T extends ToolTreeShape>(
  tree: T,
  header: SessionHeader,
  summaries: readonly SessionSummary[],
  store: Pick<SessionStore, 'read'>,
  build: (stored: StoredSession) => T,
  seen: Set<string>,
  catalogue: PricingCatalogue | undefined,
): Promise<T & SubagentTreeFields> {
  const links = childSessionLinks(summaries, header.id).filter((l) => !seen.has(l.session)) // a cycle is damage, not recursion
  const nested = new Map<string, { session: string; profile?: string; tree: T & SubagentTreeFields }>()
  const usage: TokenTotals = emptyTokenTotals()
  const cost = new CostRollUp()
  for (const link of links) {
    seen.add(link.session)
    let stored: StoredSession
    try {
      stored = await store.read(link.session)
    } catch {
      continue
    }
    const child = await attach(build(stored), stored.header, summaries, store, build, seen, catalogue)
    addTokenUsage(usage, logUsage(stored.events))
    addTokenUsage(usage, child.subagentUsage)
    if (catalogue !== undefined) {
      const own = sessionCost(stored.events, catalogue)
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
