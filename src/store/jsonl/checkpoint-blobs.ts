// File checkpoints of a JSONL store: one file per blob under `<dir>/.checkpoints/`, named by its SHA-256 (a
// two-character fan-out keeps folders small), so a blob is written once however many sessions name it. A
// blob is written under a temporary name, fsynced and renamed into place, then its folder is fsynced: a blob
// that `put` reported durable is whole after a crash, and a torn one never has a blob's name.
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rename, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'
import { checkBlobHash } from '../checkpoint-blobs.js'
import { ensurePrivateDir } from '../file-permissions.js'
import type { CheckpointBlobStore } from '../types.js'

// Blob writes in flight at once: enough to keep the disk busy on a bash baseline of many small files.
const PARALLEL_WRITES = 16

/** Checkpoint blobs in a folder beside the session files. */
export class JsonlCheckpointBlobs implements CheckpointBlobStore {
  /** The blob folder (`<sessions dir>/.checkpoints`). */
  readonly dir: string
  readonly #sessionsDir: string
  #ready: Promise<void> | undefined

  /** @param sessionsDir - the store's session directory */
  constructor(sessionsDir: string) {
    this.#sessionsDir = sessionsDir
    this.dir = join(sessionsDir, '.checkpoints')
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const hash of blobs.keys()) checkBlobHash(hash)
    if (blobs.size === 0) return
    await this.#ensureDir()
    const pending = [...blobs]
    const touched = new Set<string>()
    const worker = async (): Promise<void> => {
      for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
        const [hash, bytes] = next
        if (await this.#writeBlob(hash, bytes)) touched.add(this.#folderOf(hash))
      }
    }
    try {
      await Promise.all(Array.from({ length: Math.min(PARALLEL_WRITES, blobs.size) }, worker))
      // The renames are durable only once their folders are.
      await Promise.all([...touched].map((folder) => syncPath(folder)))
    } catch (error) {
      throw new HarnessError(`could not store file checkpoints in ${this.dir}: ${(error as Error).message}`, 'SESSION_WRITE_FAILED', { cause: error })
    }
  }

  async get(hash: string): Promise<Buffer | undefined> {
    checkBlobHash(hash)
    try {
      return await readFile(this.#pathOf(hash))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
  }

  // True when the blob was written now (false: it was there already).
  async #writeBlob(hash: string, bytes: Uint8Array): Promise<boolean> {
    const target = this.#pathOf(hash)
    if (await exists(target)) return false
    const folder = this.#folderOf(hash)
    await mkdir(folder, { recursive: true, mode: 0o700 })
    const temporary = join(folder, `.${hash}.${randomBytes(6).toString('hex')}.tmp`)
    const file = await open(temporary, 'wx', 0o600)
    try {
      await file.writeFile(bytes)
      await file.sync()
    } catch (error) {
      await file.close()
      await unlink(temporary).catch(() => undefined)
      throw error
    }
    await file.close()
    await rename(temporary, target)
    return true
  }

  #folderOf(hash: string): string {
    return join(this.dir, hash.slice(0, 2))
  }

  #pathOf(hash: string): string {
    return join(this.#folderOf(hash), hash)
  }

  #ensureDir(): Promise<void> {
    this.#ready ??= (async () => {
      ensurePrivateDir(this.#sessionsDir)
      ensurePrivateDir(this.dir)
    })()
    return this.#ready
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false
    throw error
  }
}

async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
