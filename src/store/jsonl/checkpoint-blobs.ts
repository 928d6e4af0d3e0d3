// File checkpoints of a JSONL store: one file per blob under `<dir>/.checkpoints/`, named by its SHA-256 (a
// two-character fan-out keeps folders small), so a blob is written once however many sessions name it.
//
// A new blob is created under its own name (O_EXCL), written, fsynced, and its folder fsynced: `put` resolves
// only once both are on disk. Creating in place instead of under a temporary name + rename saves a second
// journal commit per blob (the rename's own), which is what made a `write_file` turn with checkpoints on cost
// ~1.4× one without; the file's fsync already commits its new name on a journalling file system, so the
// folder's fsync that follows (kept: POSIX promises nothing without it) mostly finds nothing left to write.
// The price is that a crash mid-write can leave a torn file under a blob's name. A blob's name is its hash,
// so a torn one is recognised by its bytes: `get` never returns bytes that do not hash to their name, and a
// `put` that finds a file already there checks it the same way and replaces a torn one (through a temporary
// name and a rename, the slow path). A torn file is only ever one whose `put` never resolved, so no durable
// event names it until a later `put` has replaced it.
import { createHash, randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { mkdir, open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'
import { checkBlobHash } from '../checkpoint-blobs.js'
import { ensurePrivateDir } from '../file-permissions.js'
import type { CheckpointBlobStore } from '../types.js'

// Blob writes in flight at once: enough to keep the disk busy on a bash baseline of many small files.
const PARALLEL_WRITES = 16
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW

/** Checkpoint blobs in a folder beside the session files. */
export class JsonlCheckpointBlobs implements CheckpointBlobStore {
  /** The blob folder (`<sessions dir>/.checkpoints`). */
  readonly dir: string
  readonly #sessionsDir: string
  #ready: Promise<void> | undefined
  // Fan-out folders known to exist: a blob in one of them needs no mkdir.
  readonly #folders = new Set<string>()

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
        await this.#writeBlob(hash, bytes)
        touched.add(this.#folderOf(hash))
      }
    }
    try {
      await Promise.all(Array.from({ length: Math.min(PARALLEL_WRITES, blobs.size) }, worker))
      // A blob's name is durable only once its folder is.
      await Promise.all([...touched].map((folder) => syncPath(folder)))
    } catch (error) {
      throw new HarnessError(`could not store file checkpoints in ${this.dir}: ${(error as Error).message}`, 'SESSION_WRITE_FAILED', { cause: error })
    }
  }

  async get(hash: string): Promise<Buffer | undefined> {
    checkBlobHash(hash)
    let bytes: Buffer
    try {
      bytes = await readFile(this.#pathOf(hash))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
      throw error
    }
    // A torn blob (a crash during its put) is no blob.
    return hashOf(bytes) === hash ? bytes : undefined
  }

  // Leaves the blob whole under its name with its bytes fsynced (its folder is the caller's to fsync).
  async #writeBlob(hash: string, bytes: Uint8Array): Promise<void> {
    const folder = this.#folderOf(hash)
    if (!this.#folders.has(folder)) {
      await mkdir(folder, { recursive: true, mode: 0o700 })
      this.#folders.add(folder)
    }
    const target = this.#pathOf(hash)
    let file: FileHandle
    try {
      file = await open(target, CREATE_FLAGS, 0o600)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      return this.#checkExisting(hash, bytes)
    }
    try {
      await file.writeFile(bytes)
      await file.sync()
    } catch (error) {
      await file.close()
      await unlink(target).catch(() => undefined)
      throw error
    }
    await file.close()
  }

  // A file already holds this blob's name: another session's, another process's (perhaps still writing it), or
  // a torn one a crash left. Whole: fsync it all the same, since the writer that created it may not have yet
  // (cheap when it is on disk already). Torn or still being written: write the blob whole under a temporary
  // name and rename it over, so the name only ever goes from torn to whole.
  async #checkExisting(hash: string, bytes: Uint8Array): Promise<void> {
    const target = this.#pathOf(hash)
    const found = await readFile(target).catch(() => undefined)
    if (found !== undefined && hashOf(found) === hash) {
      await syncPath(target)
      return
    }
    const temporary = join(this.#folderOf(hash), `.${hash}.${randomBytes(6).toString('hex')}.tmp`)
    const file = await open(temporary, CREATE_FLAGS, 0o600)
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

function hashOf(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

async function syncPath(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
