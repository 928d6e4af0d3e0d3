// Checkpoints of `bash`. A command may change any file, so what it will change is known only afterwards; its
// pre-images must be kept before it runs. The baseline is what this process last saw of the workspace: per
// regular file its stat (size, inode, mtime and ctime in ns) and the SHA-256 of its bytes, whose blob the
// sink has stored. Before a command, a scan re-reads only the files whose stat moved since (outside edits,
// write_file, the first call) and stores their blobs; after it, a second scan finds the files whose stat moved
// during the command, hashes them, and the difference is the call's record. So a call costs two stat walks
// plus reading what changed; only the first call of a process reads the whole workspace.
//
// Bounded: at most `maxFiles` files (the scan stops and the record says `incomplete`), files over `maxBytes`
// are tracked by stat only (`untracked`: not restorable), `.git` and `node_modules` are not walked, symbolic
// links are neither followed nor tracked.
import { constants, lstatSync, readdirSync, type BigIntStats, type Dirent } from 'node:fs'
import { open, readlink } from 'node:fs/promises'
import { setImmediate as yieldToEvents } from 'node:timers/promises'
import path from 'node:path'
import { sha256, type CheckpointSink, type FileChange } from '../checkpoint.js'

const SKIPPED_FOLDERS = new Set(['.git', 'node_modules'])
// A file written within this long of a scan may change again without its mtime moving (timestamps are as
// coarse as the kernel's clock tick), so such a file is hashed again rather than trusted by its stat.
const RACY_NS = 20_000_000n
// Files read at once.
const PARALLEL = 32
// The walk stats synchronously (several times faster than through the thread pool) and lets other work run
// after this many entries.
const ENTRIES_PER_SLICE = 2000

/** One regular file as a scan saw it. */
interface Seen {
  readonly size: bigint
  readonly ino: bigint
  readonly mtimeNs: bigint
  readonly ctimeNs: bigint
}

/** A file of the baseline: its stat and, unless too large to keep, the hash of its bytes. */
interface Known extends Seen {
  readonly hash: string | undefined
}

/** A stat walk of the workspace. */
interface Scan {
  readonly files: Map<string, Seen>
  /** Wall time (ns) when the walk started. */
  readonly startedNs: bigint
  /** The walk stopped at the file limit. */
  readonly incomplete: boolean
}

/** Where the pre-images of one command were kept, and how to find what it changed afterwards. */
export interface BashCheckpoint {
  /** Scans again and returns what the command changed (sorted by path); stores the new bytes as the next pre-images. */
  finish(): Promise<{ files: FileChange[]; incomplete: boolean }>
}

/** The baseline of one workspace, shared by every `bash` call on it in this process. */
export class WorkspaceBaseline {
  /** The workspace's real root. */
  readonly root: string
  readonly #root: string
  readonly #maxFiles: number
  readonly #maxBytes: number
  readonly #known = new Map<string, Known>()
  // Blobs each sink has stored already (a harness's store); a hash is sent to a sink once.
  readonly #stored = new WeakMap<CheckpointSink, Set<string>>()
  // One command at a time: two overlapping scans would each see the other's changes.
  #queue: Promise<unknown> = Promise.resolve()

  /** @param root - the workspace's real root */
  constructor(root: string, limits: { readonly maxFiles: number; readonly maxBytes: number }) {
    this.root = root
    this.#root = root
    this.#maxFiles = limits.maxFiles
    this.#maxBytes = limits.maxBytes
  }

  /**
   * Before a command: brings the baseline up to date and stores through `sink` every pre-image it does not
   * hold yet; resolves once they are durable. Calls are serialised until the returned checkpoint finishes.
   */
  async begin(sink: CheckpointSink, sessionId: string): Promise<BashCheckpoint> {
    let release!: () => void
    const previous = this.#queue
    this.#queue = new Promise<void>((resolve) => (release = resolve))
    await previous
    try {
      const before = await this.#scan()
      await this.#refresh(before, sink, sessionId, 0n)
      const snapshot = new Map(this.#known)
      let finished = false
      return {
        finish: async () => {
          if (finished) throw new Error('a bash checkpoint finishes once')
          finished = true
          try {
            return await this.#compare(snapshot, before, sink, sessionId)
          } finally {
            release()
          }
        },
      }
    } catch (error) {
      release()
      throw error
    }
  }

  // After a command: the files whose stat moved (or that were written too close to the first scan to trust
  // theirs), hashed and compared with the snapshot taken before.
  async #compare(snapshot: ReadonlyMap<string, Known>, before: Scan, sink: CheckpointSink, sessionId: string): Promise<{ files: FileChange[]; incomplete: boolean }> {
    const after = await this.#scan()
    await this.#refresh(after, sink, sessionId, before.startedNs - RACY_NS)
    const files: FileChange[] = []
    for (const [rel, now] of this.#known) {
      const was = snapshot.get(rel)
      if (was !== undefined && was.hash === now.hash && (was.hash !== undefined || sameStat(was, now))) continue
      // A file too large to keep on either side is reported untracked: a rewind leaves it and says so.
      const untracked = (was !== undefined && was.hash === undefined) || now.hash === undefined
      files.push({ path: rel, before: was?.hash ?? null, after: now.hash ?? null, ...(untracked ? { untracked: true as const } : {}) })
    }
    for (const [rel, was] of snapshot) {
      if (this.#known.has(rel)) continue
      files.push({ path: rel, before: was.hash ?? null, after: null, ...(was.hash === undefined ? { untracked: true as const } : {}) })
    }
    files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    return { files, incomplete: before.incomplete || after.incomplete }
  }

  // Makes the baseline match `scan`: files gone are dropped, files whose stat moved (or whose mtime is at or
  // after `racyAfterNs`) are read and hashed, and their blobs are stored before this resolves.
  async #refresh(scan: Scan, sink: CheckpointSink, sessionId: string, racyAfterNs: bigint): Promise<void> {
    for (const rel of [...this.#known.keys()]) if (!scan.files.has(rel)) this.#known.delete(rel)
    const stale = [...scan.files].filter(([rel, seen]) => {
      const known = this.#known.get(rel)
      return known === undefined || !sameStat(known, seen) || (racyAfterNs > 0n && seen.mtimeNs >= racyAfterNs)
    })
    const stored = this.#storedBy(sink)
    const blobs = new Map<string, Buffer>()
    await inParallel(stale, async ([rel, seen]) => {
      const bytes = seen.size > BigInt(this.#maxBytes) ? undefined : await readConfined(this.#root, rel)
      if (bytes === null) return // gone or no longer a regular file since the walk: the next scan sees it
      const hash = bytes === undefined ? undefined : sha256(bytes)
      if (bytes !== undefined && hash !== undefined && !stored.has(hash)) blobs.set(hash, bytes)
      this.#known.set(rel, { ...seen, hash })
    })
    // Tracked files whose blob this sink has not seen (the baseline was built for another session's store).
    for (const [rel, known] of this.#known) {
      if (known.hash === undefined || stored.has(known.hash) || blobs.has(known.hash)) continue
      const bytes = await readConfined(this.#root, rel)
      if (bytes !== null && sha256(bytes) === known.hash) blobs.set(known.hash, bytes)
      else this.#known.delete(rel) // changed under us: the next scan reads it as new
    }
    if (blobs.size > 0) await sink.saveBlobs(sessionId, blobs)
    for (const hash of blobs.keys()) stored.add(hash)
  }

  #storedBy(sink: CheckpointSink): Set<string> {
    let set = this.#stored.get(sink)
    if (set === undefined) this.#stored.set(sink, (set = new Set()))
    return set
  }

  async #scan(): Promise<Scan> {
    // File times are wall-clock times.
    const startedNs = BigInt(Date.now()) * 1_000_000n
    const files = new Map<string, Seen>()
    let incomplete = false
    const folders = ['']
    let sinceYield = 0
    while (folders.length > 0 && !incomplete) {
      const rel = folders.pop() as string
      let entries: Dirent[]
      try {
        entries = readdirSync(path.join(this.#root, rel), { withFileTypes: true })
      } catch {
        continue // removed or unreadable mid-walk
      }
      sinceYield += entries.length
      if (sinceYield >= ENTRIES_PER_SLICE) {
        sinceYield = 0
        await yieldToEvents()
      }
      const regular: string[] = []
      for (const entry of entries) {
        const child = rel === '' ? entry.name : `${rel}/${entry.name}`
        if (entry.isDirectory()) {
          if (!SKIPPED_FOLDERS.has(entry.name)) folders.push(child)
        } else if (entry.isFile()) {
          regular.push(child)
        }
      }
      if (files.size + regular.length > this.#maxFiles) {
        regular.length = Math.max(0, this.#maxFiles - files.size)
        incomplete = true
      }
      for (const child of regular) {
        const stats = lstatQuietly(path.join(this.#root, child))
        if (stats?.isFile() === true) files.set(child, seenOf(stats))
      }
    }
    return { files, startedNs, incomplete }
  }
}

// Gone or unreadable since the folder was listed: not there, for this scan.
function lstatQuietly(abs: string): BigIntStats | undefined {
  try {
    return lstatSync(abs, { bigint: true, throwIfNoEntry: false })
  } catch {
    return undefined
  }
}

function seenOf(stats: BigIntStats): Seen {
  return { size: stats.size, ino: stats.ino, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs }
}

function sameStat(a: Seen, b: Seen): boolean {
  return a.size === b.size && a.ino === b.ino && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs
}

/**
 * The bytes of the regular file `rel` beneath `root`, or null when it is gone or not a regular file. Opened
 * without following a final link, and the descriptor's real path must lie inside the root: a command that
 * swaps a folder for a link to the outside cannot make the checkpoint read (and keep) a file outside.
 */
export async function readConfined(root: string, rel: string): Promise<Buffer | null> {
  let handle
  try {
    handle = await open(path.join(root, rel), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch {
    return null
  }
  try {
    const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined)
    if (real !== undefined && real !== path.join(root, rel)) return null
    if (!(await handle.stat()).isFile()) return null
    return await handle.readFile()
  } catch {
    return null
  } finally {
    await handle.close()
  }
}

async function inParallel<T>(items: readonly T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++] as T)
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker))
}
