import { HarnessError } from '../errors/harness-error.js'
import { ContentDigest, type ContentWitness } from './content-witness.js'
import { CompactRun } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import { LogGrammar } from '../session/log-grammar.js'

/** The codes a damaged stored log is refused with. */
export type LogProblemCode = 'SESSION_CORRUPT' | 'SESSION_VERSION'

/**
 * Where the judgement of a stored log goes. Loading and `verify` judge a log by the same rules and differ only
 * here: `refuse` (the loader) throws the first problem as a {@link HarnessError}, so nothing is built on a log
 * that is wrong; `list` (`verify`) collects every problem and keeps reading, so a person sees all of them.
 * @internal
 */
export class LogJudgement {
  /** Every problem found so far (in `refuse` mode at most the one that was thrown). */
  readonly problems: string[] = []
  /** What loading repairs rather than refuses (a torn or garbage tail, a turn left open by a crash). */
  readonly repairs: string[] = []
  /** `refuse` throws at the first problem; `list` collects them all. */
  readonly mode: 'refuse' | 'list'

  /** @param mode - `refuse` for loading, `list` for `verify` */
  constructor(mode: 'refuse' | 'list') {
    this.mode = mode
  }

  /**
   * Records one problem; thrown at once when refusing.
   * @param message - names the file and line (`path:line: …`)
   * @throws HarnessError with `code` in `refuse` mode
   */
  fail(message: string, code: LogProblemCode = 'SESSION_CORRUPT', cause?: unknown): void {
    this.problems.push(message)
    if (this.mode === 'refuse') throw new HarnessError(message, code, cause === undefined ? undefined : { cause })
  }

  /** Whether nothing was found wrong. */
  get ok(): boolean {
    return this.problems.length === 0
  }
}

/** What {@link judgeRecords} learned about the log while judging it. */
export interface RecordsVerdict {
  /** Turns the log ends (`turn/end` events). */
  readonly endedTurns: number
  /** The turn the log ends inside, if any (crash repair closes it on resume). */
  readonly openTurn: number | undefined
}

/** How {@link judgeRecords} reads the log around a record. */
export interface RecordsContext {
  /** "file:line" of the record holding `seq`. */
  readonly locate: (seq: number) => string
  /** The type of the event at `seq`, or undefined where there is none. */
  readonly typeAt: (seq: number) => string | undefined
  readonly judgement: LogJudgement
  /** The grammar to go on with (a resume checkpoint's tail starts after a turn boundary); a fresh one by default. */
  readonly grammar?: LogGrammar
}

// A run of chunks of the open step: seqs [seq0, end), all of one turn and step.
interface ChunkSpan {
  readonly seq0: number
  readonly end: number
  readonly turn: unknown
  readonly step: unknown
}

/**
 * Judges the events of a stored log in order, one record at a time (a compact chunk run counts as one: its
 * members share turn and step, so no member is materialised): the log grammar (turns 1, 2, 3… never nested,
 * steps inside their turn, chunks, messages and tool calls inside the step they name, results answering a
 * pending call) and the citations of every `assistant/message` (chunks of its own step, logged before it).
 * These are the rules a resume would otherwise build on silently: the loop continues a log by its last turn
 * and step, and the fold trusts a message's citations. Seqs may have gaps (`verify` reads past them): the
 * grammar then judges what is there.
 */
export function judgeRecords(records: Iterable<SessionEvent | CompactRun>, context: RecordsContext): RecordsVerdict {
  const { locate, typeAt, judgement } = context
  const grammar = context.grammar ?? new LogGrammar()
  let endedTurns = 0
  let stepStart = -1
  const spans: ChunkSpan[] = []
  const fail = (seq: number, problem: string): void => judgement.fail(`${locate(seq)}: ${problem}`)
  // One probe stands for a run's members (the grammar reads type, seq, data and surfaceOp, keeps none of them).
  const probeData = { turn: 0, step: 0 }
  const probe = { type: 'assistant/chunk', seq: 0, time: 0, data: probeData }
  const member = (seq: number, run: CompactRun): SessionEvent => {
    probe.seq = seq
    probeData.turn = run.turn
    probeData.step = run.step
    return probe as SessionEvent
  }
  for (const record of records) {
    if (record instanceof CompactRun) {
      // The first member carries the run's verdict; the last moves the grammar past the whole run.
      const first = grammar.check(member(record.seq0, record))
      if (first !== undefined) fail(record.seq0, first)
      if (record.count > 1) grammar.check(member(record.seq0 + record.count - 1, record))
      spans.push({ seq0: record.seq0, end: record.seq0 + record.count, turn: record.turn, step: record.step })
      continue
    }
    const problem = grammar.check(record)
    if (problem !== undefined) fail(record.seq, problem)
    const d = (typeof record.data === 'object' && record.data !== null ? record.data : {}) as Record<string, unknown>
    switch (record.type) {
      case 'turn/end':
        endedTurns++
        break
      case 'step/start':
        stepStart = record.seq
        spans.length = 0
        break
      case 'assistant/chunk':
        spans.push({ seq0: record.seq, end: record.seq + 1, turn: d.turn, step: d.step })
        break
      case 'assistant/message': {
        const cited = citationProblem(record, d, stepStart, spans, typeAt)
        if (cited !== undefined) fail(record.seq, `seq ${record.seq} (assistant/message): ${cited}`)
        break
      }
    }
  }
  return { endedTurns, openTurn: grammar.openTurn }
}

// A message may cite only chunks of its own step (they are what it was assembled from).
function citationProblem(message: SessionEvent, d: Record<string, unknown>, stepStart: number, spans: readonly ChunkSpan[], typeAt: (seq: number) => string | undefined): string | undefined {
  const cited = message.sourceEventSeqs
  if (cited === undefined) return undefined
  if (!Array.isArray(cited)) return 'sourceEventSeqs is not a list of seqs'
  // The span of the previous citation: a message cites its chunks in order, mostly from one run, and a seq inside
  // a span of this step's chunks needs neither the type lookup nor the search (a span holds only chunks).
  let last: ChunkSpan | undefined
  for (const seq of cited as unknown[]) {
    if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq >= message.seq) return `cites ${JSON.stringify(seq)}, which is not an event before it`
    if (last !== undefined && seq >= last.seq0 && seq < last.end && seq > stepStart) continue
    if (typeAt(seq) !== 'assistant/chunk') return `cites seq ${seq}, which is not an assistant/chunk`
    const span = seq > stepStart ? findSpan(spans, seq) : undefined
    if (span === undefined || span.turn !== d.turn || span.step !== d.step) return `cites chunk ${seq} of another step`
    last = span
  }
  return undefined
}

function findSpan(spans: readonly ChunkSpan[], seq: number): ChunkSpan | undefined {
  let lo = 0
  let hi = spans.length - 1
  while (lo <= hi) {
    const mid = (lo + hi) >> 1
    const span = spans[mid] as ChunkSpan
    if (seq < span.seq0) hi = mid - 1
    else if (seq >= span.end) lo = mid + 1
    else return span
  }
  return undefined
}

/** What the session index (or anything else outside the file) says was committed to a session's log. */
export interface CommittedEvidence {
  /** Bytes of the log that were on disk when the evidence was recorded. */
  readonly bytes?: number
  /** Turns ended by then. */
  readonly turns?: number
  /** A digest of the bytes committed (absent in an index written before witnesses, or rebuilt from the files). */
  readonly content?: ContentWitness
  /** Where the evidence comes from, for the message (e.g. the index's path). */
  readonly source: string
}

/** What a file holds, for {@link judgeCommitted}. */
export interface HeldLog {
  /**
   * Its length, a torn or garbage tail included: a summary read from a file by an older version (or of a garbage
   * tail of complete lines) may have counted the tail, and a cut always leaves the file shorter than what a
   * writer recorded. A damaged last committed line is still found: writers record at a turn's end, so that line
   * is the `turn/end` the turn count misses.
   */
  readonly bytes: number
  /** Turns it ends. */
  readonly turns: number
  /** Whether loading would repair it: a tail to cut off, or a last turn to close as interrupted. */
  readonly repairing: boolean
  /** Its bytes, checked against the evidence's content witness. */
  readonly file: Buffer
}

/**
 * Refuses a log that holds less than was committed to it, or other bytes than were committed. A file cut in the
 * middle, or replaced by an older copy, ends in what looks like a torn last write or a crash mid-turn, and
 * repairing that would drop committed history without a word. Fewer ended turns than were committed always
 * counts; fewer bytes counts when loading would repair the file (a line shortened by hand in an otherwise whole
 * log is an edit: the content witness finds it). Where the evidence carries a {@link ContentWitness}, the
 * file's first `bytes` bytes must hash to it: a valid-JSON edit of content alone (a message's text, a tool
 * result's) breaks no structural rule, but what a resume builds on is then not what the model saw. The
 * judgement names what differs and leaves the decision to the person.
 * @param digest - an empty running digest to feed the witnessed bytes into (so a loader that continues the log
 *   hashes each byte once); left empty when there is no witness to check
 */
export function judgeCommitted(path: string, held: HeldLog, evidence: CommittedEvidence | undefined, judgement: LogJudgement, digest?: ContentDigest): void {
  if (evidence === undefined) return
  const missingBytes = held.repairing && evidence.bytes !== undefined && evidence.bytes > held.bytes ? evidence.bytes - held.bytes : 0
  const missingTurns = evidence.turns !== undefined && evidence.turns > held.turns ? evidence.turns - held.turns : 0
  if (missingBytes > 0 || missingTurns > 0) {
    const recorded = [evidence.bytes !== undefined ? `${evidence.bytes} bytes` : undefined, evidence.turns !== undefined ? `${evidence.turns} ended turn${evidence.turns === 1 ? '' : 's'}` : undefined].filter((x) => x !== undefined).join(' and ')
    const missing = [missingTurns > 0 ? `${missingTurns} ended turn${missingTurns === 1 ? '' : 's'}` : undefined, missingBytes > 0 ? `${missingBytes} bytes` : undefined].filter((x) => x !== undefined).join(', ')
    judgement.fail(
      `${path}: committed data is missing: ${missing} (${evidence.source} recorded ${recorded} as committed; the file holds ${held.bytes} bytes and ${held.turns} ended turn${held.turns === 1 ? '' : 's'}). ` +
        'This is not an incomplete last write: the file was cut or replaced. It was left as it is; restore it from a copy, or accept the loss with `ledgerloop sessions --reindex` (the index then records what the file holds)',
    )
    // What is missing is the finding; a digest over a cut file would only say the same again.
    return
  }
  const content = evidence.content
  if (content === undefined) return
  const running = digest ?? new ContentDigest()
  const covered = Math.min(content.bytes, held.file.length)
  running.update(held.file.subarray(0, covered), covered)
  if (covered === content.bytes && running.witness().sha256 === content.sha256) return
  const lines = countLines(held.file, covered)
  const what = covered < content.bytes ? `the file holds only ${held.file.length} of the ${content.bytes} bytes committed, and they differ from them` : `its first ${content.bytes} bytes (lines 1-${lines}) differ from what was committed`
  judgement.fail(
    `${path}: the file is not what its writer committed: ${what} (${evidence.source} recorded their SHA-256). ` +
      'It was edited after it was written; resuming would build on a history the model never saw. It was left as it is; restore it from a copy, or accept the edit with `ledgerloop sessions --reindex` (the index then records what the file holds)',
  )
}

// Lines in bytes[0, end): the committed part ends at a newline, so this is the number of its last line.
function countLines(bytes: Buffer, end: number): number {
  let lines = 0
  for (let at = bytes.indexOf(0x0a); at >= 0 && at < end; at = bytes.indexOf(0x0a, at + 1)) lines++
  return lines
}
