// JsonlStore's fast fork (SessionStore.copyPrefix): the child's file is its own header line, the parent's record
// lines of seqs 0..at copied byte for byte, and the child's session/end-seed line. Nothing of the prefix is
// decoded: the copied bytes are vouched for by the session index's content witness (the SHA-256 of what the
// parent's writer committed, which loading holds the file against too), and the fork point is found from each
// line's leading `{"type":…,"seq":…` alone. Anything this cannot vouch for — no witness, bytes that differ
// from it, a point past the witnessed part or not at a record boundary, a point inside a turn, a line of a shape
// it does not know — is declined, and forkSession reads the parent event by event as before.
import { constants, existsSync } from 'node:fs'
import { open, type FileHandle } from 'node:fs/promises'
import { publishNewLog, sessionExists } from './publish-log.js'
import type { ForkChild, ForkPoint } from '../../session/fork-point.js'
import type { SessionHeader } from '../../session/session.js'
import { ContentDigest, isContentWitness, type ContentWitness } from '../content-witness.js'
import { FileLock } from '../file-lock.js'
import { checkPrivateFile } from '../file-permissions.js'
import { digestLogText, summaryOf } from '../session-digest.js'
import { LEADER_CHARS, readLeader } from '../record-leader.js'
import { encodeRecordLines, headerRecord, parseHeaderRecord } from '../session-file.js'
import type { SessionIndex } from './session-index.js'

/** What {@link copyJsonlPrefix} needs of its store. */
export interface JsonlForkContext {
  /** The session directory (already ensured private). */
  readonly dir: string
  readonly index: SessionIndex
  /** Whether the store packs chunk runs (for the child's own tail lines). */
  readonly pack: boolean
  /** A session's file (checks the id). */
  pathOf(id: string): string
  /** A session's lock file. */
  lockPath(id: string): string
}

/** The fork point found in a parent's witnessed bytes. */
interface Located {
  readonly point: ForkPoint
  /** The record lines to copy: from just after the header line to the end of the line holding `at`. */
  readonly prefix: Buffer
  /** The same lines with the header's newline before them (what {@link digestLogText} reads line starts from). */
  readonly digestable: Buffer
}

const NEWLINE = 0x0a
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW

/**
 * Forks `parentId` at `at` (default: its last seq) by copying its stored lines, when the fork point lies in the
 * part of the log the session index witnesses and is a turn boundary. The child is written under a temporary
 * name, fsynced and published with link() (never replacing a file), as `create` writes a session.
 * @returns the child's id, or undefined when declined (nothing was written)
 * @throws HarnessError `SESSION_EXISTS` when the child's id is taken
 */
export async function copyJsonlPrefix(ctx: JsonlForkContext, parentId: string, at: number | undefined, child: (point: ForkPoint) => ForkChild): Promise<string | undefined> {
  const path = ctx.pathOf(parentId)
  const entry = ctx.index.find(parentId)
  if (entry === undefined || entry.problem !== undefined || !isContentWitness(entry.content)) return undefined
  const located = await locate(path, parentId, entry.content, at)
  if (located === undefined) return undefined
  const made = child(located.point)
  await publish(ctx, made, located)
  return made.header.id
}

// Reads the witnessed bytes of the parent and finds the line that ends at the fork point.
async function locate(path: string, id: string, witness: ContentWitness, at: number | undefined): Promise<Located | undefined> {
  const read = await readWitnessed(path, witness.bytes)
  if (read === undefined) return undefined
  const { bytes, fileBytes } = read
  const content = new ContentDigest()
  content.update(bytes, bytes.length)
  if (content.witness().sha256 !== witness.sha256 || bytes[bytes.length - 1] !== NEWLINE) return undefined
  const headerEnd = bytes.indexOf(NEWLINE)
  let parent: SessionHeader
  try {
    parent = parseHeaderRecord(bytes.toString('utf8', 0, headerEnd), id, `${path}:1`)
  } catch {
    return undefined
  }
  // Each record line's first seq, end offset, type, and whether it is a packed run (its length known only from
  // the next line's first seq).
  const starts: number[] = []
  const ends: number[] = []
  const types: string[] = []
  const runs: boolean[] = []
  let expected = 0
  let afterRun = false
  for (let start = headerEnd + 1; start < bytes.length; ) {
    const end = bytes.indexOf(NEWLINE, start) + 1
    const leader = readLeader(bytes.toString('latin1', start, Math.min(end, start + LEADER_CHARS)))
    if (leader === undefined) return undefined
    const { type, seq, run } = leader
    if (afterRun ? seq < expected : seq !== expected) return undefined
    starts.push(seq)
    ends.push(end)
    types.push(type)
    runs.push(run)
    expected = seq + 1
    afterRun = run
    start = end
  }
  const last = starts.length - 1
  if (last < 0 || runs[last] === true) return undefined
  const length = (starts[last] as number) + 1
  // The default point is the log's end: only when every byte of the file is witnessed (no later lines, no tail).
  const point = at ?? (fileBytes === bytes.length ? length - 1 : -1)
  if (!Number.isSafeInteger(point) || point < 0 || point >= length) return undefined
  let line = last
  while (line > 0 && (starts[line] as number) > point) line--
  if (runs[line] === true || starts[line] !== point) return undefined
  for (let i = line; i >= 0; i--) {
    if (types[i] === 'turn/end') break
    if (types[i] === 'turn/start') return undefined
  }
  const end = ends[line] as number
  return {
    point: { parent, at: point, lastType: types[line] as string },
    prefix: bytes.subarray(headerEnd + 1, end),
    digestable: bytes.subarray(headerEnd, end),
  }
}

// The first `witnessed` bytes of the file, and the file's size; undefined when it holds fewer.
async function readWitnessed(path: string, witnessed: number): Promise<{ bytes: Buffer; fileBytes: number } | undefined> {
  let file: FileHandle
  try {
    file = await open(path, READ_FLAGS)
  } catch {
    return undefined
  }
  try {
    const stats = await file.stat()
    checkPrivateFile(path, stats)
    if (stats.size < witnessed || witnessed === 0) return undefined
    const bytes = Buffer.allocUnsafe(witnessed)
    for (let done = 0; done < witnessed; ) {
      const { bytesRead } = await file.read(bytes, done, witnessed - done, done)
      if (bytesRead === 0) return undefined
      done += bytesRead
    }
    return { bytes, fileBytes: stats.size }
  } catch {
    return undefined
  } finally {
    await file.close()
  }
}

// Writes the child complete under a temporary name, fsyncs it, publishes it with link() (which refuses an existing
// file) and fsyncs the directory; then the session index learns of it, its content witnessed, as after create.
async function publish(ctx: JsonlForkContext, made: ForkChild, located: Located): Promise<void> {
  const { header, tail } = made
  const path = ctx.pathOf(header.id)
  if (existsSync(path)) throw sessionExists(header.id, path)
  const lock = FileLock.acquire(ctx.lockPath(header.id), header.id)
  try {
    const head = headerRecord(header) + '\n'
    const rest = encodeRecordLines(tail, ctx.pack)
    const parts = [Buffer.from(head, 'utf8'), located.prefix, Buffer.from(rest, 'utf8')]
    await publishNewLog(ctx.dir, header.id, path, parts)
    const content = new ContentDigest()
    for (const part of parts) content.update(part, part.length)
    // The listing's digest of the copied lines (found by their leaders, as the index's rebuild reads a log) and
    // of the tail: what create's digest of every seed event gives.
    const digest = digestLogText(located.digestable)
    digest.observe(tail)
    const size = parts.reduce((sum, part) => sum + part.length, 0)
    ctx.index.record({ ...summaryOf(header, digest, Date.now(), size), content: content.witness() }, true)
    ctx.index.mark()
  } finally {
    lock.release()
  }
}



