import { constants, existsSync, fsync, fsyncSync, readSync, writeSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { publishNewLog, sessionExists } from './publish-log.js'
import { join } from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'
import { chunkEvent } from '../../session/event-log.js'
import type { SessionEvent } from '../../session/events.js'
import type { SessionHeader } from '../../session/session.js'
import type { ChunkRecord, CompactSessionWriter, SessionRecord, TextRecord } from '../../session/session-writer.js'
import { ContentDigest, isContentWitness } from '../content-witness.js'
import { FileLock } from '../file-lock.js'
import { checkPrivateFile, ensurePrivateDir } from '../file-permissions.js'
import { checkFlushDelay, MAX_FLUSH_DELAY_MS, MAX_FLUSH_INTERVAL_MS, SequencedCommit } from '../group-commit.js'
import { SessionDigest, summarizeSessionFile, summaryOf } from '../session-digest.js'
import type { CommittedEvidence } from '../log-judgement.js'
import { encodeRecordLines, headerRecord, loadSessionFile, type LoadedSessionFile } from '../session-file.js'
import { INDEX_DIR, SessionIndex } from './session-index.js'
import { ContentIndex, type ContentWriter } from './content-index.js'
import { grepListing } from './content-listing.js'
import { JsonlCheckpointBlobs } from './checkpoint-blobs.js'
import { TextRunBuffer } from './text-run-buffer.js'
import { copyJsonlPrefix } from './fork-copy.js'
import { sessionList } from '../session-list.js'
import { checkSeed, checkSessionId, storedSession } from '../stored-log.js'
import { JsonlCheckpointer, openFromCheckpoint } from '../resume-jsonl.js'
import { ResumeFoldTracker } from '../../session/resume-fold.js'
import type { ForkChild, ForkPoint, SessionList, SessionListOptions, SessionStore, SessionWriter, StoredSession } from '../types.js'

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
   * The write policy.
   *
   * - `tool` (default; `blocking` is the same): a flush resolves only after its data is on disk, and the loop
   *   flushes before every tool body and at every turn end; the fsync runs on the event loop, the lowest
   *   latency for the agent that flushes (measured ~0.25 ms against ~0.4 ms through the thread pool).
   * - `background`: the same guarantee, with the fsync on libuv's thread pool, so other agents in the same
   *   process keep working while the disk syncs; choose it when one process drives many agents at once.
   * - `interval`: **weaker**. `flush()` does not wait for the disk: appends are written and fsynced in the
   *   background every `flushIntervalMs` and at `close()`. A crash (of the process or the machine) can lose the
   *   events of the last interval, including a `tool/call` whose tool body already ran; it never leaves a log
   *   that fails to load (a torn last line is cut off on load). Like the batched default of many agent
   *   harnesses: choose it when losing the last moments of a session is acceptable and speed matters.
   *   A write that fails makes the next `flush()` wait for a retry and reject with `SESSION_WRITE_FAILED`.
   */
  readonly fsync?: 'tool' | 'blocking' | 'background' | 'interval'
  /** With `fsync: 'interval'`: how often buffered appends are written and fsynced, 1..10000 ms (default 200). */
  readonly flushIntervalMs?: number
}

const DEFAULT_FLUSH_DELAY_MS = 20
const DEFAULT_FLUSH_INTERVAL_MS = 200
const FSYNC_MODES = ['tool', 'blocking', 'background', 'interval'] as const

/** How a {@link JsonlWriter} writes: packing, its timer, where its fsync runs, and whether flush() waits. */
interface WritePolicy {
  readonly pack: boolean
  readonly delayMs: number
  readonly maxDelayMs: number
  readonly blockingSync: boolean
  readonly interval: boolean
}
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
  readonly #knownTypes: readonly string[] | undefined
  readonly #policy: WritePolicy
  readonly #index: SessionIndex
  readonly #content: ContentIndex
  readonly #writers = new Set<JsonlWriter>()
  #dirChecked = false
  /** File checkpoints of these sessions, in `<dir>/.checkpoints/`. */
  readonly checkpointBlobs: JsonlCheckpointBlobs

  /** @param options - `dir` is required */
  constructor(options: JsonlStoreOptions) {
    if (typeof options?.dir !== 'string' || options.dir === '') throw new HarnessError('JsonlStore needs a dir', 'INVALID_CONFIG')
    this.dir = options.dir
    this.#pack = options.packChunks ?? true
    this.#knownTypes = options.knownTypes === undefined ? undefined : [...options.knownTypes]
    const mode = options.fsync ?? 'tool'
    if (!(FSYNC_MODES as readonly string[]).includes(mode)) throw new HarnessError(`fsync must be one of ${FSYNC_MODES.join(', ')}; got ${String(mode)}`, 'INVALID_CONFIG')
    const interval = mode === 'interval'
    const delayMs = interval ? (options.flushIntervalMs ?? DEFAULT_FLUSH_INTERVAL_MS) : (options.flushDelayMs ?? DEFAULT_FLUSH_DELAY_MS)
    if (interval) {
      checkFlushDelay(delayMs, MAX_FLUSH_INTERVAL_MS, 'flushIntervalMs')
      if (delayMs < 1) throw new HarnessError(`flushIntervalMs must be 1..${MAX_FLUSH_INTERVAL_MS} ms, got ${delayMs}`, 'INVALID_CONFIG')
    } else {
      checkFlushDelay(delayMs)
      if (options.flushIntervalMs !== undefined) throw new HarnessError("flushIntervalMs applies to fsync: 'interval' only", 'INVALID_CONFIG')
    }
    // Interval mode never blocks the loop on the disk: its fsync runs on the thread pool.
    this.#policy = { pack: this.#pack, delayMs, maxDelayMs: interval ? MAX_FLUSH_INTERVAL_MS : MAX_FLUSH_DELAY_MS, blockingSync: mode === 'tool' || mode === 'blocking', interval }
    this.#index = new SessionIndex(this.dir, (id) => summarizeSessionFile(this.dir, id))
    this.#content = new ContentIndex(this.dir, join(this.dir, INDEX_DIR))
    this.checkpointBlobs = new JsonlCheckpointBlobs(this.dir)
  }

  /** Path of the session index (`<dir>/.index/sessions.jsonl`, see {@link JsonlStore.list}). */
  get indexPath(): string {
    return this.#index.path
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
    if (existsSync(path)) throw sessionExists(header.id, path)
    const lock = FileLock.acquire(this.#lockPath(header.id), header.id)
    try {
      const text = headerRecord(header) + '\n' + encodeRecordLines(seed, this.#pack)
      // Whole or not at all, and never over an existing log (./publish-log.ts).
      await publishNewLog(this.dir, header.id, path, [Buffer.from(text, 'utf8')])
      const file = await open(path, WRITE_FLAGS)
      const digest = new SessionDigest()
      digest.observe(seed)
      const size = Buffer.byteLength(text)
      const content = new ContentDigest()
      content.update(text, size)
      this.#index.record({ ...summaryOf(header, digest, Date.now(), size), content: content.witness() }, true)
      this.#index.mark()
      const texts = this.#content.start(header.id, seed, size)
      const tracker = new ResumeFoldTracker(header.seedLength ?? 0)
      for (const event of seed) tracker.observe(event)
      const checkpointer = new JsonlCheckpointer(this.dir, path, header, tracker)
      return this.#track(new JsonlWriter(header, path, file, size, seed.length, lock, this.#policy, { index: this.#index, digest, content, texts }, checkpointer))
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
      // A resume checkpoint that matches the file: only the tail after it is read (docs/stores.md).
      const committed = committedEvidence(this.#index, id)
      // Once the prefix is read (it is hashed then), the writer's running digest catches up with the file.
      let resumedWriter: JsonlWriter | undefined
      let readEarly: ContentDigest | undefined
      const onPrefixRead = (prefix: ContentDigest): void => {
        if (resumedWriter === undefined) readEarly = prefix
        else resumedWriter.catchUpContent(prefix)
      }
      const resumed = openFromCheckpoint({ dir: this.dir, path, id, fd: file.fd, onPrefixRead, ...(this.#knownTypes !== undefined ? { knownTypes: this.#knownTypes } : {}), ...(committed !== undefined ? { committed } : {}) })
      if (resumed !== undefined) {
        const digest = new SessionDigest()
        Object.assign(digest, { firstPrompt: resumed.checkpoint.digest.firstPrompt, turns: resumed.checkpoint.digest.turns, lastReason: resumed.checkpoint.digest.lastReason, quarantine: resumed.checkpoint.digest.quarantine })
        digest.observe(resumed.verified.tailRecords.filter((record): record is SessionEvent => 'type' in record))
        const checkpointer = new JsonlCheckpointer(this.dir, path, resumed.header, resumed.tracker, resumed.frozen, resumed.headerDigest)
        // The content index's journal normally covers the log already; only when it does not is the (lazy) prefix read.
        const log = resumed.verified
        const texts = this.#content.resume(id, { [Symbol.iterator]: () => log.eventsWithoutChunks(0)[Symbol.iterator]() }, resumed.committedBytes)
        const writer = new JsonlWriter(resumed.header, path, file, resumed.committedBytes, resumed.verified.length, lock, this.#policy, { index: this.#index, digest, content: resumed.content, texts }, checkpointer)
        resumedWriter = writer
        if (readEarly !== undefined) writer.catchUpContent(readEarly)
        this.#index.mark()
        return Object.assign(storedSession(resumed.header, resumed.verified), { writer: this.#track(writer) })
      }
      const scanned = await this.#scan(file, path, id)
      if (scanned.tailRepair !== undefined) {
        // Physically drop the torn tail, so the next append continues a well-formed file.
        await file.truncate(scanned.committedBytes)
        await file.sync()
      }
      const digest = new SessionDigest()
      // Chunk runs say nothing a listing needs; skipping them keeps the loaded runs packed.
      digest.observe(scanned.log.eventsWithoutChunks(0))
      const tracker = new ResumeFoldTracker(scanned.header.seedLength ?? 0)
      scanned.log.forEachEvent(0, (event) => tracker.observe(event))
      tracker.skip(scanned.log.length - tracker.length)
      const checkpointer = new JsonlCheckpointer(this.dir, path, scanned.header, tracker)
      if (scanned.tailRepair === undefined) checkpointer.checkpointLoaded(file.fd, scanned.committedBytes, scanned.content, digest)
      const texts = this.#content.resume(id, scanned.log.eventsWithoutChunks(0), scanned.committedBytes)
      const writer = new JsonlWriter(scanned.header, path, file, scanned.committedBytes, scanned.log.length, lock, this.#policy, { index: this.#index, digest, content: scanned.content, texts }, checkpointer)
      this.#index.mark()
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

  /** Forks by copying the parent's witnessed lines, or declines (see {@link SessionStore.copyPrefix}, ./fork-copy.ts). */
  async copyPrefix(parentId: string, at: number | undefined, child: (point: ForkPoint) => ForkChild): Promise<string | undefined> {
    this.#ensureDir()
    return copyJsonlPrefix({ dir: this.dir, index: this.#index, pack: this.#pack, pathOf: (id) => this.pathOf(id), lockPath: (id) => this.#lockPath(id) }, parentId, at, child)
  }

  async has(id: string): Promise<boolean> {
    return existsSync(this.pathOf(id))
  }

  /**
   * Sessions newest first, through the session index beside the logs (`<dir>/.index/`): a page of the newest
   * sessions costs about the same with 100 or 100,000 sessions in the folder (the index is read backwards only
   * as far as the page needs; each listed log is only `stat`ed). `search` reads every index entry (never a
   * log). When the index is missing, damaged or stale (a log the index does not know, a log deleted by hand),
   * it is rebuilt or reconciled from the folder first and the result's `indexNote` says so.
   */
  async list(options?: SessionListOptions): Promise<SessionList> {
    if (!existsSync(this.dir)) return sessionList([], 0)
    if (options?.grep !== undefined) return grepListing(this.#index, this.#content, options)
    return this.#index.list(options)
  }

  /** Rebuilds the session index from every log in the folder (`ledgerloop sessions --reindex`). */
  async reindex(): Promise<SessionList> {
    if (!existsSync(this.dir)) return sessionList([], 0)
    this.#content.clear()
    return this.#index.rebuild()
  }

  async close(): Promise<void> {
    const results = await Promise.allSettled([...this.#writers].map((w) => w.close()))
    this.#index.close()
    await this.checkpointBlobs.close()
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed !== undefined) throw failed.reason
  }

  #lockPath(id: string): string {
    return join(this.dir, `${id}.lock`)
  }

  #ensureDir(): void {
    if (this.#dirChecked) return
    ensurePrivateDir(this.dir)
    this.#index.initialize()
    this.#dirChecked = true
  }

  #track(writer: JsonlWriter): JsonlWriter {
    this.#writers.add(writer)
    writer.onClosed = () => this.#writers.delete(writer)
    return writer
  }

  // The one judgement of a stored log (loadSessionFile), with the session index as the witness of what was
  // committed: a file cut in the middle, or edited, is refused here, before open() truncates anything. The index
  // is read before the file: a live writer records only bytes already written, so the file read afterwards
  // holds at least what the entry vouches for (read the other way round, it might hold less).
  async #scan(file: FileHandle, path: string, id: string): Promise<LoadedSessionFile> {
    const committed = committedEvidence(this.#index, id)
    const bytes = await file.readFile()
    return loadSessionFile(bytes, path, id, { ...(this.#knownTypes !== undefined ? { knownTypes: this.#knownTypes } : {}), ...(committed !== undefined ? { committed } : {}) })
  }
}

/**
 * How a writer keeps the session index: the store's index, the running digest of this session's log (for the
 * listing), and the running SHA-256 of its bytes (the content witness loading checks).
 */
interface WriterIndexing {
  readonly index: SessionIndex
  readonly digest: SessionDigest
  readonly content: ContentDigest
  /** The session's content index journal (`list({ grep })`), when it could be started. */
  readonly texts?: ContentWriter | undefined
}

/** One open session file: positional appends at the committed length, group-committed. */
class JsonlWriter implements CompactSessionWriter {
  readonly compactRecords = true
  onClosed: (() => void) | undefined
  readonly #header: SessionHeader
  readonly #path: string
  readonly #policy: WritePolicy
  readonly #file: FileHandle
  readonly #lock: FileLock
  readonly #commit: SequencedCommit
  /** Text deltas on their way into a packed row (see {@link append}). */
  readonly #texts: TextRunBuffer
  readonly #indexing: WriterIndexing
  #size: number
  #indexedSize: number
  #closing: Promise<void> | undefined
  /** Writes the resume checkpoint after a batch that ends a turn. */
  readonly #checkpointer: JsonlCheckpointer

  constructor(header: SessionHeader, path: string, file: FileHandle, size: number, nextSeq: number, lock: FileLock, policy: WritePolicy, indexing: WriterIndexing, checkpointer: JsonlCheckpointer) {
    this.#checkpointer = checkpointer
    this.#header = header
    this.#path = path
    this.#policy = policy
    this.#file = file
    this.#size = size
    this.#indexedSize = size
    this.#lock = lock
    this.#indexing = indexing
    this.#commit = new SequencedCommit(header.id, nextSeq, (batch) => this.#write(batch), policy.delayMs, policy.maxDelayMs)
    this.#texts = new TextRunBuffer(
      policy.delayMs,
      (event) => this.#commit.append(event),
      (run, count) => this.#commit.appendRecord(run, count),
    )
  }

  append(record: SessionRecord): void {
    if ('kind' in record) return this.#appendCompact(record)
    this.#texts.close()
    this.#commit.append(record)
  }

  // A delta joins the open packed row (the packer would build the same row from its events at flush); any
  // other chunk, and every delta when packing is off, is written as its event.
  #appendCompact(record: ChunkRecord | TextRecord): void {
    const { seq, time, turn, step } = record
    if (record.kind === 'chunk') return this.append(chunkEvent(seq, time, turn, step, record.chunk))
    if (!this.#policy.pack) return this.append(chunkEvent(seq, time, turn, step, Object.freeze({ type: record.type, index: record.index, text: record.text })))
    if (this.#commit.stopped) throw new HarnessError(`session '${this.#header.id}' writer is closed`, 'SESSION_CLOSED')
    const expected = this.#texts.nextSeq ?? this.#commit.nextSeq
    if (seq !== expected) throw new HarnessError(`append of seq ${seq} to session '${this.#header.id}' whose next seq is ${expected}`, 'SESSION_CORRUPT')
    this.#texts.add(seq, time, turn, step, record.type, record.index, record.text)
  }

  // Interval mode: the batch goes to disk on the timer, not now (unless the last write failed: then the
  // caller waits for the retry and hears about a failure).
  flush(): Promise<void> {
    this.#texts.close()
    if (this.#policy.interval && !this.#commit.failed) return Promise.resolve()
    return this.#commit.flush()
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      try {
        this.#texts.close()
        await this.#commit.stop()
      } finally {
        await this.#file.close().catch(() => {})
        this.#indexing.texts?.close()
        this.#lock.release()
        if (this.#size !== this.#indexedSize) this.#index()
        this.#indexing.index.mark()
        this.onClosed?.()
      }
    })()
    return this.#closing
  }

  /**
   * After an open from a resume checkpoint that hashed nothing: `prefix` (the digest of the log's first bytes,
   * made when they were read and checked against the witnesses), fed what this writer appended since, becomes
   * the running digest, so the index and the next checkpoint get a witness of everything again. Reads only what
   * follows the prefix; a failed read leaves the witness that still holds.
   */
  catchUpContent(prefix: ContentDigest): void {
    const { content } = this.#indexing
    if (this.#closing !== undefined || content.bytes === this.#size || prefix.bytes > this.#size) return
    try {
      const rest = Buffer.allocUnsafe(this.#size - prefix.bytes)
      for (let done = 0; done < rest.length; ) {
        const n = readSync(this.#file.fd, rest, done, rest.length - done, prefix.bytes + done)
        if (n === 0) return
        done += n
      }
      prefix.update(rest, rest.length)
      content.adopt(prefix)
    } catch {
      // the frozen witness goes on
    }
  }

  #index(): void {
    this.#indexedSize = this.#size
    const { index, digest, content } = this.#indexing
    // The witness covers exactly the bytes the size vouches for; a digest that lost track is left out, never wrong.
    // After an open from a resume checkpoint the running digest does not cover the file: the checkpoint's
    // witness of the first bytes still holds.
    const frozen = this.#checkpointer.frozenWitness
    const witness = content.bytes === this.#size ? { content: content.witness() } : frozen !== undefined ? { content: frozen } : {}
    index.record({ ...summaryOf(this.#header, digest, Date.now(), this.#size), ...witness })
  }

  // The one write + one fsync of a batch. The write is synchronous (a copy into the page cache, microseconds
  // for a batch); the fsync blocks or runs on the thread pool as configured (the callback API: FileHandle's
  // promise API costs noticeably more per call). Positional writes at
  // the committed length make a retry after a failure rewrite the same bytes in place; the truncate undoes a
  // partial write. A batch that ends a turn updates the session index once it is on disk.
  async #write(batch: readonly SessionEvent[]): Promise<void> {
    const text = encodeRecordLines(batch, this.#policy.pack)
    const length = Buffer.byteLength(text, 'utf8')
    try {
      const fd = this.#file.fd
      // The string goes to the kernel without a Buffer of our own; a short write (rare: a full disk) finishes
      // from an encoded copy.
      const written = writeSync(fd, text, this.#size, 'utf8')
      if (written < length) {
        const bytes = Buffer.from(text, 'utf8')
        for (let done = written; done < length; ) done += writeSync(fd, bytes, done, length - done, this.#size + done)
      }
      if (this.#policy.blockingSync) fsyncSync(fd)
      else await new Promise<void>((resolve, reject) => fsync(fd, (error) => (error === null ? resolve() : reject(error))))
    } catch (error) {
      await this.#file.truncate(this.#size).catch(() => {})
      throw new HarnessError(`could not write session '${this.#header.id}' to ${this.#path}: ${(error as Error).message}`, 'SESSION_WRITE_FAILED', { cause: error })
    }
    this.#size += length
    // The text just written is what the digest takes: no re-read, no second encoding into a Buffer of ours.
    this.#indexing.content.update(text, length)
    this.#indexing.texts?.committed(batch, this.#size)
    if (this.#indexing.digest.observe(batch)) this.#index()
    this.#checkpointer.committed(batch, text, this.#size, this.#indexing.content, this.#indexing.digest, this.#file.fd)
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

/**
 * What the session index says was committed to a session's log: its writers record the log's size, ended turns
 * and a SHA-256 of those bytes once a batch that ends a turn is on disk (and at close), so the log can only have
 * grown since, its first bytes unchanged.
 * @internal
 */
export function committedEvidence(index: SessionIndex, id: string): CommittedEvidence | undefined {
  const entry = index.find(id)
  if (entry === undefined || entry.problem !== undefined) return undefined
  return {
    ...(entry.sizeBytes !== undefined ? { bytes: entry.sizeBytes } : {}),
    ...(entry.turns !== undefined ? { turns: entry.turns } : {}),
    ...(isContentWitness(entry.content) ? { content: entry.content } : {}),
    source: `the session index ${index.path}`,
  }
}

function stored(loaded: LoadedSessionFile): StoredSession {
  return storedSession(loaded.header, loaded.verified, loaded.tailRepair)
}


function notFound(id: string, path: string): HarnessError {
  return new HarnessError(`no session '${id}' (no file ${path})`, 'SESSION_NOT_FOUND')
}
