import { isAscii } from 'node:buffer'
import { HarnessError } from '../errors/harness-error.js'
import type { EventLog } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import { SESSION_FORMAT_VERSION, type SessionHeader } from '../session/session.js'
import type { VerifiedLog } from '../session/verified-log.js'
import { decodeRecord, packChunkRuns } from './chunk-runs.js'
import { ContentDigest } from './content-witness.js'
import { judgeCommitted, judgeRecords, LogJudgement, type CommittedEvidence } from './log-judgement.js'
import { LogLoader } from './log-loader.js'
import { validateStoredLog } from './stored-log.js'
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
    ...(header.forkedFrom !== undefined ? { forkedFrom: header.forkedFrom } : {}),
    ...(header.seedLength !== undefined ? { seedLength: header.seedLength } : {}),
    ...(header.parentCallId !== undefined ? { parentCallId: header.parentCallId } : {}),
    ...(header.agentProfile !== undefined ? { agentProfile: header.agentProfile } : {}),
    ...(header.delegationDepth !== undefined ? { delegationDepth: header.delegationDepth } : {}),
  })
}

/** The parent/child link fields of a header, as a store's {@link SessionSummary} carries them. */
export function summaryLinks(header: SessionHeader): Pick<SessionSummary, 'parentSession' | 'forkedFrom' | 'parentCallId' | 'agentProfile' | 'delegationDepth'> {
  return {
    ...(header.parentSession !== undefined ? { parentSession: header.parentSession } : {}),
    ...(header.forkedFrom !== undefined ? { forkedFrom: header.forkedFrom } : {}),
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
  // An editor that saves with a byte-order mark makes the header unreadable: say that, not "not JSON".
  if (text.charCodeAt(0) === 0xfeff) throw new HarnessError(`${where}: the file starts with a byte-order mark (U+FEFF), which a ledgerloop session file never has (saved by an editor?)`, 'SESSION_CORRUPT')
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
  const optional = (key: 'cwd' | 'parentSession' | 'forkedFrom' | 'parentCallId' | 'agentProfile'): string | undefined => {
    const v = h[key]
    if (v !== undefined && typeof v !== 'string') throw new HarnessError(`${where}: the header's ${key} is not a string`, 'SESSION_CORRUPT')
    return v
  }
  const cwd = optional('cwd')
  const parentSession = optional('parentSession')
  const forkedFrom = optional('forkedFrom')
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
    ...(forkedFrom !== undefined ? { forkedFrom } : {}),
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

/** A session file read line by line by `verify`'s judgement ({@link listSessionFile}), damaged or not. */
export interface ListedSessionFile {
  /** The header, when it could be read. */
  readonly header: SessionHeader | undefined
  /** Every event of every readable record, in file order (seqs may have gaps where records were lost). */
  readonly events: SessionEvent[]
  /** Whether the seqs run 0, 1, 2, … without a gap or a repeat. */
  readonly contiguous: boolean
  /** As {@link ScannedSessionFile.committedBytes}. */
  readonly committedBytes: number
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

/** Where {@link walkRecords} hands each record line: true when it was a record, else the line is a defect. */
interface RecordSink {
  /** The seq the next record must start at. */
  readonly expected: number
  /** Takes a line the fast path reads without JSON.parse; its first seq, or undefined to parse it instead. */
  line(line: string): number | undefined
  /** Takes one parsed record; returns [first seq, seq after it]. @throws Error on a defective record */
  record(record: object): readonly [number, number]
}

/**
 * The line rules of a session file, the one place they are decided (loading and `verify` both walk a file
 * through here, differing only in the judgement's mode): line 1 is the header (this format, this version, the
 * id the file is named after); every other line is one record, an empty line included in "not a record"; a
 * defective line followed by any valid record is corruption; a last line without its newline, or a run of
 * defective lines up to the end, is a torn or garbage tail that loading cuts off (never anything before the
 * last valid record); every record continues the seq of the one before.
 */
function walkRecords(bytes: Buffer, path: string, expectedId: string | undefined, judgement: LogJudgement, sink: RecordSink): { header: SessionHeader | undefined; committedBytes: number; tailRepair?: TailRepair; locate: (seq: number) => string } {
  let headerEnd = bytes.indexOf(NEWLINE)
  let header: SessionHeader | undefined
  if (headerEnd < 0) {
    judgement.fail(`${path}:1: ${bytes.length === 0 ? 'the file is empty (no header line)' : 'the header line is incomplete (no newline)'}`)
    headerEnd = bytes.length
  } else {
    try {
      header = parseHeaderRecord(bytes.toString('utf8', 0, headerEnd), expectedId, `${path}:1`)
    } catch (error) {
      const e = error as HarnessError
      judgement.fail(e.message, e.code === 'SESSION_VERSION' ? 'SESSION_VERSION' : 'SESSION_CORRUPT')
    }
  }
  const lastNewline = Math.max(headerEnd, bytes.lastIndexOf(NEWLINE))
  const recordStarts: number[] = [] // first seq of each record, for locate()
  const recordLines: number[] = [] // its line
  let firstDefect: { index: number; reason: string } | undefined
  let lines = 0 // complete record lines so far
  const followed = (): void => {
    const defect = firstDefect as { index: number; reason: string }
    firstDefect = undefined
    judgement.fail(`${path}:${defect.index + 2}: ${defect.reason}, and valid records follow it: the file is corrupt`)
  }
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
      const expected = sink.expected
      if (sink.line(line) !== undefined) {
        if (firstDefect !== undefined) followed()
        recordStarts.push(expected)
        recordLines.push(lineNo)
        continue
      }
      let record: unknown
      try {
        record = JSON.parse(line)
      } catch {
        record = undefined
      }
      if (typeof record !== 'object' || record === null || Array.isArray(record)) {
        firstDefect ??= { index: i, reason: line === '' ? `line ${lineNo} is empty` : `line ${lineNo} is not a JSON record` }
        continue
      }
      if (firstDefect !== undefined) followed()
      let seqs: readonly [number, number]
      try {
        seqs = sink.record(record)
      } catch (error) {
        judgement.fail(`${path}:${lineNo}: ${(error as Error).message}`)
        continue
      }
      const [first, after] = seqs
      if (first !== expected) {
        judgement.fail(
          `${path}:${lineNo}: ${
            first > expected
              ? `seq ${first} where ${expected} was expected: ${first - expected === 1 ? `seq ${expected} is` : `seqs ${expected}..${first - 1} are`} missing (an event was removed)`
              : `seq ${first} where ${expected} was expected: seq ${first} appears again`
          }`,
        )
      }
      if (after > first) {
        recordStarts.push(first)
        recordLines.push(lineNo)
      }
    }
  }
  let tailRepair: TailRepair | undefined
  const tornBytes = bytes.length - (lastNewline + 1)
  let committedBytes = Math.min(bytes.length, lastNewline + 1)
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
    return `${path}:${recordStarts.length === 0 ? 1 : (recordLines[lo] as number)}`
  }
  return { header, committedBytes, ...(tailRepair !== undefined ? { tailRepair } : {}), locate }
}

/**
 * Parses a whole session file by the line rules of {@link walkRecords}, refusing the first defect with
 * `SESSION_CORRUPT` (or `SESSION_VERSION`) naming the file and line. Only a damaged TAIL is repaired (in memory;
 * the caller truncates the file when it writes). Events are not judged here: see `loadSessionFile`.
 * @param loader - where the records go (one that continues a resume checkpoint's prefix reads a tail: its lines
 *   follow the header line in `bytes`)
 */
export function scanSessionFile(bytes: Buffer, path: string, expectedId: string | undefined, loader: LogLoader = new LogLoader()): ScannedSessionFile {
  const sink: RecordSink = {
    get expected() {
      return loader.length
    },
    line: (line) => loader.addLine(line),
    record: (record) => {
      const before = loader.length
      const first = loader.add(record)
      return [first, first + loader.length - before]
    },
  }
  const walked = walkRecords(bytes, path, expectedId, new LogJudgement('refuse'), sink)
  return { ...walked, header: walked.header as SessionHeader, log: loader.finish() }
}

/**
 * Reads a session file by the same line rules as {@link scanSessionFile}, but lists every problem in
 * `judgement` and reads on past it (a bad line is skipped, a seq gap is kept), so `verify` can name them all.
 */
export function listSessionFile(bytes: Buffer, path: string, expectedId: string | undefined, judgement: LogJudgement): ListedSessionFile {
  const events: SessionEvent[] = []
  let expected = 0
  let contiguous = true
  const sink: RecordSink = {
    get expected() {
      return expected
    },
    line: () => undefined,
    record: (record) => {
      const decoded = decodeRecord(record)
      const first = decoded.length > 0 ? (decoded[0] as SessionEvent).seq : expected
      if (first !== expected) contiguous = false
      events.push(...decoded)
      expected = Math.max(expected, first + decoded.length)
      return [first, first + decoded.length]
    },
  }
  const walked = walkRecords(bytes, path, expectedId, judgement, sink)
  return { ...walked, events, contiguous }
}

/** Options of {@link loadSessionFile} and {@link judgeSessionFile}. */
export interface SessionFileJudgementOptions {
  /** Plugin event types to accept without `ignorable` (as `SessionOptions.knownTypes`). */
  readonly knownTypes?: Iterable<string>
  /** What was committed to the file by the account of something outside it (the session index). */
  readonly committed?: CommittedEvidence
}

/** A session file loaded by {@link loadSessionFile}. */
export interface LoadedSessionFile extends ScannedSessionFile {
  /** The running digest of the committed part (bytes 0..committedBytes), for the writer that continues it. */
  readonly content: ContentDigest
  /** The log as {@link validateStoredLog} checked it, with its fold (for the Session that resumes it). */
  readonly verified: VerifiedLog
}

/**
 * Loads a session file for a store: the line rules ({@link scanSessionFile}), then the events as a Session
 * adopts them (envelope, known types, surface rules) and as the loop continues them (log grammar, citations:
 * {@link judgeRecords}), then what it holds against what was committed, bytes and content ({@link judgeCommitted}).
 * The first problem is thrown. The same judgement as `verify`'s ({@link judgeSessionFile}), so a log that loads
 * is a log `verify` finds nothing wrong with in its structure, and the reverse.
 * @throws HarnessError `SESSION_CORRUPT` naming the file and line, or `SESSION_VERSION`
 */
export function loadSessionFile(bytes: Buffer, path: string, id: string, options: SessionFileJudgementOptions = {}): LoadedSessionFile {
  const scanned = scanSessionFile(bytes, path, id)
  const { log } = scanned
  const judgement = new LogJudgement('refuse')
  const verified = validateStoredLog(scanned.header, log, scanned.locate, options.knownTypes)
  // A pass over the records, not the events: a chunk run is judged as one, and nothing is materialised.
  const verdict = judgeRecords(log.records, { locate: scanned.locate, typeAt: (seq) => log.typeAt(seq), judgement })
  const repairing = scanned.tailRepair !== undefined || verdict.openTurn !== undefined
  const content = new ContentDigest()
  judgeCommitted(path, { bytes: bytes.length, turns: verdict.endedTurns, repairing, file: bytes }, options.committed, judgement, content)
  // The witnessed prefix passed, so it is whole lines within the committed part: hash on to its end. Every byte is
  // hashed once (about 1 GB/s: a few per cent of the load), and the writer goes on from here without a re-read.
  if (content.bytes > scanned.committedBytes) throw new HarnessError(`${path}: the witnessed ${content.bytes} bytes run past the committed ${scanned.committedBytes}`, 'SESSION_CORRUPT')
  content.update(bytes.subarray(content.bytes, scanned.committedBytes), scanned.committedBytes - content.bytes)
  return { ...scanned, content, verified }
}

/** What {@link judgeSessionFile} found: the problems and repairs are in the judgement it was given. */
export interface JudgedSessionFile extends ListedSessionFile {
  /** The turn the log ends inside, if any. */
  readonly openTurn: number | undefined
}

/**
 * `verify`'s reading of a session file: the same judgement as {@link loadSessionFile}, every problem listed in
 * `judgement` (`list` mode) instead of the first thrown. What loading repairs rather than refuses (a torn or
 * garbage tail, a turn a crash left open) goes to `judgement.repairs`.
 */
export function judgeSessionFile(bytes: Buffer, path: string, id: string, judgement: LogJudgement, options: SessionFileJudgementOptions = {}): JudgedSessionFile {
  const listed = listSessionFile(bytes, path, id, judgement)
  const { events } = listed
  if (listed.header !== undefined && listed.contiguous) {
    try {
      validateStoredLog(listed.header, events, listed.locate, options.knownTypes)
    } catch (error) {
      judgement.fail((error as Error).message)
    }
  }
  const types = new Map<number, string>()
  for (const event of events) types.set(event.seq, event.type)
  const verdict = judgeRecords(events, { locate: listed.locate, typeAt: (seq) => types.get(seq), judgement })
  const repairing = listed.tailRepair !== undefined || verdict.openTurn !== undefined
  judgeCommitted(path, { bytes: bytes.length, turns: verdict.endedTurns, repairing, file: bytes }, options.committed, judgement)
  if (listed.tailRepair !== undefined) {
    const t = listed.tailRepair
    judgement.repairs.push(`${path}:${t.line}: ${t.reason}: loading cuts off these ${t.bytes} bytes`)
  }
  if (verdict.openTurn !== undefined) judgement.repairs.push(`the log ends inside turn ${verdict.openTurn}: resuming closes it as interrupted`)
  return { ...listed, openTurn: verdict.openTurn }
}

// Byte offset where the `index`-th record line (0-based, after the header) starts. Scans raw bytes rather than
// trusting decoded string lengths, which an invalid UTF-8 sequence would skew.
function offsetOfLine(bytes: Buffer, start: number, index: number): number {
  let offset = start
  for (let i = 0; i < index; i++) offset = bytes.indexOf(NEWLINE, offset) + 1
  return offset
}
