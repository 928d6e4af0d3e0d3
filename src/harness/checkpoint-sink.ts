// The harness's side of the checkpoint seam (tools/checkpoint.ts): blobs go to the store's checkpoint blobs,
// records to the log of the session whose agent this harness runs, as `checkpoint/files` events.
import type { Session } from '../session/session.js'
import type { CheckpointRecord, CheckpointSink } from '../tools/checkpoint.js'
import type { CheckpointBlobStore } from '../store/types.js'

/** Data of a `checkpoint/files` event: a {@link CheckpointRecord} plus the changed paths on their own. */
export interface CheckpointFilesData extends CheckpointRecord {
  /** The workspace-relative paths the call changed (the `files` paths, for readers that need no hashes). */
  readonly paths: readonly string[]
}

/**
 * A sink over `blobs` for the sessions `sessionOf` knows (the harness's live agents). Takes no session when
 * the store keeps no blobs.
 */
export function storeCheckpointSink(blobs: CheckpointBlobStore | undefined, sessionOf: (id: string) => Session | undefined): CheckpointSink {
  return {
    accepts: (sessionId) => blobs !== undefined && sessionOf(sessionId) !== undefined,
    async saveBlobs(_sessionId, saved) {
      await blobs?.put(saved)
    },
    record(sessionId, record) {
      const data: CheckpointFilesData = { ...record, paths: record.files.map((file) => file.path) }
      sessionOf(sessionId)?.append('checkpoint/files', data)
    },
  }
}
