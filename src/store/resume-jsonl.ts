// Resume checkpoints of the JSONL store (docs/stores.md, "Resume checkpoints"): `<id>.resume.json` beside
// `<id>.jsonl`, written by the writer after a batch that ends a turn is on disk, read by `open` to load only the
// tail. The log stays the only truth: a checkpoint that does not match it is ignored, and deleting it only makes
// the next open read the whole log.
import { closeSync, constants, fstatSync, openSync, readSync, renameSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { HarnessError } from '../errors/harness-error.js'
import { EventLog } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import { LogGrammar } from '../session/log-grammar.js'
import { foldOfCheckpoint, lazyPrefixOf, resumeFoldOf, ResumeFoldTracker, type ResumeFoldState } from '../session/resume-fold.js'
import { Session, type SessionHeader } from '../session/session.js'
import type { VerifiedLog } from '../session/verified-log.js'
import { ContentDigest, type ContentWitness } from './content-witness.js'
import { judgeRecords, LogJudgement, type CommittedEvidence } from './log-judgement.js'
import { LogLoader } from './log-loader.js'
import { encodeCheckpoint, fileIdentityOf, foldText, frozenFoldOf, lineDigest, parseCheckpoint, type ResumeCheckpoint } from './resume-checkpoint.js'
import type { SessionDigest } from './session-digest.js'
import { loadSessionFile, scanSessionFile } from './session-file.js'

const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW
/** The longest header line a checkpoint is checked against (a longer one: the checkpoint is not used). */
const MAX_HEADER_BYTES = 65_536

/** Path of a session's resume checkpoint. */
export function checkpointPathOf(dir: string, id: string): string {
  return join(dir, `${id}.resume.json`)
}

/**
 * What a writer keeps to write checkpoints: the fold of what it committed so far, and what the next checkpoint
 * is tied to. Fed every committed batch.
 * @internal
 */
export class JsonlCheckpointer {
  readonly #dir: string
  readonly #path: string
  readonly #header: SessionHeader
  readonly tracker: ResumeFoldTracker
  /** The content witness to record while the writer's running digest does not cover the file (after a checkpoint open). */
  readonly #frozen: ContentWitness | undefined
  #headerDigest: string | undefined
  /** False after a write failed: the writer goes on without checkpoints (the log never depended on them). */
  #enabled = true

  constructor(dir: string, path: string, header: SessionHeader, tracker: ResumeFoldTracker, frozen?: ContentWitness, headerDigest?: string) {
    this.#dir = dir
    this.#path = path
    this.#header = header
    this.tracker = tracker
    this.#frozen = frozen
    this.#headerDigest = headerDigest
  }

  /** The witness for the session index while the running digest lost track (undefined when it covers the file). */
  get frozenWitness(): ContentWitness | undefined {
    return this.#frozen
  }

  /**
   * Follows a batch that is now on disk, and when it ends a turn writes the checkpoint of that boundary.
   * @param text - the batch's lines as written; `size` the file's length after them
   */
  committed(batch: readonly SessionEvent[], text: string, size: number, content: ContentDigest, digest: SessionDigest, fd: number): void {
    const tracker = this.tracker
    for (const record of batch) if (typeof (record as { seq?: unknown }).seq === 'number') tracker.observe(record)
    const last = batch[batch.length - 1] as { type?: unknown; seq?: unknown } | undefined
    if (!this.#enabled || last?.type !== 'turn/end' || last.seq !== tracker.length - 1) return
    const line = text.slice(text.lastIndexOf('\n', text.length - 2) + 1, text.length - 1)
    this.#write(line, size, content.bytes === size ? content.witness() : this.#frozen, digest, fd)
  }

  /**
   * Writes the checkpoint of a log loaded whole that ends at a turn boundary (a log written before checkpoints,
   * or whose checkpoint did not match), so the next open reads only what follows.
   */
  checkpointLoaded(fd: number, size: number, content: ContentDigest, digest: SessionDigest): void {
    if (!this.#enabled || !this.tracker.atBoundary) return
    try {
      const from = Math.max(0, size - MAX_HEADER_BYTES)
      const end = readAt(fd, from, size - from)
      const start = end.lastIndexOf(0x0a, end.length - 2)
      if (start < 0 || end[end.length - 1] !== 0x0a) return
      const line = end.toString('utf8', start + 1, end.length - 1)
      const parsed = JSON.parse(line) as { type?: unknown; seq?: unknown }
      if (parsed.type !== 'turn/end' || parsed.seq !== this.tracker.length - 1) return
      this.#write(line, size, content.bytes === size ? content.witness() : this.#frozen, digest, fd)
    } catch {
      // No checkpoint this time: the next turn end writes one.
    }
  }

  #write(line: string, size: number, witness: ContentWitness | undefined, digest: SessionDigest, fd: number): void {
    const fold = this.tracker.state()
    if (fold === undefined) return
    try {
      this.#headerDigest ??= lineDigest(readHeaderLine(this.#path) ?? '')
      // The file as it is now, right after the anchor line: an open that finds it unchanged hashes nothing at once.
      const { size: fileSize, ...identity } = fileIdentityOf(fd)
      const checkpoint: ResumeCheckpoint = {
        ledgerloop: 'resume',
        version: 1,
        id: this.#header.id,
        header: this.#headerDigest,
        anchor: { at: size, lineBytes: Buffer.byteLength(line, 'utf8'), sha256: lineDigest(line) },
        ...(witness !== undefined ? { content: witness } : {}),
        ...(fileSize === size ? { file: identity } : {}),
        digest: { ...(digest.firstPrompt !== undefined ? { firstPrompt: digest.firstPrompt } : {}), turns: digest.turns, lastReason: digest.lastReason, ...(digest.quarantine !== undefined ? { quarantine: digest.quarantine } : {}) },
        fold,
      }
      writeCheckpointFile(this.#dir, this.#header.id, encodeCheckpoint(checkpoint))
    } catch {
      // A checkpoint is an optimisation: a full disk or a permission problem costs the next resume speed only.
      this.#enabled = false
    }
  }
}

/**
 * Writes a checkpoint atomically: a private temporary file renamed over the old checkpoint, so a reader sees the
 * old one or the new one, never half of one. Not fsynced: after a machine crash the checkpoint may be stale or
 * torn, which reading detects (the anchor) and ignores.
 */
export function writeCheckpointFile(dir: string, id: string, text: string): void {
  const temporary = join(dir, `.${id}.resume.${process.pid}.tmp`)
  try {
    writeFileSync(temporary, text, { mode: 0o600, flag: 'w' })
    renameSync(temporary, checkpointPathOf(dir, id))
  } catch (error) {
    try {
      unlinkSync(temporary)
    } catch {
      // nothing was left behind
    }
    throw error
  }
}

/** What an open from a checkpoint gives the store (the same parts as a full load). */
export interface CheckpointOpen {
  readonly header: SessionHeader
  /** The whole log: the checkpoint's prefix unread, the tail read and checked. */
  readonly verified: VerifiedLog
  readonly committedBytes: number
  readonly checkpoint: ResumeCheckpoint
  /** The fold of everything, for the writer's next checkpoint. */
  readonly tracker: ResumeFoldTracker
  readonly headerDigest: string
  /**
   * The running digest of the file's bytes: all of them, or (when the file was found as the checkpoint's writer
   * left it, and nothing was hashed) none yet, with `frozen` the witness that still holds until it catches up.
   */
  readonly content: ContentDigest
  readonly frozen?: ContentWitness
  /** Whether the open read and hashed the whole file (false: the file was as the checkpoint's writer left it). */
  readonly hashed: boolean
}

/** How the store asks for an open from a checkpoint. */
export interface CheckpointOpenOptions {
  readonly dir: string
  readonly path: string
  readonly id: string
  /** The open session file (locked by the caller). */
  readonly fd: number
  readonly knownTypes?: readonly string[]
  /** What the session index says was committed. */
  readonly committed?: CommittedEvidence
  /**
   * Called once the unread prefix was read and checked, with the digest of its bytes (the writer's running digest
   * goes on from it).
   */
  readonly onPrefixRead?: (prefix: ContentDigest) => void
}

/**
 * Opens a session from its checkpoint: the checkpoint must parse, name this session, and match the file (its
 * header line and its anchor line, byte for byte by digest); the tail after it must read whole (no torn line) and
 * pass the same checks as a full load. Anything else gives undefined, and the caller loads the whole log (which
 * then names any real defect precisely). Never throws for a bad checkpoint.
 */
export function openFromCheckpoint(options: CheckpointOpenOptions): CheckpointOpen | undefined {
  const { dir, id, fd } = options
  const text = readPrivateText(checkpointPathOf(dir, id))
  const checkpoint = text === undefined ? undefined : parseCheckpoint(text, id)
  if (checkpoint === undefined) return undefined
  try {
    const { size, ...identity } = fileIdentityOf(fd)
    const { at, lineBytes, sha256 } = checkpoint.anchor
    const committed = options.committed
    if (at > size || (committed?.bytes !== undefined && committed.bytes > size)) return undefined
    const witnesses = [checkpoint.content, committed?.content].filter((w): w is ContentWitness => w !== undefined).sort((a, b) => a.bytes - b.bytes)
    if (witnesses.some((w) => w.bytes > size)) return undefined
    // The file as the checkpoint's writer left it (same inode, same change time, the anchor its end): nobody wrote
    // to it since, so only the header and anchor lines are read now. The content witnesses are checked when the
    // prefix is read (it is hashed then), and until then the writer records the witness that still holds.
    const unchanged = checkpoint.file !== undefined && at === size && identity.ino === checkpoint.file.ino && identity.ctimeNs === checkpoint.file.ctimeNs
    // Otherwise the whole file is read and hashed (about 1 GB/s), only the tail after the anchor is parsed: an edit
    // anywhere is still found by the content witnesses, and the writer continues the running digest without a re-read.
    const headerRead = unchanged ? readAt(fd, 0, Math.min(size, MAX_HEADER_BYTES)) : readAt(fd, 0, size)
    const headerEnd = headerRead.indexOf(0x0a)
    if (headerEnd < 0 || headerEnd > MAX_HEADER_BYTES || lineDigest(headerRead.subarray(0, headerEnd)) !== checkpoint.header) return undefined
    // The anchor line ends at `at` with its newline, and starts after the newline of the line before it.
    const anchorFrom = at - lineBytes - 2
    if (anchorFrom < headerEnd) return undefined
    const anchor = unchanged ? readAt(fd, anchorFrom, lineBytes + 2) : headerRead.subarray(anchorFrom, at)
    if (anchor[0] !== 0x0a || anchor[anchor.length - 1] !== 0x0a || lineDigest(anchor.subarray(1, anchor.length - 1)) !== sha256) return undefined
    const content = unchanged ? new ContentDigest() : ContentDigest.checked(headerRead, witnesses)
    if (content === undefined) return undefined
    const tail = unchanged ? headerRead.subarray(0, headerEnd + 1) : Buffer.concat([headerRead.subarray(0, headerEnd + 1), headerRead.subarray(at)])
    const opened = continueFromCheckpoint(options, checkpoint, tail, unchanged ? witnesses : undefined)
    if (opened === undefined) return undefined
    const frozen = unchanged ? witnesses[witnesses.length - 1] : undefined
    return { ...opened, committedBytes: size, content, hashed: !unchanged, ...(frozen !== undefined ? { frozen } : {}) }
  } catch {
    return undefined
  }
}

function continueFromCheckpoint(options: CheckpointOpenOptions, checkpoint: ResumeCheckpoint, bytes: Buffer, unchecked: readonly ContentWitness[] | undefined): Omit<CheckpointOpen, 'content' | 'committedBytes' | 'hashed'> | undefined {
  const { path, id, knownTypes } = options
  const fold = frozenFoldOf(checkpoint.fold)
  const at = checkpoint.anchor.at
  let header: SessionHeader | undefined
  const prefix = lazyPrefixOf(fold, () => {
    const read = loadCheckpointPrefix({ path, id, at, fold, header: header as SessionHeader, knownTypes, unchecked })
    if (read.digest !== undefined) options.onPrefixRead?.(read.digest)
    return read.log
  })
  const scanned = scanSessionFile(bytes, path, id, new LogLoader(prefix))
  header = scanned.header
  // A torn tail is repaired by a full load (which also names where it starts in the whole file).
  if (scanned.tailRepair !== undefined) return undefined
  const log = scanned.log
  const locate = (seq: number): string => `${path} (after the resume checkpoint, seq ${seq})`
  const start = foldOfCheckpoint(fold, EventLog.withPrefix(prefix))
  const verified = Session.verify({ id, header, log, start, ...(knownTypes !== undefined ? { knownTypes } : {}) })
  const verdict = judgeRecords(log.tailRecords, { locate, typeAt: (seq) => log.typeAt(seq), judgement: new LogJudgement('refuse'), grammar: LogGrammar.afterTurn(fold.lastTurn, fold.length) })
  const turns = checkpoint.digest.turns + verdict.endedTurns
  if (options.committed?.turns !== undefined && options.committed.turns > turns) return undefined
  const tracker = new ResumeFoldTracker(header.seedLength ?? 0, fold)
  for (const record of log.tailRecords) {
    if ('type' in record) tracker.observe(record)
    else tracker.skip(record.count)
  }
  return { header, verified, checkpoint, tracker, headerDigest: checkpoint.header }
}

/** What reading a checkpoint's prefix needs. */
interface PrefixRead {
  readonly path: string
  readonly id: string
  /** Where the prefix ends (the anchor's `at`). */
  readonly at: number
  readonly fold: ResumeFoldState
  readonly header: SessionHeader
  readonly knownTypes: readonly string[] | undefined
  /**
   * The content witnesses the open did not check, when it hashed nothing (undefined when it hashed the file):
   * the prefix's bytes must give them, and their digest goes on in the writer.
   */
  readonly unchecked: readonly ContentWitness[] | undefined
}

/**
 * Reads the prefix a checkpoint stands for, when something asks for an event in it: the file's first `at` bytes,
 * checked against the content witnesses the open left unchecked, judged as a full load judges them, and folded
 * again: it must give the checkpoint's fold.
 * @throws HarnessError `SESSION_CORRUPT` when it does not (the checkpoint was trusted for a log it did not
 *   summarise), or when the bytes do not give a witness (the log was changed in place)
 */
function loadCheckpointPrefix(read: PrefixRead): { readonly log: EventLog; readonly digest: ContentDigest | undefined } {
  const { path, id, at, fold, header, knownTypes } = read
  const fd = openSync(path, READ_FLAGS)
  let bytes: Buffer
  try {
    bytes = readAt(fd, 0, at)
  } finally {
    closeSync(fd)
  }
  // An open that hashed the file checked the witnesses then; one that hashed nothing checks them now.
  const digest = read.unchecked === undefined ? undefined : ContentDigest.checked(bytes, read.unchecked)
  if (read.unchecked !== undefined && digest === undefined) {
    throw new HarnessError(`${path}: its first bytes are not what was written (their SHA-256 differs from the content witness): the log was changed in place; restore it from a copy`, 'SESSION_CORRUPT')
  }
  const loaded = loadSessionFile(bytes, path, id, knownTypes !== undefined ? { knownTypes } : {})
  const again = loaded.tailRepair === undefined ? resumeFoldOf(loaded.verified, header.seedLength ?? 0) : undefined
  if (again === undefined || foldText(again) !== foldText(fold)) {
    throw new HarnessError(`${path}: its first ${at} bytes no longer fold to what its resume checkpoint recorded; delete ${checkpointPathOf(join(path, '..'), id)} and open the session again`, 'SESSION_CORRUPT')
  }
  return { log: loaded.verified, digest }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const out = Buffer.allocUnsafe(length)
  let done = 0
  while (done < length) {
    const n = readSync(fd, out, done, length - done, position + done)
    if (n === 0) throw new Error(`short read at ${position + done}`)
    done += n
  }
  return out
}

/** The first line of a session file (its header record), or undefined when it cannot be read. */
function readHeaderLine(path: string): Buffer | undefined {
  const fd = openSync(path, READ_FLAGS)
  try {
    const head = readAt(fd, 0, Math.min(fstatSync(fd).size, MAX_HEADER_BYTES))
    const end = head.indexOf(0x0a)
    return end < 0 ? undefined : head.subarray(0, end)
  } finally {
    closeSync(fd)
  }
}

// A checkpoint file is read only when it is a regular private file of ours (a symlink or a file others may write
// is ignored, as anything else that does not hold).
function readPrivateText(path: string): string | undefined {
  let fd: number
  try {
    fd = openSync(path, READ_FLAGS)
  } catch {
    return undefined
  }
  try {
    const stat = fstatSync(fd)
    if (!stat.isFile() || (stat.mode & 0o077) !== 0 || (process.getuid !== undefined && stat.uid !== process.getuid())) return undefined
    return readAt(fd, 0, stat.size).toString('utf8')
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}
