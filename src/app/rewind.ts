// Owns `ledgerloop rewind`: puts a stored session's workspace files back to an earlier turn and forks the
// conversation there. Like `fork`, it runs no turn, so the harness it rewinds with holds the store alone; the
// restore itself is the harness's `rewind`, the same one chat's `/undo` and the ACP session commands call.
import { createHarness, type RewindOptions, type RewindResult } from '../harness/harness.js'
import type { SessionStore } from '../store/types.js'
import { refuseLiveSession, type StoreSpec } from './store-spec.js'

/**
 * Rewinds session `id` of `store` (opened from `spec`); see `harness.rewind`. Takes the store over: it is
 * closed when the rewind is done, or failed.
 * @throws HarnessError `SESSION_LOCKED` when another process is writing the session, `INVALID_BOUNDARY` when
 * the turn did not end in it
 */
export async function rewindStoredSession(spec: StoreSpec, store: SessionStore, id: string, options: RewindOptions): Promise<RewindResult> {
  const harness = createHarness({ store })
  try {
    // A live session's files may be changing under a running turn: the rewind waits for a settled log.
    refuseLiveSession(spec, id, 'rewind')
    return await harness.rewind(id, options)
  } finally {
    await harness.close()
  }
}
