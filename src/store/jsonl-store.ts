import { randomUUID } from 'node:crypto'
import { constants, existsSync, fsync, fsyncSync, writeSync } from 'node:fs'
import { link, open, readdir, stat, unlink, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { HarnessError } from '../errors/harness-error.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import { FileLock } from './file-lock.js'
import { checkPrivateFile, ensurePrivateDir } from './file-permissions.js'
import { checkFlushDelay, SequencedCommit } from './group-commit.js'
import { encodeRecordLines, headerRecord, parseHeaderRecord, scanSessionFile, summaryLinks, type ScannedSessionFile } from './session-file.js'
import { checkSeed, checkSessionId, storedSession, validateStoredLog } from './stored-log.js'
import type { SessionStore, SessionSummary, SessionWriter, StoredSession } from './types.js'

/** Options of {@link JsonlStore}. */
export interface JsonlStoreOptions {
  /** Directory of the session files (created with mode 0700). The CLI uses {@link defaultSessionsDir}. */
  readonly dir: string
  /** Store runs of ≥3 chunk events as one packed line (default true). Reading never depends on it. */
  readonly packChunks?: boolean
  /** Timer flush after the first buffered append, 0..50 ms (default 20). */
  readonly flushDelayMs?: number
  /** Plugin event types to accept on load without `ignorable` (as `SessionOptions.knownTypes`). */
  readonly knownTypes?: Iterable<string>
  /**
   * How a flush waits for its fsync. `blocking` (default) calls it on the event loop: the lowest latency for
   * the agent that flushes (measured ~0.25 ms against ~0.4 ms through the thread pool). `background` runs it on
   * libuv's thread pool, so other agents in the same process keep working while the disk syncs; choose it when
   * one process drives many agents at once. Either way a flush resolves only after the data is on disk.
   */
  readonly fsync?: 'blocking' | 'background'
}

const DEFAULT_FLUSH_DELAY_MS = 20
// O_NOFOLLOW: a session file that is a symlink is refused, not followed (checked again on the open fd).
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW
const WRITE_FLAGS = constants.O_RDWR | constants.O_NOFOLLOW

/**
 * The default durable store: one `<id>.jsonl` per session in a private directory. Line 1 is a header record
 * (`{"ledgerloop":"session","version":1,"id",…}`), every other line one event or one packed chunk run.
 *
 * Durability is by group commit: appends are buffered; a flush writes every buffered line with one write and
 * one fsync, and resolves only after the fsync. One writer per session, enforced by a `<id>.lock` pid lock file
 * (a stale lock of a dead process on this host is taken over). Loading cuts off a torn or garbage tail and
 * refuses any earlier defect with `SESSION_CORRUPT` naming the file and line.
 * @example
 * ```ts
 * const harness = createHarness({ store: new JsonlStore({ dir: defaultSessionsDir() }) })
 * ```
 */
export class JsonlStore implements SessionStore {
  /** The session directory. */
  readonly dir: string
  readonly #pack: boolean
  readonly #delayMs: number
  readonly #knownTypes: readonly string[] | undefined
  readonly #blockingSync: boolean
  readonly #writers = new Set<JsonlWriter>()
  #dirChecked = false

  /** @param options - `dir` is required */
  constructor(options: JsonlStoreOptions) {
    if (typeof options?.dir !== 'string' || options.dir === '') throw new HarnessError('JsonlStore needs a dir', 'INVALID_CONFIG')
    this.dir = options.dir
    this.#pack = options.packChunks ?? true
    this.#delayMs = options.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS
    this.#knownTypes = options.knownTypes === undefined ? undefined : [...options.knownTypes]
    checkFlushDelay(this.#delayMs)
    const mode = options.fsync ?? 'blocking'
    if (mode !== 'blocking' && mode !== 'background') throw new HarnessError(`fsync must be 'blocking' or 'background', got ${String(mode)}`, 'INVALID_CONFIG')
    this.#blockingSync = mode === 'blocking'
  }

  /** Path of a session's file. */
  pathOf(id: string): string {
    checkSessionId(id)
    return join(this.dir, `${id}.jsonl`)
  }

  async create(header: SessionHeader, seed: readonly SessionEvent[] = []): Promise<SessionWriter> {
    const path = this.pathOf(header.id)
    this.#ensureDir()
    checkSeed(header.id, seed)
    if (existsSync(path)) throw exists(header.id, path)
    const lock = FileLock.acquire(this.#lockPath(header.id), header.id)
    try {
      const text = headerRecord(header) + '\n' + encodeRecordLines(seed, this.#pack)
      // Written complete under a temporary name, then published with link(), which refuses to replace an
      // existing file: a crash never leaves a half-written header, and two creators cannot both win.
      const temporary = join(this.dir, `.${header.id}.${randomUUID()}.tmp`)
      const handle = await open(temporary, 'wx', 0o600)
      try {
        await writeAll(handle, Buffer.from(text, 'utf8'), 0)
        await handle.sync()
      } finally {
        await handle.close()
      }
      try {
        await link(temporary, path)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw exists(header.id, path)
        throw error
      } finally {
        await unlink(temporary)
      }
      await syncDir(this.dir)
      const file = await open(path, WRITE_FLAGS)
      return this.#track(new JsonlWriter(header.id, path, file, Buffer.byteLength(text), seed.length, lock, this.#pack, this.#delayMs, this.#blockingSync))
    } catch (error) {
      lock.release()
      throw error
    }
  }

  async open(id: string): Promise<StoredSession & { readonly writer: SessionWriter }> {
    const path = this.pathOf(id)
    if (!existsSync(path)) throw notFound(id, path)
    // Lock first: what we load must be what no one else is appending to.
    const lock = FileLock.acquire(this.#lockPath(id), id)
    let file: FileHandle | undefined
    try {
      file = await openPrivate(path, WRITE_FLAGS, id)
      const scanned = await this.#scan(file, path, id)
      if (scanned.tailRepair !== undefined) {
        // Physically drop the torn tail, so the next append continues a well-formed file.
        await file.truncate(scanned.committedBytes)
        await file.sync()
      }
      const writer = new JsonlWriter(id, path, file, scanned.committedBytes, scanned.log.length, lock, this.#pack, this.#delayMs, this.#blockingSync)
      return Object.assign(stored(scanned), { writer: this.#track(writer) })
    } catch (error) {
      await file?.close()
      lock.release()
      throw error
    }
  }

  async read(id: string): Promise<StoredSession> {
    const path = this.pathOf(id)
    const file = await openPrivate(path, READ_FLAGS, id)
    try {
      // A torn tail is only skipped here: the file may be live, its last line still being written.
      return stored(await this.#scan(file, path, id))
    } finally {
      await file.close()
    }
  }

  async has(id: string): Promise<boolean> {
    return existsSync(this.pathOf(id))
  }

  async list(): Promise<SessionSummary[]> {
    let names: string[]
    try {
      names = await readdir(this.dir)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
    const summaries = await Promise.all(names.filter((n) => n.endsWith('.jsonl') && !n.startsWith('.')).map((n) => this.#summary(n.slice(0, -'.jsonl'.length))))
    return summaries.sort((a, b) => b.updatedAt - a.updatedAt)
  }

  async close(): Promise<void> {
    const results = await Promise.allSettled([...this.#writers].map((w) => w.close()))
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
  }

  #lockPath(id: string): string {
    return join(this.dir, `${id}.lock`)
  }

  #ensureDir(): void {
    if (this.#dirChecked) return
    ensurePrivateDir(this.dir)
    this.#dirChecked = true
  }

  #track(writer: JsonlWriter): JsonlWriter {
    this.#writers.add(writer)
    writer.onClosed = () => this.#writers.delete(writer)
    return writer
  }

  async #scan(file: FileHandle, path: string, id: string): Promise<ScannedSessionFile> {
    const scanned = scanSessionFile(await file.readFile(), path, id)
    validateStoredLog(scanned.header, scanned.log, scanned.locate, this.#knownTypes)
    return scanned
  }

  // Header and stat only: listing never parses a log.
  async #summary(id: string): Promise<SessionSummary> {
    const path = join(this.dir, `${id}.jsonl`)
    const stats = await stat(path)
    const base = { id, createdAt: 0, updatedAt: stats.mtimeMs, sizeBytes: stats.size }
    try {
      const file = await open(path, READ_FLAGS)
      let head: string
      try {
        const buffer = Buffer.alloc(Math.min(stats.size, 64 * 1024))
        const { bytesRead } = await file.read(buffer, 0, buffer.length, 0)
        head = buffer.toString('utf8', 0, bytesRead)
      } finally {
        await file.close()
      }
      const end = head.indexOf('\n')
      if (end < 0) return { ...base, problem: `${path}:1: the header line is incomplete` }
      const header = parseHeaderRecord(head.slice(0, end), id, `${path}:1`)
      return { ...base, createdAt: header.createdAt, ...summaryLinks(header) }
    } catch (error) {
      return { ...base, problem: (error as Error).message }
    }
  }
}

/** One open session file: positional appends at the committed length, group-committed. */
class JsonlWriter implements SessionWriter {
  onClosed: (() => void) | undefined
  readonly #id: string
  readonly #path: string
  readonly #blockingSync: boolean
  readonly #file: FileHandle
  readonly #lock: FileLock
  readonly #commit: SequencedCommit
  #size: number
  #closing: Promise<void> | undefined

  constructor(
    id: string,
    path: string,
    file: FileHandle,
    size: number,
    nextSeq: number,
    lock: FileLock,
    pack: boolean,
    delayMs: number,
    blockingSync: boolean,
  ) {
    this.#blockingSync = blockingSync
    this.#id = id
    this.#path = path
    this.#file = file
    this.#size = size
    this.#lock = lock
    this.#commit = new SequencedCommit(id, nextSeq, (batch) => this.#write(batch, pack), delayMs)
  }

  append(event: SessionEvent): void {
    this.#commit.append(event)
  }

  flush(): Promise<void> {
    return this.#commit.flush()
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        await this.#commit.stop()
      } finally {
        await this.#file.close().catch(() => {})
        this.#lock.release()
        this.onClosed?.()
      }
    })()
    return this.#closing
  }

  // The one write + one fsync of a batch. The write is synchronous (a copy into the page cache, microseconds
  // for a batch); the fsync blocks or runs on the thread pool as configured (the callback API: FileHandle's
  // promise API costs noticeably more per call). Positional writes at
  // the committed length make a retry after a failure rewrite the same bytes in place; the truncate undoes a
  // partial write.
  async #write(batch: readonly SessionEvent[], pack: boolean): Promise<void> {
    const bytes = Buffer.from(encodeRecordLines(batch, pack), 'utf8')
    try {
      const fd = this.#file.fd
      for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done, this.#size + done)
      if (this.#blockingSync) fsyncSync(fd)
      else await new Promise<void>((resolve, reject) => fsync(fd, (error) => (error === null ? resolve() : reject(error))))
    } catch (error) {
      await this.#file.truncate(this.#size).catch(() => {})
      throw new HarnessError(`could not write session '${this.#id}' to ${this.#path}: ${(error as Error).message}`, 'SESSION_WRITE_FAILED', { cause: error })
    }
    this.#size += bytes.length
  }
}

async function writeAll(file: FileHandle, bytes: Buffer, position: number): Promise<void> {
  let done = 0
  while (done < bytes.length) {
    const { bytesWritten } = await file.write(bytes, done, bytes.length - done, position + done)
    done += bytesWritten
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY)
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

async function openPrivate(path: string, flags: number, id: string): Promise<FileHandle> {
  let file: FileHandle
  try {
    file = await open(path, flags)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') throw notFound(id, path)
    if (code === 'ELOOP') throw new HarnessError(`session file ${path} is a symbolic link; refusing to follow it`, 'SESSION_PERMISSIONS')
    throw error
  }
  try {
    checkPrivateFile(path, await file.stat())
  } catch (error) {
    await file.close()
    throw error
  }
  return file
}

function stored(scanned: ScannedSessionFile): StoredSession {
  return storedSession(scanned.header, scanned.log, scanned.tailRepair)
}

function exists(id: string, path: string): HarnessError {
  return new HarnessError(`session '${id}' already exists (${path})`, 'SESSION_EXISTS')
}

function notFound(id: string, path: string): HarnessError {
  return new HarnessError(`no session '${id}' (no file ${path})`, 'SESSION_NOT_FOUND')
}
