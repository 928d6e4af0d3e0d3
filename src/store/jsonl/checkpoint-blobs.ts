// File checkpoints of a JSONL store: blobs appended to a pack file of this store instance's own under
// `<dir>/.checkpoints/packs/`, found again by their SHA-256 (checkpoint-pack.ts has the record format).
//
// Why a pack and not a file per blob: a new file costs its own journal commit, and its name is durable only once
// its folder is fsynced, so each pre-image cost two fsyncs of its own (a `write_file` turn with checkpoints cost
// ~1.4× one without, a 10,000-file `bash` baseline 10,000 fsyncs). A write into a file that already exists needs
// one sync of that file and nothing else: the pack's own name was made durable once, when it was created (the
// file, then its folder and the folders above it fsynced, before the first `put` resolved). And the pack is
// grown ahead of its records by writing zeros (at least 1 MiB at a time, made durable with a full fsync), so a
// record usually lands on blocks the file already has: its sync is an fdatasync that writes the data and no
// metadata (no journal commit on ext4), which costs the log's fsync running beside it next to nothing, where an
// append's fsync would queue a second journal commit behind it. So a `put` is one write into the page cache and
// one sync on the thread pool, concurrent with whatever else the process does (the log's fsync, in a turn), and
// puts that arrive while a sync is in flight share the next one.
//
// Crash safety. A `put` resolves only after a sync that started after its records were written (a full fsync
// whenever the file grew since the last one), and records are written synchronously and in order, so every
// record of a resolved `put` lies in the prefix of the pack that a sync covered; past the records, the pack holds
// zeros, which no scan takes for a record. A crash can only tear what came after the last completed fsync: records of puts that never
// resolved, which no durable event names (the tool changes the file only after its pre-image's `put` resolved,
// and logs the change after that). A scan reads records up to the first one that is not whole and valid. One
// writer per pack (this instance; the name is unique), so a tail is never appended to after a crash; a write or
// an fsync that fails retires the pack (after a failed fsync the kernel may have dropped the pages, and a later
// fsync could succeed without them), and the next `put` starts a new one. A blob read back is checked against
// its hash, so bytes that are not the blob are never returned.
//
// Content addressed: a blob this instance stored is written once however many sessions name it, and a blob
// another process stored (its own pack) is found by scanning the packs. Blobs of earlier builds, one file per
// blob under `.checkpoints/<2 hex>/<hash>`, are still read.
import { createHash, randomBytes } from 'node:crypto'
import { constants, fdatasync, fsync, ftruncateSync, writeSync, writevSync } from 'node:fs'
import { open, readdir, readFile, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'
import { checkBlobHash } from '../checkpoint-blobs.js'
import { ensurePrivateDir } from '../file-permissions.js'
import type { CheckpointBlobStore } from '../types.js'
import { packHeader, scanPack, type PackedBlob } from './checkpoint-pack.js'

const PACK_FLAGS = constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW
// How far ahead of its records a pack is grown (zeros), at the least.
const GROW_BYTES = 1 << 20
let zeros: Buffer | undefined

/** The pack this instance appends to. */
interface OwnPack {
  readonly path: string
  readonly file: FileHandle
  /** Where the next record goes. */
  size: number
  /** Bytes the file holds (records, then zeros). */
  allocated: number
  /** Bumped whenever the file's length changes; the last value a full fsync made durable. */
  grown: number
  grownSynced: number
  /** Set once a write or an fsync failed: nothing more is appended, and its blobs not yet durable are forgotten. */
  retired: boolean
  /** The fsync in flight, and the one queued behind it (for records written meanwhile). */
  syncing: Promise<void> | undefined
  queued: Promise<void> | undefined
}

/** A blob this instance appended: where, and the promise of its durability. */
interface OwnBlob extends PackedBlob {
  readonly pack: OwnPack
  readonly durable: Promise<void>
}

/** Checkpoint blobs in pack files beside the session files. */
export class JsonlCheckpointBlobs implements CheckpointBlobStore {
  /** The blob folder (`<sessions dir>/.checkpoints`). */
  readonly dir: string
  /** Where the packs are (`<sessions dir>/.checkpoints/packs`). */
  readonly packDir: string
  readonly #sessionsDir: string
  // The pack being created, and the one open for appends once it is.
  #opening: Promise<OwnPack> | undefined
  #current: OwnPack | undefined
  readonly #own = new Map<string, OwnBlob>()
  // Blobs found in other packs (another instance's or process's), and how far each pack was scanned.
  readonly #found = new Map<string, PackedBlob>()
  readonly #scanned = new Map<string, number>()

  /** @param sessionsDir - the store's session directory */
  constructor(sessionsDir: string) {
    this.#sessionsDir = sessionsDir
    this.dir = join(sessionsDir, '.checkpoints')
    this.packDir = join(this.dir, 'packs')
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const hash of blobs.keys()) checkBlobHash(hash)
    if (blobs.size === 0) return
    try {
      let pack = await this.#currentPack()
      // Retired while this put waited for it: the next one is opened.
      while (pack.retired) pack = await this.#currentPack()
      const waits: Promise<void>[] = []
      const fresh: [string, Uint8Array][] = []
      for (const [hash, bytes] of blobs) {
        const known = this.#own.get(hash)
        if (known !== undefined && !known.pack.retired) waits.push(known.durable)
        else fresh.push([hash, bytes])
      }
      if (fresh.length > 0) waits.push(this.#append(pack, fresh))
      await Promise.all(waits)
    } catch (error) {
      if (error instanceof HarnessError) throw error
      throw new HarnessError(`could not store file checkpoints in ${this.packDir}: ${(error as Error).message}`, 'SESSION_WRITE_FAILED', { cause: error })
    }
  }

  async get(hash: string): Promise<Buffer | undefined> {
    checkBlobHash(hash)
    const own = this.#own.get(hash)
    if (own !== undefined) {
      // A pack retired meanwhile is closed: its durable blobs are found by the scan below.
      const bytes = await readPacked(own.pack.file, own).catch(() => undefined)
      if (bytes !== undefined && hashOf(bytes) === hash) return bytes
    }
    const loose = await this.#readLoose(hash)
    if (loose !== undefined) return loose
    if (!this.#found.has(hash)) await this.#scanPacks()
    const found = this.#found.get(hash)
    if (found === undefined) return undefined
    const file = await open(found.path, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined)
    if (file === undefined) return undefined
    try {
      const bytes = await readPacked(file, found)
      return bytes !== undefined && hashOf(bytes) === hash ? bytes : undefined
    } finally {
      await file.close()
    }
  }

  /** Closes this instance's pack (the store's `close`); a later `put` starts a new one. */
  async close(): Promise<void> {
    const opening = this.#opening
    this.#opening = undefined
    this.#current = undefined
    const pack = await opening?.catch(() => undefined)
    if (pack === undefined) return
    // Every append's durability is the fsync in flight or the one queued: once both settle, the pack's blobs
    // are on disk and the scan finds them.
    await Promise.allSettled([pack.syncing, pack.queued])
    await Promise.allSettled([pack.syncing, pack.queued])
    pack.retired = true
    for (const [hash, blob] of this.#own) if (blob.pack === pack) this.#own.delete(hash)
    await pack.file.close().catch(() => undefined)
  }

  // Writes the records in order at the pack's end (synchronously: the next records cannot start before these
  // are in the page cache), then waits for an fsync that started after them.
  #append(pack: OwnPack, blobs: readonly [string, Uint8Array][]): Promise<void> {
    const start = pack.size
    const buffers: Uint8Array[] = []
    const placed: [string, PackedBlob][] = []
    let end = start
    for (const [hash, bytes] of blobs) {
      const header = packHeader(hash, bytes.byteLength)
      buffers.push(header, bytes)
      placed.push([hash, { path: pack.path, offset: end + header.length, length: bytes.byteLength }])
      end += header.length + bytes.byteLength
    }
    try {
      writeAllSync(pack.file.fd, buffers, start)
      if (end > pack.allocated) {
        // Zeros past the records, so the next ones overwrite blocks the file has.
        const target = end + Math.max(GROW_BYTES, end - start)
        zeros ??= Buffer.alloc(GROW_BYTES)
        for (let at = end; at < target; ) at += writeSync(pack.file.fd, zeros, 0, Math.min(zeros.length, target - at), at)
        pack.allocated = target
        pack.grown++
      }
    } catch (error) {
      // Undo a partial write so the pack's tail stays whole; if even that fails, nothing more goes after it.
      try {
        ftruncateSync(pack.file.fd, start)
        pack.allocated = start
        pack.grown++
      } catch {
        this.#retire(pack)
      }
      return Promise.reject(error)
    }
    pack.size = end
    const durable = this.#sync(pack)
    // Nobody may be waiting (the put failed on another blob): the rejection is the waiters', not unhandled.
    durable.catch(() => undefined)
    for (const [hash, blob] of placed) this.#own.set(hash, { ...blob, pack, durable })
    return durable
  }

  // An fsync that starts after every record written so far: the one in flight if none was written since it
  // started, else the one queued behind it (shared by every put that writes meanwhile).
  #sync(pack: OwnPack): Promise<void> {
    if (pack.syncing === undefined) return this.#startSync(pack)
    pack.queued ??= pack.syncing.then(
      () => this.#startSync(pack),
      () => this.#startSync(pack),
    )
    return pack.queued
  }

  #startSync(pack: OwnPack): Promise<void> {
    pack.queued = undefined
    if (pack.retired) return Promise.reject(new Error(`checkpoint pack ${pack.path} was retired after a failed write`))
    // A full fsync when the length changed since the last one (the new size and blocks are metadata), else an
    // fdatasync: the records went onto blocks the file had, and only their data needs writing.
    const grown = pack.grown
    const sync = grown === pack.grownSynced ? fdatasync : fsync
    const running = new Promise<void>((resolve, reject) => sync(pack.file.fd, (error) => (error === null ? resolve() : reject(error)))).then(
      () => {
        if (pack.syncing === running) pack.syncing = undefined
        pack.grownSynced = Math.max(pack.grownSynced, grown)
      },
      (error: unknown) => {
        if (pack.syncing === running) pack.syncing = undefined
        this.#retire(pack)
        throw error
      },
    )
    pack.syncing = running
    return running
  }

  // A pack whose writes can no longer be trusted: its blobs not known durable are forgotten (the next put of them
  // writes them again, into a new pack), and the next put opens a new pack.
  #retire(pack: OwnPack): void {
    if (pack.retired) return
    pack.retired = true
    for (const [hash, blob] of this.#own) if (blob.pack === pack) this.#own.delete(hash)
    if (this.#current === pack) {
      this.#current = undefined
      this.#opening = undefined
    }
    // Closed once its fsyncs settled: a descriptor closed under a queued fsync could be reused by another file.
    void Promise.allSettled([pack.syncing, pack.queued]).then(() => pack.file.close().catch(() => undefined))
  }

  // Creates this instance's pack on the first put: the file, then the folders' entries, made durable once.
  #currentPack(): Promise<OwnPack> {
    if (this.#opening !== undefined) return this.#opening
    const opening = (async () => {
      ensurePrivateDir(this.#sessionsDir)
      ensurePrivateDir(this.dir)
      ensurePrivateDir(this.packDir)
      const path = join(this.packDir, `${Date.now().toString(36)}-${process.pid}-${randomBytes(6).toString('hex')}.pack`)
      const file = await open(path, PACK_FLAGS, 0o600)
      try {
        await file.sync()
        // The pack's name, and the folders' names if this call created them (a mkdir is no more durable than a
        // new file until its parent is fsynced).
        for (const dir of [this.packDir, this.dir, this.#sessionsDir]) await syncPath(dir)
      } catch (error) {
        await file.close().catch(() => undefined)
        throw error
      }
      const pack: OwnPack = { path, file, size: 0, allocated: 0, grown: 0, grownSynced: 0, retired: false, syncing: undefined, queued: undefined }
      return pack
    })()
    this.#opening = opening
    // Registered before any put awaits the pack, so #current is set by the time one appends. A failed creation
    // is not kept: the next put tries again.
    opening.then(
      (pack) => {
        if (this.#opening === opening) this.#current = pack
      },
      () => {
        if (this.#opening === opening) this.#opening = undefined
      },
    )
    return opening
  }

  // Every pack not this instance's, each read from where its last scan stopped (a pack another process is still
  // appending to grows).
  async #scanPacks(): Promise<void> {
    let names: string[]
    try {
      names = await readdir(this.packDir)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return
      throw error
    }
    for (const name of names.filter((n) => n.endsWith('.pack')).sort()) {
      const path = join(this.packDir, name)
      // This instance's open pack: its blobs are in #own already.
      if (path === this.#current?.path) continue
      const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined)
      if (file === undefined) continue
      try {
        const from = this.#scanned.get(path) ?? 0
        const end = await scanPack(file, path, from, (hash, blob) => {
          if (!this.#found.has(hash)) this.#found.set(hash, blob)
        })
        this.#scanned.set(path, end)
      } finally {
        await file.close()
      }
    }
  }

  // A blob of an earlier build (one file per blob); one a crash tore does not hash to its name and is no blob.
  async #readLoose(hash: string): Promise<Buffer | undefined> {
    let bytes: Buffer
    try {
      bytes = await readFile(join(this.dir, hash.slice(0, 2), hash))
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined
      throw error
    }
    return hashOf(bytes) === hash ? bytes : undefined
  }
}

function hashOf(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}

async function readPacked(file: FileHandle, blob: PackedBlob): Promise<Buffer | undefined> {
  const bytes = Buffer.alloc(blob.length)
  let done = 0
  while (done < blob.length) {
    const { bytesRead } = await file.read(bytes, done, blob.length - done, blob.offset + done)
    if (bytesRead === 0) return undefined
    done += bytesRead
  }
  return bytes
}

// A short write (a full disk, mostly) is finished from where it stopped, or throws.
// At most this many buffers per writev (Linux's IOV_MAX is 1024).
const WRITEV_MAX = 1024

function writeAllSync(fd: number, buffers: readonly Uint8Array[], position: number): void {
  const pending = buffers.filter((b) => b.byteLength > 0)
  let next = 0
  let at = position
  while (next < pending.length) {
    let written = writevSync(fd, pending.slice(next, next + WRITEV_MAX), at)
    if (written === 0) throw new Error('the disk took no bytes')
    at += written
    while (next < pending.length && written >= (pending[next] as Uint8Array).byteLength) written -= (pending[next++] as Uint8Array).byteLength
    if (written > 0) pending[next] = (pending[next] as Uint8Array).subarray(written)
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
