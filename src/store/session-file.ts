import { isAscii } from 'node:buffer'
import { HarnessError } from '../errors/harness-error.js'
import type { EventLog } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import { SESSION_FORMAT_VERSION, type SessionHeader } from '../session/session.js'
import { packChunkRuns } from './chunk-runs.js'
import { LogLoader } from './log-loader.js'
import type { SessionSummary, TailRepair } from './types.js'

/** Marks the first line of a session file (and tells it from any other JSONL). */
export const HEADER_TAG = 'session'

/** The header record: the first line of a `<id>.jsonl` file. */
export function headerRecord(header: SessionHeader): string {
  return JSON.stringify({
    ledgerloop: HEADER_TAG,
    version: header.version,
    id: header.id,
    createdAt: header.createdAt,
    ...(header.cwd !== undefined ? { cwd: header.cwd } : {}),
    ...(header.parentSession !== undefined ? { parentSession: header.parentSession } : {}),
    ...(header.seedLength !== undefined ? { seedLength: header.seedLength } : {}),
    ...(header.parentCallId !== undefined ? { parentCallId: header.parentCallId } : {}),
    ...(header.agentProfile !== undefined ? { agentProfile: header.agentProfile } : {}),
    ...(header.delegationDepth !== undefined ? { delegationDepth: header.delegationDepth } : {}),
  })
}

/** The parent/child link fields of a header, as a store's {@link SessionSummary} carries them. */
export function summaryLinks(header: SessionHeader): Pick<SessionSummary, 'parentSession' | 'parentCallId' | 'agentProfile' | 'delegationDepth'> {
  return {
    ...(header.parentSession !== undefined ? { parentSession: header.parentSession } : {}),
    ...(header.parentCallId !== undefined ? { parentCallId: header.parentCallId } : {}),
    ...(header.agentProfile !== undefined ? { agentProfile: header.agentProfile } : {}),
    ...(header.delegationDepth !== undefined ? { delegationDepth: header.delegationDepth } : {}),
  }
}

/**
 * Reads a header record back into a {@link SessionHeader}.
 * @param where - "file:line" for errors
 * @throws HarnessError `SESSION_CORRUPT`, or `SESSION_VERSION` for another format version
 */
export function parseHeaderRecord(text: string, expectedId: string | undefined, where: string): SessionHeader {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new HarnessError(`${where}: the header line is not JSON (not a ledgerloop session file, or damaged)`, 'SESSION_CORRUPT')
  }
  const h = value as Record<string, unknown>
  if (typeof value !== 'object' || value === null || h.ledgerloop !== HEADER_TAG) {
    throw new HarnessError(`${where}: the first line is not a ledgerloop session header`, 'SESSION_CORRUPT')
  }
  if (h.version !== SESSION_FORMAT_VERSION) {
    throw new HarnessError(
      `${where}: session format version ${JSON.stringify(h.version)} is not supported; this build of ledgerloop reads version ${SESSION_FORMAT_VERSION} (was the file written by another version?)`,
      'SESSION_VERSION',
    )
  }
  if (typeof h.id !== 'string' || (expectedId !== undefined && h.id !== expectedId)) {
    throw new HarnessError(`${where}: the header names session ${JSON.stringify(h.id)}, expected '${expectedId}'`, 'SESSION_CORRUPT')
  }
  if (!Number.isSafeInteger(h.createdAt) || (h.createdAt as number) < 0) throw new HarnessError(`${where}: the header's createdAt is not a time`, 'SESSION_CORRUPT')
  const optional = (key: 'cwd' | 'parentSession' | 'parentCallId' | 'agentProfile'): string | undefined => {
    const v = h[key]
    if (v !== undefined && typeof v !== 'string') throw new HarnessError(`${where}: the header's ${key} is not a string`, 'SESSION_CORRUPT')
    return v
  }
  const cwd = optional('cwd')
  const parentSession = optional('parentSession')
  const parentCallId = optional('parentCallId')
  const agentProfile = optional('agentProfile')
  const count = (key: 'seedLength' | 'delegationDepth'): number | undefined => {
    const v = h[key]
    if (v !== undefined && (!Number.isSafeInteger(v) || (v as number) < 0)) throw new HarnessError(`${where}: the header's ${key} is not a count`, 'SESSION_CORRUPT')
    return v as number | undefined
  }
  const seedLength = count('seedLength')
  const delegationDepth = count('delegationDepth')
  return Object.freeze({
    version: SESSION_FORMAT_VERSION,
    id: h.id,
    createdAt: h.createdAt as number,
    ...(cwd !== undefined ? { cwd } : {}),
    ...(parentSession !== undefined ? { parentSession } : {}),
    ...(seedLength !== undefined ? { seedLength } : {}),
    ...(parentCallId !== undefined ? { parentCallId } : {}),
    ...(agentProfile !== undefined ? { agentProfile } : {}),
    ...(delegationDepth !== undefined ? { delegationDepth } : {}),
  })
}

/**
 * Encodes events as record lines, each ending in `\n` (a record is committed only with its newline). Each
 * event is serialised exactly once, here.
 */
export function encodeRecordLines(events: readonly SessionEvent[], packChunks: boolean): string {
  if (events.length === 0) return ''
  const records = packChunks ? packChunkRuns(events) : events
  let text = ''
  for (const record of records) text += JSON.stringify(record) + '\n'
  return text
}

/** A session file read back. */
export interface ScannedSessionFile {
  readonly header: SessionHeader
  /**
   * Every committed event in compact form: packed chunk rows stay packed runs, other records are deep-frozen
   * events (a Session adopts both without copying).
   */
  readonly log: EventLog
  /** Byte length of the committed part: where the next append goes (the torn tail, if any, starts here). */
  readonly committedBytes: number
  /** Set when a torn or garbage tail was cut off. */
  readonly tailRepair?: TailRepair
  /** "file:line" of the record holding `seq`. */
  locate(seq: number): string
}

const NEWLINE = 0x0a
/**
 * A file is decoded a block of about this many bytes at a time (each block ends at a newline). Small enough for
 * V8's young generation (a large-object string would stay until a full collection): about 50 MiB less peak RSS
 * on a 97 MB file than 1 MiB blocks.
 */
const BLOCK_BYTES = 1 << 16

/**
 * Parses a whole session file. Only a damaged TAIL is repaired (in memory; the caller truncates the file when
 * it writes): a last line without its newline (a write cut short), or a run of lines up to the end of which
 * none is a record (garbage). A defective line followed by any valid record is corruption and refused with
 * `SESSION_CORRUPT` naming the file and line — history is never dropped silently. Every event must continue
 * the seq of the one before.
 */
export function scanSessionFile(bytes: Buffer, path: string, expectedId: string | undefined): ScannedSessionFile {
  const headerEnd = bytes.indexOf(NEWLINE)
  if (headerEnd < 0) throw new HarnessError(`${path}:1: the header line is incomplete`, 'SESSION_CORRUPT')
  const header = parseHeaderRecord(bytes.toString('utf8', 0, headerEnd), expectedId, `${path}:1`)
  const lastNewline = bytes.lastIndexOf(NEWLINE)
  const loader = new LogLoader()
  const recordStarts: number[] = [] // first seq of each record, for locate()
  let firstDefect: { index: number; reason: string } | undefined
  let lines = 0 // complete record lines so far
  // The complete lines are decoded a block at a time (no string of the whole file, no array of every line); a
  // block is cut at a newline, so it decodes exactly as the whole would. An ASCII block (JSON.stringify writes
  // ASCII for ASCII text) decodes as latin1, a plain copy, instead of through the UTF-8 decoder.
  for (let start = headerEnd + 1; start <= lastNewline; ) {
    let end = lastNewline
    if (lastNewline - start > BLOCK_BYTES) {
      end = bytes.lastIndexOf(NEWLINE, start + BLOCK_BYTES)
      if (end < start) end = bytes.indexOf(NEWLINE, start + BLOCK_BYTES) // a line longer than a block
    }
    const text = bytes.toString(isAscii(bytes.subarray(start, end + 1)) ? 'latin1' : 'utf8', start, end + 1)
    start = end + 1
    for (let p = 0; p < text.length; ) {
      const q = text.indexOf('\n', p)
      const line = text.slice(p, q)
      p = q + 1
      const i = lines++
      const lineNo = i + 2
      const expected = loader.length
      if (loader.addLine(line) !== undefined) {
        if (firstDefect !== undefined) {
          throw new HarnessError(`${path}:${firstDefect.index + 2}: ${firstDefect.reason}, and valid records follow it: the file is corrupt`, 'SESSION_CORRUPT')
        }
        recordStarts.push(expected)
        continue
      }
      let record: unknown
      try {
        record = JSON.parse(line)
      } catch {
        record = undefined
      }
      if (typeof record !== 'object' || record === null || Array.isArray(record)) {
        firstDefect ??= { index: i, reason: `line ${lineNo} is not a JSON record` }
        continue
      }
      if (firstDefect !== undefined) {
        throw new HarnessError(`${path}:${firstDefect.index + 2}: ${firstDefect.reason}, and valid records follow it: the file is corrupt`, 'SESSION_CORRUPT')
      }
      let first: number
      try {
        first = loader.add(record)
      } catch (error) {
        throw new HarnessError(`${path}:${lineNo}: ${(error as Error).message}`, 'SESSION_CORRUPT')
      }
      if (first !== expected) throw new HarnessError(`${path}:${lineNo}: seq ${first} where ${expected} was expected`, 'SESSION_CORRUPT')
      recordStarts.push(expected)
    }
  }
  const log = loader.finish()
  let tailRepair: TailRepair | undefined
  const tornBytes = bytes.length - (lastNewline + 1)
  let committedBytes = lastNewline + 1
  if (firstDefect !== undefined) {
    committedBytes = offsetOfLine(bytes, headerEnd + 1, firstDefect.index)
    tailRepair = { line: firstDefect.index + 2, bytes: bytes.length - committedBytes, reason: `${firstDefect.reason} and nothing valid follows it (garbage tail)` }
  } else if (tornBytes > 0) {
    tailRepair = { line: lines + 2, bytes: tornBytes, reason: `line ${lines + 2} has no newline (a write cut short)` }
  }
  const locate = (seq: number): string => {
    let lo = 0
    let hi = recordStarts.length - 1
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if ((recordStarts[mid] as number) <= seq) lo = mid
      else hi = mid - 1
    }
    return `${path}:${recordStarts.length === 0 ? 1 : lo + 2}`
  }
  return { header, log, committedBytes, ...(tailRepair !== undefined ? { tailRepair } : {}), locate }
}

// Byte offset where the `index`-th record line (0-based, after the header) starts. Scans raw bytes rather than
// trusting decoded string lengths, which an invalid UTF-8 sequence would skew.
function offsetOfLine(bytes: Buffer, start: number, index: number): number {
  let offset = start
  for (let i = 0; i < index; i++) offset = bytes.indexOf(NEWLINE, offset) + 1
  return offset
}
