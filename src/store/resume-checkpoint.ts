// The resume checkpoint record (docs/stores.md, "Resume checkpoints"): the fold of a log's first events at a turn
// boundary, with what ties it to the stored log it summarises. Never a truth of its own: a checkpoint that does
// not match its log is ignored, and the log always loads without one.
import { createHash } from 'node:crypto'
import { fstatSync } from 'node:fs'
import type { ResumeFoldState } from '../session/resume-fold.js'
import { freezeParsed } from './chunk-runs.js'
import type { ContentWitness } from './content-witness.js'
import { isContentWitness } from './content-witness.js'
import type { DigestFields } from './session-digest.js'

/** Format version of a resume checkpoint; another version is ignored (and rewritten at the next turn end). */
export const RESUME_CHECKPOINT_VERSION = 1

/**
 * Where the checkpoint's last event is stored, and a digest of how it is stored: a checkpoint whose anchor does
 * not read back as this is stale or belongs to another log, and is ignored.
 */
export interface CheckpointAnchor {
  /** JSONL: the byte offset just after the anchor line (where the tail starts). SQLite: the anchor row's seq. */
  readonly at: number
  /** Byte length of the stored line (without its newline). */
  readonly lineBytes: number
  /** Lower-case hex SHA-256 of the stored line. */
  readonly sha256: string
}

/** A resume checkpoint as stored (one JSON document). */
export interface ResumeCheckpoint {
  readonly ledgerloop: 'resume'
  readonly version: number
  /** Session id. */
  readonly id: string
  /** SHA-256 of the session's stored header record. */
  readonly header: string
  readonly anchor: CheckpointAnchor
  /** The writer's content witness of the log's first bytes when it wrote the checkpoint (JSONL), if it had one. */
  readonly content?: ContentWitness
  /**
   * JSONL: the log file as the writer left it right after the anchor line was on disk (its inode and change
   * time, when its size was the anchor's `at`). An open that finds the file so has nothing to hash at once.
   */
  readonly file?: FileIdentity
  /** The listing digest as of the cut (first prompt, turns, last reason, quarantine). */
  readonly digest: DigestFields
  readonly fold: ResumeFoldState
}

/**
 * A file's identity as `fstat` gives it, in decimal strings (inode and change time in nanoseconds exceed what a
 * double holds). Any write, truncate, rename over or permission change gives the file another change time, and a
 * user cannot set it back (unlike the modification time), so an equal identity and size mean nobody changed it.
 */
export interface FileIdentity {
  readonly ino: string
  readonly ctimeNs: string
}

/** The identity of the open file `fd`, and its size. */
export function fileIdentityOf(fd: number): FileIdentity & { readonly size: number } {
  const stat = fstatSync(fd, { bigint: true })
  return { ino: String(stat.ino), ctimeNs: String(stat.ctimeNs), size: Number(stat.size) }
}

/** SHA-256 of a stored line, lower-case hex. */
export function lineDigest(line: string | Uint8Array): string {
  return createHash('sha256').update(line).digest('hex')
}

/**
 * The checkpoint's text: the SHA-256 of its JSON on the first line, the JSON on the second, so a checkpoint
 * damaged anywhere (a flipped byte in a message it keeps) is found before anything in it is used.
 */
export function encodeCheckpoint(checkpoint: ResumeCheckpoint): string {
  const json = JSON.stringify(checkpoint)
  return `${lineDigest(json)}\n${json}\n`
}

/**
 * Reads a checkpoint's text: the checkpoint, or undefined when it is not one this version writes (garbage, a
 * torn write, another version, another session, a shape that does not hold). Never throws.
 */
export function parseCheckpoint(text: string, id: string): ResumeCheckpoint | undefined {
  const newline = text.indexOf('\n')
  if (newline !== 64 || !text.endsWith('\n')) return undefined
  const json = text.slice(newline + 1, text.length - 1)
  if (lineDigest(json) !== text.slice(0, newline)) return undefined
  let value: unknown
  try {
    value = JSON.parse(json)
  } catch {
    return undefined
  }
  if (!isRecord(value) || value.ledgerloop !== 'resume' || value.version !== RESUME_CHECKPOINT_VERSION || value.id !== id || typeof value.header !== 'string') return undefined
  const { anchor, digest, fold, content } = value
  if (!isRecord(anchor) || !isCount(anchor.at) || !isCount(anchor.lineBytes) || typeof anchor.sha256 !== 'string') return undefined
  if (content !== undefined && !isContentWitness(content)) return undefined
  const file = value.file
  if (file !== undefined && !(isRecord(file) && typeof file.ino === 'string' && /^\d+$/.test(file.ino) && typeof file.ctimeNs === 'string' && /^\d+$/.test(file.ctimeNs))) return undefined
  if (!isRecord(digest) || !isCount(digest.turns) || !(digest.lastReason === null || typeof digest.lastReason === 'string')) return undefined
  if (!isFold(fold)) return undefined
  return value as unknown as ResumeCheckpoint
}

function isFold(value: unknown): value is ResumeFoldState {
  if (!isRecord(value) || !isCount(value.length) || value.length < 1 || !isCount(value.lastTurn) || !isCount(value.generation)) return false
  const length = value.length
  if (!Array.isArray(value.nodes) || !value.nodes.every((n) => isCount(n) && n < length)) return false
  if (!isRecord(value.lastOfType) || !Object.values(value.lastOfType).every((n) => isCount(n) && n < length)) return false
  if (value.lastOfType['turn/end'] !== length - 1) return false
  if (!Array.isArray(value.kept) || !value.kept.every((e) => isRecord(e) && typeof e.type === 'string' && isCount(e.seq) && (e.seq as number) < length)) return false
  const inbox = value.inbox
  if (!isRecord(inbox) || !Array.isArray(inbox.nextTurn) || !Array.isArray(inbox.nextStep) || !Array.isArray(inbox.keys)) return false
  const input = value.turnInput
  if (input !== undefined && (!isRecord(input) || !isCount(input.start) || !Array.isArray(input.claims) || !Array.isArray(input.committed) || !Array.isArray(input.restored))) return false
  return true
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0
}

/** The same fold, as JSON text with a fixed key order: two folds agree when their texts are equal. */
export function foldText(fold: ResumeFoldState): string {
  return JSON.stringify([fold.length, fold.lastTurn, fold.nodes, fold.generation, Object.entries(fold.lastOfType).sort(), fold.kept, fold.inbox, fold.turnInput ?? null])
}

/**
 * A parsed checkpoint's fold made what a loaded log holds: its kept events, inbox and turn input deep-frozen. The
 * surface's node list stays a plain array that nothing writes to (`Surface.restore` copies it, {@link foldText}
 * reads it): a frozen array of tens of thousands of seqs makes V8 copy it element by element (about 20 ms of a
 * resume at 62,600 messages, against well under 1 ms for the plain array).
 * @internal
 */
export function frozenFoldOf(fold: ResumeFoldState): ResumeFoldState {
  const { nodes, ...rest } = fold
  return Object.freeze({ ...freezeParsed(rest), nodes })
}
