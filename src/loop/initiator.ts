import { AsyncLocalStorage } from 'node:async_hooks'

const storage = new AsyncLocalStorage<{ readonly id: string }>()

/** Runs `op` with `agent` as the initiator of everything it does (attribution, not authorization). */
export function runWithInitiator<T>(agent: { readonly id: string }, op: () => T): T {
  return storage.run(agent, op)
}

/**
 * The agent whose driver is running the current async call chain, if any — how a tool or plugin deep in a
 * call stack learns which agent it works for. Needs `createHarness({ initiatorScope: true })`; otherwise it
 * answers `undefined`.
 */
export function currentInitiator(): { readonly id: string } | undefined {
  return storage.getStore()
}
