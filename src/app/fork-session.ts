// Owns `ledgerloop fork`: copies a stored session up to a point into a new one. It runs no turn — no model is
// called, no tool runs, no request is built — so nothing compose.ts installs (routes, tools, plugins) takes part,
// and the harness it forks with holds the store alone. The copy itself is the harness's `forkSession`, the same
// one chat's `/fork` and the server's `POST /api/sessions/:id/fork` call on their composed harnesses, so a fork
// is the same log whichever entry point made it.
import { createHarness } from '../harness/harness.js'
import type { SessionStore } from '../store/types.js'
import { refuseLiveSession, type StoreSpec } from './store-spec.js'

/**
 * Forks session `id` of `store` (opened from `spec`) at seq `at` (default: its end) and returns the child's id.
 * Takes the store over: it is closed when the fork is done, or failed.
 * @throws HarnessError `SESSION_LOCKED` when another process is writing the session, `INVALID_BOUNDARY` or
 * `OPEN_TURN` when `at` is not a fork point
 */
export async function forkStoredSession(spec: StoreSpec, store: SessionStore, id: string, options: { readonly at?: number } = {}): Promise<string> {
  const harness = createHarness({ store })
  try {
    // A session another process is writing has an open turn that is work in progress, not a fork point.
    refuseLiveSession(spec, id, 'fork')
    return await harness.forkSession(id, options.at !== undefined ? { at: options.at } : {})
  } finally {
    await harness.close()
  }
}
