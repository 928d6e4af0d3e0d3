// What every store's checkpoint blobs share: the shape of a key, and the in-memory store the MemoryStore (and
// tests) use. The file and database stores keep their blobs beside their logs (jsonl/, sqlite/, postgres/).
import { HarnessError } from '../errors/harness-error.js'
import type { CheckpointBlobStore } from './types.js'

const BLOB_HASH = /^[0-9a-f]{64}$/

/**
 * Checks a blob key: the lower-case hex SHA-256 of the bytes. Keys become file names (JSONL), so a key that is
 * anything else is refused before it reaches a path.
 * @throws HarnessError `INVALID_ARGS`
 */
export function checkBlobHash(hash: string): void {
  if (typeof hash !== 'string' || !BLOB_HASH.test(hash)) {
    throw new HarnessError(`checkpoint blob key ${JSON.stringify(hash)} is not a lower-case hex SHA-256`, 'INVALID_ARGS')
  }
}

/** Checkpoint blobs held in this process's memory (the `MemoryStore`'s). */
export class MemoryCheckpointBlobs implements CheckpointBlobStore {
  readonly #blobs = new Map<string, Buffer>()

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const hash of blobs.keys()) checkBlobHash(hash)
    for (const [hash, bytes] of blobs) if (!this.#blobs.has(hash)) this.#blobs.set(hash, Buffer.from(bytes))
  }

  async get(hash: string): Promise<Buffer | undefined> {
    checkBlobHash(hash)
    const found = this.#blobs.get(hash)
    // A copy: a caller that changes what it got must not change the checkpoint.
    return found === undefined ? undefined : Buffer.from(found)
  }
}
