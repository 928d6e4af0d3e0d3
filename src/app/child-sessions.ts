// The store-reading half of the sub-agent views: finds a session's children in a store's listing, reads their
// logs (recursively) and hands them to the pure nesting in views/child-sessions.ts. It lives here, not in
// views/, because views/ looks only at events it is given and never at a store (the import rule, written
// down in test/meta/layers.test.ts).
import type { SessionHeader } from '../session/session.js'
import type { SessionStore, SessionSummary, StoredSession } from '../store/types.js'
import { childSessionLinks, nestChildTrees, type ReadChild, type SubagentTreeFields, type ToolTreeShape } from '../views/child-sessions.js'
import type { PricingCatalogue } from '../views/cost.js'

/**
 * Nests each sub-agent's tree under the parent's tool call that started it (recursively), and rolls the
 * descendants' token usage up into `subagentUsage`. `build` makes a tree from a stored session (the same
 * function that built `tree`). A child whose log cannot be read is listed in `subagents` but not nested.
 * @example
 * ```ts
 * const tree = await attachChildTrees(buildSessionTree(s.header, s.events), s.header, store, (c) => buildSessionTree(c.header, c.events))
 * ```
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
  const calls = tree.turns.flatMap((turn) => turn.steps.flatMap((step) => step.tools.map((tool) => tool.callId)))
  const links = childSessionLinks(summaries, header.id, calls).filter((l) => !seen.has(l.session)) // a cycle is damage, not recursion
  const children: ReadChild<T>[] = []
  for (const link of links) {
    seen.add(link.session)
    let stored: StoredSession
    try {
      stored = await store.read(link.session)
    } catch {
      continue
    }
    children.push({ link, events: stored.events, tree: await attach(build(stored), stored.header, summaries, store, build, seen, catalogue) })
  }
  return nestChildTrees(tree, header, links, children, catalogue)
}
