import type { StreamChunk } from '../llm/types.js'
import { CompactRun, EventLog, type ChunkTemplate, type LazyPrefix } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import { decodeCompact, freezeParsed } from './chunk-runs.js'

/**
 * Builds a compact log from a store's records, read in order (what `JsonlStore` and `SqliteStore` do on load).
 *
 * Consecutive `assistant/chunk` records of one turn and step become one sealed {@link CompactRun}, the form
 * the live loop keeps them in: a packed row contributes its payload strings, a chunk stored verbatim (a run
 * too short to pack, or a chunk of another kind: block starts and ends, usage, finish) its deep-frozen chunk
 * object. No envelope is kept for such a member; reading it builds the same frozen event the line holds
 * (`{type, seq, time, data: {turn, step, chunk}}`, in that key order). Only a verbatim chunk of exactly that
 * shape (integer seq, time, turn and step; an object chunk; no other key) joins a run: anything else is kept
 * as the event it is, so the Session's checks see it and refuse it as before. Every other record is kept as one
 * deep-frozen event.
 * @internal
 */
export class LogLoader {
  readonly #log: EventLog
  #length: number
  // The run being gathered (not in the log yet).
  #seq0 = 0
  #turn = 0
  #step = 0
  #template: ChunkTemplate | undefined
  #times: number[] | undefined
  #items: (string | StreamChunk)[] | undefined
  // Chunks already read, by their JSON text (short ones only): identical chunks are read once and shared.
  readonly #chunks = new Map<string, StreamChunk>()
  #number = 0
  // The envelope of the line being read (see #envelope): one object reused for every line.
  readonly #read = { seq: 0, time: 0, turn: 0, step: 0 }

  /** @param prefix - the unread prefix the records continue (a resume checkpoint's), if any: seqs start after it */
  constructor(prefix?: LazyPrefix) {
    this.#log = prefix === undefined ? new EventLog() : EventLog.withPrefix(prefix)
    this.#length = prefix?.length ?? 0
  }

  /** Number of events added so far (= the seq the next record must start at). */
  get length(): number {
    return this.#length
  }

  /**
   * Adds one parsed stored record.
   * @returns the record's first seq (the caller checks it against {@link length} as it was before)
   * @throws Error describing a defective packed row or record (callers add the file and line)
   */
  add(record: unknown): number {
    if (this.#addChunk(record)) return (record as SessionEvent).seq
    const decoded = decodeCompact(record)
    if (decoded instanceof CompactRun) {
      this.#addRun(decoded)
      return decoded.seq0
    }
    this.#close()
    this.#log.push(freezeParsed(decoded))
    this.#length++
    return decoded.seq
  }

  /**
   * Adds one stored line when it is a chunk event written as the loop writes it
   * (`{"type":"assistant/chunk","seq":…,"time":…,"data":{"turn":…,"step":…,"chunk":{…}}}`, plain integers, at
   * the next seq): only its chunk is parsed, and a chunk whose text was read before is that same frozen object.
   * A `step/start` or `step/end` line of the loop's exact shape is read without JSON.parse. Such a line is a
   * valid record that {@link add} would take the same way.
   * @returns the line's seq, or undefined when the line is anything else (then parse it and call {@link add})
   */
  addLine(line: string): number | undefined {
    if (!line.startsWith(CHUNK_PREFIX)) return line.startsWith(STEP_PREFIX) ? this.#addStep(line) : undefined
    const p = this.#envelope(line, CHUNK_PREFIX.length)
    if (p < 0) return undefined
    const { seq, time, turn, step } = this.#read
    const end = line.length - 2
    if (p < 0 || !line.startsWith(',"chunk":{', p) || end <= p + 9 || line.charCodeAt(end) !== CLOSE || line.charCodeAt(end + 1) !== CLOSE) return undefined
    const text = line.slice(p + 9, end)
    let chunk = text.length <= MAX_SHARED_CHUNK ? this.#chunks.get(text) : undefined
    if (chunk === undefined) {
      try {
        chunk = freezeParsed(JSON.parse(text) as StreamChunk)
      } catch {
        return undefined
      }
      if (text.length <= MAX_SHARED_CHUNK && this.#chunks.size < MAX_SHARED_CHUNKS) {
        // Keyed by a string of its own (a slice would keep the whole decoded block alive).
        const key = JSON.stringify(chunk)
        if (key === text) this.#chunks.set(key, chunk)
      }
    }
    if (this.#items === undefined || this.#turn !== turn || this.#step !== step) this.#open(seq, turn, step, undefined, [], [])
    ;(this.#times as number[]).push(time)
    ;(this.#items as (string | StreamChunk)[]).push(chunk)
    this.#length++
    return seq
  }

  // `{"type":"step/start"|"step/end","seq":…,"time":…,"data":{"turn":…,"step":…}}` with plain integers: built
  // as JSON.parse would build it, then frozen.
  #addStep(line: string): number | undefined {
    const type = line.startsWith('start"', STEP_PREFIX.length) ? 'step/start' : line.startsWith('end"', STEP_PREFIX.length) ? 'step/end' : undefined
    if (type === undefined) return undefined
    let p = STEP_PREFIX.length + type.length - 4
    if (!line.startsWith(',"seq":', p)) return undefined
    p = this.#envelope(line, p + 7)
    const { seq, time, turn, step } = this.#read
    if (p < 0 || p + 2 !== line.length || line.charCodeAt(p) !== CLOSE || line.charCodeAt(p + 1) !== CLOSE) return undefined
    this.#close()
    this.#log.push(Object.freeze({ type, seq, time, data: Object.freeze({ turn, step }) }) as unknown as SessionEvent)
    this.#length++
    return seq
  }

  /** Closes the run being gathered and returns the log (add nothing after this). */
  finish(): EventLog {
    this.#close()
    return this.#log
  }

  // A verbatim chunk event of the exact shape a run member stands for, at the next seq: joins the open run.
  #addChunk(record: unknown): boolean {
    if (typeof record !== 'object' || record === null) return false
    const r = record as Record<string, unknown>
    if (r.type !== 'assistant/chunk' || r.seq !== this.#length || !Number.isSafeInteger(r.time)) return false
    const data = r.data
    if (typeof data !== 'object' || data === null || !hasKeys(r, 'type', 'seq', 'time', 'data')) return false
    const d = data as Record<string, unknown>
    const chunk = d.chunk
    if (typeof chunk !== 'object' || chunk === null || !Number.isSafeInteger(d.turn) || !Number.isSafeInteger(d.step) || !hasKeys(d, 'turn', 'step', 'chunk')) return false
    const turn = d.turn as number
    const step = d.step as number
    if (this.#items === undefined || this.#turn !== turn || this.#step !== step) this.#open(this.#length, turn, step, undefined, [], [])
    ;(this.#times as number[]).push(r.time as number)
    ;(this.#items as (string | StreamChunk)[]).push(freezeParsed(chunk as StreamChunk))
    this.#length++
    return true
  }

  // A packed row: appended to the open run when it continues it (same turn and step, a compatible template).
  #addRun(run: CompactRun): void {
    const items = this.#items
    if (items !== undefined && run.seq0 === this.#length && run.turn === this.#turn && run.step === this.#step && (this.#template === undefined || sameTemplate(this.#template, run.template as ChunkTemplate))) {
      const times = this.#times as number[]
      for (let k = 0; k < run.items.length; k++) {
        items.push(run.items[k] as string)
        times.push(run.times[k] as number)
      }
      this.#template ??= run.template
    } else {
      // The row's own arrays are fresh (built by the decoder or JSON.parse): the run grows in them.
      this.#open(run.seq0, run.turn, run.step, run.template, run.times, run.items)
    }
    this.#length += run.items.length
  }

  // `SEQ,"time":TIME,"data":{"turn":TURN,"step":STEP` from `p` (just after `"seq":`), plain integers, SEQ the next
  // seq: the four into #read; the position after STEP, or -1.
  #envelope(line: string, p: number): number {
    const read = this.#read
    p = this.#integer(line, p)
    read.seq = this.#number
    if (p < 0 || read.seq !== this.#length || !line.startsWith(',"time":', p)) return -1
    p = this.#integer(line, p + 8)
    read.time = this.#number
    if (p < 0 || !line.startsWith(',"data":{"turn":', p)) return -1
    p = this.#integer(line, p + 16)
    read.turn = this.#number
    if (p < 0 || !line.startsWith(',"step":', p)) return -1
    p = this.#integer(line, p + 8)
    read.step = this.#number
    return p
  }

  // A JSON integer of up to 15 digits (0, or no leading zero) at `p` into #number; the position after it, or -1.
  #integer(line: string, p: number): number {
    let value = 0
    let q = p
    for (let c = line.charCodeAt(q); c >= ZERO && c <= NINE && q - p < 15; c = line.charCodeAt(++q)) value = value * 10 + (c - ZERO)
    if (q === p || (q - p > 1 && line.charCodeAt(p) === ZERO)) return -1
    this.#number = value
    return q
  }

  #open(seq0: number, turn: number, step: number, template: ChunkTemplate | undefined, times: number[], items: (string | StreamChunk)[]): void {
    this.#close()
    this.#seq0 = seq0
    this.#turn = turn
    this.#step = step
    this.#template = template
    this.#times = times
    this.#items = items
  }

  #close(): void {
    const items = this.#items
    if (items === undefined) return
    const run = new CompactRun(this.#seq0, this.#turn, this.#step, this.#template, this.#times as number[], items, false)
    run.seal() // exact-length arrays
    this.#log.pushRun(run)
    this.#items = undefined
    this.#times = undefined
    this.#template = undefined
  }
}

const CHUNK_PREFIX = '{"type":"assistant/chunk","seq":'
const STEP_PREFIX = '{"type":"step/'
const CLOSE = 0x7d // }
const ZERO = 0x30
const NINE = 0x39
/** Chunks up to this many characters of JSON are shared by identical text (block starts, usage, finish…). */
const MAX_SHARED_CHUNK = 160
const MAX_SHARED_CHUNKS = 4096

// Own enumerable keys exactly these, in this order (for…in: no key array per record).
function hasKeys(value: Record<string, unknown>, a: string, b: string, c: string, d?: string): boolean {
  let n = 0
  for (const key in value) {
    if (key !== (n === 0 ? a : n === 1 ? b : n === 2 ? c : n === 3 ? d : undefined)) return false
    n++
  }
  return n === (d === undefined ? 3 : 4)
}

function sameTemplate(a: ChunkTemplate, b: ChunkTemplate): boolean {
  if (a.type !== b.type || a.index !== b.index) return false
  if (a.type !== 'tool-call-delta' || b.type !== 'tool-call-delta') return true
  return a.id === b.id && a.name === b.name && ('name' in a) === ('name' in b)
}
