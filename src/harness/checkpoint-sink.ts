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
  // Hashes known durable in this store, and writes under way (keepAhead's and saveBlobs' own).
  const durable = new Set<string>()
  const writing = new Map<string, Promise<void>>()
  // Of those, the ones staged for the store's next log commit.
  const staging = new Set<string>()
  // `ahead`: nothing waits for these yet, so they may ride the store's next log commit (putWithNextCommit).
  const put = (saved: ReadonlyMap<string, Buffer>, ahead = false): Promise<void> => {
    const fresh = new Map([...saved].filter(([hash]) => !durable.has(hash) && !writing.has(hash)))
    const waits = [...saved.keys()].flatMap((hash) => (writing.has(hash) ? [writing.get(hash) as Promise<void>] : []))
    if (!ahead && blobs !== undefined) {
      // A blob waiting for the next commit is needed now: put it (the store makes it durable at once).
      const staged = new Map([...saved].filter(([hash]) => staging.has(hash)))
      if (staged.size > 0) waits.push(blobs.put(staged))
    }
    if (fresh.size > 0 && blobs !== undefined) {
      const later = ahead && blobs.putWithNextCommit !== undefined
      if (later) for (const hash of fresh.keys()) staging.add(hash)
      const write = (later ? (blobs.putWithNextCommit as NonNullable<typeof blobs.putWithNextCommit>).call(blobs, fresh) : blobs.put(fresh)).then(() => {
        for (const hash of fresh.keys()) durable.add(hash)
      })
      const settled = write.finally(() => {
        for (const hash of fresh.keys()) writing.delete(hash), staging.delete(hash)
      })
      for (const hash of fresh.keys()) writing.set(hash, settled)
      waits.push(settled)
    }
    return Promise.all(waits).then(() => undefined)
  }
  return {
    accepts: (sessionId) => blobs !== undefined && sessionOf(sessionId) !== undefined,
    async saveBlobs(_sessionId, saved) {
      // A keepAhead write that failed is tried again here: its hash is neither durable nor being written.
      await put(saved)
      const missed = new Map([...saved].filter(([hash]) => !durable.has(hash)))
      if (missed.size > 0) await put(missed)
    },
    keepAhead(_sessionId, saved) {
      // Nobody waits for this one; a failure only means the next saveBlobs writes the blob itself.
      put(saved, true).catch(() => undefined)
    },
    record(sessionId, record) {
      const data: CheckpointFilesData = { ...record, paths: record.files.map((file) => file.path) }
      sessionOf(sessionId)?.append('checkpoint/files', data)
    },
  }
}
