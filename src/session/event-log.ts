import { HarnessError } from '../errors/harness-error.js'
import type { StreamChunk } from '../llm/types.js'
import type { UserMessage } from '../llm/types.js'
import type { SessionEvent } from './events.js'
import type { TurnInput } from './resume-fold.js'

/**
 * How a packed payload string becomes a chunk again: a `text-delta` / `reasoning-delta` of one block, or a
 * `tool-call-delta` of one call (with or without `name`).
 * @internal
 */
export type ChunkTemplate =
  | { readonly type: 'text-delta' | 'reasoning-delta'; readonly index: number }
  | { readonly type: 'tool-call-delta'; readonly index: number; readonly id: string; readonly name?: string }

/**
 * A run of consecutive `assistant/chunk` events of one turn and step, kept compact: no event object exists
 * for a member until someone reads it. Member `k` has seq `seq0 + k` and time `times[k]`; its chunk is
 * `items[k]` when that is an object (the deep-frozen chunk itself), or the payload string rebuilt with
 * `template` (`text` / `argumentsDelta`). A materialised member is kept in `cache`, so a member read twice is
 * the same object. A sealed run takes no more members (loaded runs, and runs another reader shares).
 * @internal
 */
export class CompactRun {
  /** Seq of member 0. */
  readonly seq0: number
  readonly turn: number
  readonly step: number
  /** Template of the string items (set by the first packable chunk, then fixed). */
  template: ChunkTemplate | undefined
  /** Absolute time of each member (a double array: no boxed numbers). */
  times: number[]
  /** Per member: the chunk object, or a payload string for {@link template}. */
  items: (string | StreamChunk)[]
  /** Materialised members, filled on first read. */
  cache: (SessionEvent | undefined)[] | undefined
  sealed: boolean

  constructor(seq0: number, turn: number, step: number, template: ChunkTemplate | undefined, times: number[], items: (string | StreamChunk)[], sealed: boolean) {
    this.seq0 = seq0
    this.turn = turn
    this.step = step
    this.template = template
    this.times = times
    this.items = items
    this.cache = undefined
    this.sealed = sealed
  }

  /** Takes no more members; the arrays shrink to their length (growth leaves up to half again as spare room). */
  seal(): void {
    if (this.sealed) return
    this.sealed = true
    this.items = this.items.slice()
    this.times = this.times.slice()
  }

  /** A sealed run over the same members without this one's materialised events (seals this run first). */
  detached(): CompactRun {
    this.seal()
    return new CompactRun(this.seq0, this.turn, this.step, this.template, this.times, this.items, true)
  }

  /** Number of members. */
  get count(): number {
    return this.items.length
  }

  /** The chunk of member `k`. */
  chunkAt(k: number): StreamChunk {
    const item = this.items[k] as string | StreamChunk
    if (typeof item !== 'string') return item
    const t = this.template as ChunkTemplate
    if (t.type !== 'tool-call-delta') return Object.freeze({ type: t.type, index: t.index, text: item })
    return Object.freeze(
      t.name === undefined
        ? { type: 'tool-call-delta', index: t.index, id: t.id, argumentsDelta: item }
        : { type: 'tool-call-delta', index: t.index, id: t.id, name: t.name, argumentsDelta: item },
    )
  }

  /** Member `k` as the frozen event the log stands for (built once, then cached). */
  eventAt(k: number): SessionEvent {
    const cached = this.cache?.[k]
    if (cached !== undefined) return cached
    const event = chunkEvent(this.seq0 + k, this.times[k] as number, this.turn, this.step, this.chunkAt(k))
    ;(this.cache ??= [])[k] = event
    return event
  }
}

/** Builds the frozen `assistant/chunk` event the loop logs for a chunk (the exact envelope and key order). @internal */
export function chunkEvent(seq: number, time: number, turn: number, step: number, chunk: StreamChunk): SessionEvent {
  const data = Object.freeze({ turn, step, chunk })
  return Object.freeze({ type: 'assistant/chunk', seq, time, data }) as SessionEvent
}

/** One record of an {@link EventLog}: an event kept as is, or a compact chunk run. @internal */
export type LogRecord = SessionEvent | CompactRun

/**
 * The first events of a log that a resume checkpoint stands for (docs/stores.md, "Resume checkpoints"): not read
 * until something asks for one of them. What the checkpoint kept answers without reading: the events in
 * `kept` and, per event type, the seq of the last one. Anything else reads the whole prefix once ({@link load},
 * memoised by the source: every copy of the log shares it) and splices it in front of the records read so far.
 * @internal
 */
export interface LazyPrefix {
  /** Number of events it stands for (the first tail seq). */
  readonly length: number
  /** Events the checkpoint holds whole, by seq. */
  readonly kept: ReadonlyMap<number, SessionEvent>
  /** Per event type (chunks aside), the seq of its last event in the prefix; a type absent here has none. */
  readonly lastOfType: ReadonlyMap<string, number>
  /** The inbox as the prefix's splices leave it (from the seed boundary on): the loop's Inbox goes on from it. */
  readonly inbox: InboxState
  /** The input of the last turn started in the prefix, for crash repair. */
  readonly turnInput?: TurnInput
  /** Seqs of the prefix's user messages sent by `plugin` (all kept), newest first. */
  pluginMessages(plugin: string): readonly number[]
  /**
   * The prefix itself, read and checked (the same log each call).
   * @throws HarnessError `SESSION_CORRUPT` when it no longer reads as the checkpoint said
   */
  load(): EventLog
}

/** The two lists of queued input, and the submission keys seen, as a log's splices leave them. @internal */
export interface InboxState {
  readonly nextTurn: readonly UserMessage[]
  readonly nextStep: readonly UserMessage[]
  /** Submission key → id of the message first sent with it. */
  readonly keys: readonly (readonly [string, string])[]
}

/**
 * A session log in compact form (`StoredSession.log`, `SessionOptions.log`): events kept as they are, except
 * streamed chunks, which are kept as compact runs and materialised into events only when read (then cached).
 * `at(seq)` is O(log records), O(1) near the end. Treat it as read-only: a `Session` appends to its own copy.
 * A log resumed from a checkpoint starts with a {@link LazyPrefix}: its first events are read when first needed.
 */
export class EventLog {
  #records: LogRecord[] = []
  /** First seq of each record. */
  #starts: number[] = []
  #length = 0
  /** The unread prefix, until it is read (the records then start at seq 0 again). */
  #prefix: LazyPrefix | undefined
  /** Bumped by every change of the records (not by reading the prefix in): what a fold was built against. */
  #revision = 0

  /** @internal A log of `prefix.length` events not read yet; appends continue after them. */
  static withPrefix(prefix: LazyPrefix): EventLog {
    const log = new EventLog()
    log.#prefix = prefix
    log.#length = prefix.length
    return log
  }

  /** @internal The unread prefix, or undefined when every event is in memory. */
  get lazyPrefix(): LazyPrefix | undefined {
    return this.#prefix
  }

  /** @internal Bumped by every append or replace: two equal revisions of one log hold the same records. */
  get revision(): number {
    return this.#revision
  }

  /** @internal The records after the unread prefix (all of them once it is read; shared: do not mutate). */
  get tailRecords(): readonly LogRecord[] {
    return this.#records
  }

  /** @internal Reads the unread prefix in (once); a no-op for a log without one. */
  loadPrefix(): void {
    const prefix = this.#prefix
    if (prefix === undefined) return
    const loaded = prefix.load()
    if (loaded.length !== prefix.length || loaded.#prefix !== undefined) throw new HarnessError(`the resume checkpoint's prefix read back as ${loaded.length} events, not ${prefix.length}`, 'SESSION_CORRUPT')
    loaded.seal()
    this.#records = loaded.#records.concat(this.#records)
    this.#starts = loaded.#starts.concat(this.#starts)
    this.#prefix = undefined
  }

  // Whether `seq` lies in the unread prefix (reading it is then the caller's choice).
  #inPrefix(seq: number): boolean {
    return this.#prefix !== undefined && seq < this.#prefix.length
  }

  /** Number of events (= the next seq). */
  get length(): number {
    return this.#length
  }

  /** The records, in seq order (shared: do not mutate). */
  get records(): readonly LogRecord[] {
    this.loadPrefix()
    return this.#records
  }

  /** The event at `seq` (materialised if it is a run member). */
  at(seq: number): SessionEvent | undefined {
    if (this.#inPrefix(seq)) {
      const kept = (this.#prefix as LazyPrefix).kept.get(seq)
      if (kept !== undefined || !Number.isInteger(seq) || seq < 0) return kept
      this.loadPrefix()
    }
    const i = this.#find(seq)
    if (i < 0) return undefined
    const record = this.#records[i] as LogRecord
    return record instanceof CompactRun ? record.eventAt(seq - record.seq0) : record
  }

  /** The type of the event at `seq`, without materialising it. */
  typeAt(seq: number): string | undefined {
    if (this.#inPrefix(seq)) {
      const kept = (this.#prefix as LazyPrefix).kept.get(seq)
      if (kept !== undefined || !Number.isInteger(seq) || seq < 0) return kept?.type
      this.loadPrefix()
    }
    const i = this.#find(seq)
    if (i < 0) return undefined
    const record = this.#records[i] as LogRecord
    return record instanceof CompactRun ? 'assistant/chunk' : record.type
  }

  /** Appends an event (`event.seq` must be the next seq). */
  push(event: SessionEvent): void {
    this.#revision++
    this.seal()
    this.#records.push(event)
    this.#starts.push(this.#length)
    this.#length++
  }

  /**
   * @internal Puts `event` in place of the whole event of the same seq (never a chunk-run member): only for a
   * provisional `turn/end` that was never published (`Session.settleTurnEnd`).
   */
  replaceEvent(event: SessionEvent): void {
    if (this.#inPrefix(event.seq)) this.loadPrefix()
    const i = this.#find(event.seq)
    const record = this.#records[i]
    if (record === undefined || record instanceof CompactRun || record.seq !== event.seq) {
      throw new HarnessError(`no whole event at seq ${event.seq} to replace`, 'INVALID_STATE')
    }
    this.#revision++
    this.#records[i] = event
  }

  /**
   * Appends an `assistant/chunk` member: into the open run of the same turn and step, or a new run.
   * @param chunk - deep-frozen lossless JSON (the caller checked it)
   * @param event - the member's event when it was already built (kept, so reads return that same object)
   */
  pushChunk(time: number, turn: number, step: number, chunk: StreamChunk, event?: SessionEvent): void {
    const run = this.#openRun(turn, step)
    this.#revision++
    const k = run.items.length
    run.times.push(time)
    run.items.push(packedPayload(run, chunk) ?? chunk)
    if (event !== undefined) (run.cache ??= [])[k] = event
    this.#length++
  }

  /**
   * Appends a text or reasoning delta given as its parts (the loop's common chunk): packed as its bare text
   * when the run's template fits, as a frozen chunk otherwise. The same record {@link pushChunk} would make.
   */
  pushText(time: number, turn: number, step: number, type: 'text-delta' | 'reasoning-delta', index: number, text: string): void {
    const run = this.#openRun(turn, step)
    this.#revision++
    const t = (run.template ??= { type, index })
    run.times.push(time)
    run.items.push(t.type === type && t.index === index ? text : (Object.freeze({ type, index, text }) as StreamChunk))
    this.#length++
  }

  /** The open run of this turn and step, or a new one appended for it (the one before is sealed). */
  #openRun(turn: number, step: number): CompactRun {
    const last = this.#records[this.#records.length - 1]
    if (last instanceof CompactRun && !last.sealed && last.turn === turn && last.step === step) return last
    this.seal()
    const run = new CompactRun(this.#length, turn, step, undefined, [], [], false)
    this.#records.push(run)
    this.#starts.push(this.#length)
    return run
  }

  /** Appends a whole run (a loaded one: it is sealed, and may be shared with other logs). */
  pushRun(run: CompactRun): void {
    this.#revision++
    this.seal()
    run.sealed = true
    this.#records.push(run)
    this.#starts.push(this.#length)
    this.#length += run.count
  }

  /** Seals the open run, so what is stored so far never changes (before sharing the records). */
  seal(): void {
    const last = this.#records[this.#records.length - 1]
    if (last instanceof CompactRun) last.seal()
  }

  /** Every event, materialised (a new array). */
  toArray(): SessionEvent[] {
    return this.slice(0, this.#length)
  }

  /** Events `from` ≤ seq < `to`, materialised (a new array). */
  slice(from: number, to: number = this.#length): SessionEvent[] {
    const out: SessionEvent[] = []
    const end = Math.min(to, this.#length)
    if (from >= end) return out
    if (this.#inPrefix(from)) this.loadPrefix()
    for (let i = Math.max(0, this.#find(from)); i < this.#records.length; i++) {
      const record = this.#records[i] as LogRecord
      const start = this.#starts[i] as number
      if (start >= end) break
      if (!(record instanceof CompactRun)) {
        if (start >= from) out.push(record)
        continue
      }
      for (let k = Math.max(0, from - start), n = Math.min(record.count, end - start); k < n; k++) out.push(record.eventAt(k))
    }
    return out
  }

  /** Seq of the last event in `from` ≤ seq < `before` whose type is in `types` (chunk runs are skipped), or -1. */
  lastOfTypes(types: ReadonlySet<string>, from = 0, before = this.#length): number {
    if (before <= 0) return -1
    const prefix = this.#prefix
    if (prefix !== undefined) {
      if (before < prefix.length || types.has('assistant/chunk')) this.loadPrefix()
      else {
        // The tail first; then the checkpoint's last seq per type answers for the whole prefix.
        const found = this.#lastInRecords(types, Math.max(from, prefix.length), before)
        if (found >= 0 || from >= prefix.length) return found
        let last = -1
        for (const type of types) last = Math.max(last, prefix.lastOfType.get(type) ?? -1)
        return last >= from ? last : -1
      }
    }
    return this.#lastInRecords(types, from, before)
  }

  #lastInRecords(types: ReadonlySet<string>, from: number, before: number): number {
    if (this.#records.length === 0 || before <= (this.#starts[0] as number)) return -1
    for (let i = before >= this.#length ? this.#records.length - 1 : this.#find(before - 1); i >= 0; i--) {
      const record = this.#records[i] as LogRecord
      if ((this.#starts[i] as number) < from) return -1
      if (!(record instanceof CompactRun) && types.has(record.type)) return this.#starts[i] as number
    }
    return -1
  }

  /** Calls `visit` with every event from `from` on that is not a compact chunk member, in seq order. */
  forEachEvent(from: number, visit: (event: SessionEvent) => void): void {
    if (this.#inPrefix(from)) this.loadPrefix()
    for (let i = Math.max(0, this.#find(from)); i < this.#records.length; i++) {
      const record = this.#records[i] as LogRecord
      if (!(record instanceof CompactRun) && record.seq >= from) visit(record)
    }
  }

  /**
   * Events from `from` on, with the chunk members left out except the very last event (for folds that ignore
   * chunks, like the crash-repair closers).
   */
  eventsWithoutChunks(from: number): SessionEvent[] {
    if (this.#inPrefix(from)) this.loadPrefix()
    const out: SessionEvent[] = []
    for (let i = Math.max(0, this.#find(from)); i < this.#records.length; i++) {
      const record = this.#records[i] as LogRecord
      if (!(record instanceof CompactRun)) {
        if ((this.#starts[i] as number) >= from) out.push(record)
      } else if (i === this.#records.length - 1) {
        out.push(record.eventAt(record.count - 1))
      }
    }
    return out
  }

  /**
   * @internal Makes this (empty) log a {@link snapshot} of `source`: the same records, `source`'s open run
   * sealed first. For a subclass that is a log with something more (a verified log and its fold).
   */
  protected copyRecordsOf(source: EventLog): void {
    source.seal()
    this.#records = source.#records.slice()
    this.#starts = source.#starts.slice()
    this.#length = source.#length
    this.#prefix = source.#prefix
  }

  /** A read-only copy holding the same records (the open run is sealed first, so the copy never grows). */
  snapshot(): EventLog {
    this.seal()
    const copy = new EventLog()
    copy.#records = this.#records.slice()
    copy.#starts = this.#starts.slice()
    copy.#length = this.#length
    copy.#prefix = this.#prefix
    return copy
  }

  /**
   * Like {@link snapshot}, but its chunk runs are new objects over the same sealed members, without the events
   * this log materialised: a copy another owner may keep without keeping those event objects alive.
   */
  detached(): EventLog {
    this.seal()
    const copy = new EventLog()
    copy.#records = this.#records.map((record) => (record instanceof CompactRun ? record.detached() : record))
    copy.#starts = this.#starts.slice()
    copy.#length = this.#length
    copy.#prefix = this.#prefix
    return copy
  }

  #find(seq: number): number {
    if (!Number.isInteger(seq) || seq < 0 || seq >= this.#length || this.#inPrefix(seq)) return -1
    const starts = this.#starts
    let hi = starts.length - 1
    if ((starts[hi] as number) <= seq) return hi
    let lo = 0
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1
      if ((starts[mid] as number) <= seq) lo = mid
      else hi = mid - 1
    }
    return lo
  }
}

/** A log built from whole events (a seed, or a store's unpacked rows). @internal */
export function eventLogOf(events: readonly SessionEvent[]): EventLog {
  const log = new EventLog()
  for (const event of events) log.push(event)
  return log
}

// The payload string of a chunk that the run's template rebuilds exactly (same keys, same order), else undefined.
// Keys are walked with for…in (the enum cache of a frozen object: no key array per chunk).
function packedPayload(run: CompactRun, chunk: StreamChunk): string | undefined {
  if (chunk.type !== 'text-delta' && chunk.type !== 'reasoning-delta') return undefined
  const t = run.template
  if (t !== undefined && (t.type !== chunk.type || t.index !== chunk.index)) return undefined
  let n = 0
  for (const key in chunk) {
    if (key !== (n === 0 ? 'type' : n === 1 ? 'index' : n === 2 ? 'text' : '')) return undefined
    n++
  }
  if (n !== 3 || typeof chunk.text !== 'string' || !Number.isSafeInteger(chunk.index)) return undefined
  run.template ??= { type: chunk.type, index: chunk.index }
  return chunk.text
}
