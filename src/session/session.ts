import { randomUUID } from 'node:crypto'
import { HarnessError } from '../errors/harness-error.js'
import { isDeepFrozenJson, snapshotJsonFrozen, type JsonValue } from '../json/lossless.js'
import type { HistoryView } from '../llm/history-view.js'
import type { ChunkRecord, SessionRecord, TextRecord } from './session-writer.js'
import type { Message, StreamChunk } from '../llm/types.js'
import { CompactRun, chunkEvent, EventLog } from './event-log.js'
import { KNOWN_EVENT_TYPES, type EventRecord, type RequestHeader, type SessionEvent, type TurnEndReason } from './events.js'
import { projectSurfaceEvent, Surface } from './surface.js'
import { markHistoryLineage } from './history-lineage.js'
import { buildEvent, corrupt, ENVELOPE_KEYS, legacyProblem, type AppendOptions } from './event-envelope.js'
import { VerifiedLog, type LogFold } from './verified-log.js'
import { turnEndNotWritten, writeRefusal } from './write-failure.js'

export type { AppendOptions } from './event-envelope.js'

/** Current session format version (stored in every session header). */
export const SESSION_FORMAT_VERSION = 1

/** Storage metadata kept beside the log (never an event). */
export interface SessionHeader {
  readonly version: number
  readonly id: string
  /** ms since epoch. */
  readonly createdAt: number
  /** Working directory the session was created for. */
  readonly cwd?: string
  /** The session this one was forked from (a plain fork, a rerun, or with `parentCallId` a sub-agent's parent). */
  readonly parentSession?: string
  /**
   * Set on a session `rerun` made: the id of the recorded session it reran. A rerun is also a fork before its
   * first rerun turn, so `parentSession` names the same session; this field tells a rerun from a plain fork.
   */
  readonly forkedFrom?: string
  /** Number of events inherited from the parent (the child's own history starts after `session/end-seed`). */
  readonly seedLength?: number
  /**
   * Set on a sub-agent's session (with `parentSession`): the id of the parent's tool call that started it.
   * A session with `parentSession` but no `parentCallId` is a fork, not a child.
   */
  readonly parentCallId?: string
  /** A sub-agent's profile name (`'default'` when the call named none). */
  readonly agentProfile?: string
  /** How many delegations deep this session's agent is: absent (= 0) for a top-level session, 1 for a child, … */
  readonly delegationDepth?: number
}

/** Where a session sends each committed event, and who may veto one (wired by the harness and stores). */
export interface SessionWiring {
  /** Called before commit; a throw vetoes the append (invariant companions). */
  validate?(session: Session, candidate: SessionEvent): void
  /**
   * Called with each record as it commits, before listeners (the store's buffer); a throw vetoes it. A record
   * is the committed event, or, when {@link compactRecords} is set, the loop's streamed chunk as a
   * {@link ChunkRecord} / {@link TextRecord} with no event object built (the session refills one record of each
   * kind for every chunk: copy what you keep).
   */
  persist?(session: Session, record: SessionRecord): void
  /** Whether `persist` takes compact chunk records; without it every record it gets is an event. */
  readonly compactRecords?: boolean
  /** Called after commit (the `session/event` hook); failures are the caller's to contain. */
  publish?(session: Session, event: SessionEvent): void
  /**
   * Whether `validate` and `publish` want to see the loop's chunk events right now (e.g. a listener is
   * registered). When it answers false, a chunk appended on the compact path builds no event for them; when
   * absent, they see every chunk.
   */
  wantsChunkEvents?(): boolean
}

/** Options of {@link Session}. */
export interface SessionOptions {
  /** Session id (default: a random UUID). */
  readonly id?: string
  /** Header fields (version and createdAt are filled in). */
  readonly header?: Partial<Omit<SessionHeader, 'id'>>
  /**
   * Events to adopt (a loaded log, or a fork prefix): validated like appends but not published. When `seed`
   * is given and `endSeed` is true, a `session/end-seed` marker is appended after it (fork children).
   */
  readonly seed?: readonly EventRecord[]
  /**
   * A stored log to adopt before `seed`, in compact form (`StoredSession.log`): validated like a seed, but its
   * packed chunk runs are taken over as they are instead of being materialised into events. A log the store
   * checked when it loaded it (the built-in file stores' `StoredSession.log`) is not walked again: the fold
   * its check built is taken over.
   */
  readonly log?: EventLog
  /**
   * @internal The fold of `log`'s unread prefix (a resume checkpoint's, `foldOfCheckpoint`): the session starts
   * from it and adopts only the records after that prefix.
   */
  readonly start?: LogFold
  /** Append `session/end-seed` after the seed (default false: a plain load). */
  readonly endSeed?: boolean
  /** Extra event types to accept in a seed without `ignorable`. */
  readonly knownTypes?: Iterable<string>
  readonly wiring?: SessionWiring
}

/**
 * An append-only session log with its incremental fold. The log is the only truth: the model-visible history
 * (`deriveMessages()`), the latest request header and the inbox are all folded from it.
 */
export class Session {
  /** Session id. */
  readonly id: string
  /** Storage metadata. */
  readonly header: SessionHeader
  readonly #log: EventLog
  readonly #surface: Surface
  #wiring: SessionWiring | undefined
  #publishing = false
  #eventsView: readonly SessionEvent[] | undefined
  // Incremental derivation state: the messages projected so far and the surface generation they were folded at (a replace re-folds).
  readonly #derived: Message[] = []
  #projectedNodes = 0
  #derivedGeneration = 0
  // One token per fold generation: every frozen view handed out under it is a prefix of the later ones.
  #lineage: object = {}
  #derivedView: readonly Message[] | undefined
  #historyView: HistoryView | undefined
  #replayStateMessages = 0
  #header: RequestHeader | undefined
  #context: { provider: string; model: string; contextWindow?: number } | undefined
  #lastTurn = 0
  #openTurn: number | undefined
  /**
   * Events committed but not yet published, oldest first: set from a provisional `turn/end` (see
   * {@link appendTurnEnd}) until {@link settleTurnEnd}, so listeners hear of events in seq order.
   */
  #held: SessionEvent[] | undefined
  /** Why this session refuses every append (its log could not be written: see {@link settleTurnEnd}). */
  #refusal: HarnessError | undefined
  /** The loop's chunk on its way through {@link #commitPipeline}, refilled for each one. */
  // The loop's next chunk, in the one record of its kind this session refills for each (a delta allocates nothing).
  readonly #chunkRecord: Refilled<ChunkRecord> = { kind: 'chunk', seq: 0, time: 0, turn: 0, step: 0, chunk: NO_CHUNK }
  readonly #textRecord: Refilled<TextRecord> = { kind: 'text', seq: 0, time: 0, turn: 0, step: 0, type: 'text-delta', index: 0, text: '' }

  constructor(options: SessionOptions = {}) {
    this.id = options.id ?? randomUUID()
    if (typeof this.id !== 'string' || this.id === '' || !/^[A-Za-z0-9._-]{1,128}$/.test(this.id)) {
      throw new HarnessError(`session id ${JSON.stringify(this.id)} must be 1-128 characters of A-Z a-z 0-9 . _ -`, 'INVALID_CONFIG')
    }
    this.header = Object.freeze({
      version: SESSION_FORMAT_VERSION,
      createdAt: Date.now(),
      ...options.header,
      id: this.id,
    })
    const stored = options.log
    const known = knownTypesOf(options)
    const fold = stored instanceof VerifiedLog ? stored.takeFold(known) : undefined
    const start = fold === undefined ? options.start : undefined
    if (start !== undefined && (start.log.length !== stored?.lazyPrefix?.length || start.log.tailRecords.length > 0)) {
      throw new HarnessError('a resume fold must stand for exactly the unread prefix of the log it starts', 'INVALID_STATE')
    }
    const base = fold ?? start
    this.#log = base?.log ?? new EventLog()
    this.#surface = base?.surface ?? new Surface()
    if (base !== undefined) {
      this.#header = base.header
      this.#context = base.context
      this.#lastTurn = base.lastTurn
      this.#openTurn = base.openTurn
    }
    if (options.seed !== undefined || stored !== undefined) {
      if (fold === undefined) {
        for (const record of (start !== undefined ? stored?.tailRecords : stored?.records) ?? []) {
          if (record instanceof CompactRun) this.#adoptRun(record, known)
          else this.#adopt(record, known)
        }
      }
      for (const event of options.seed ?? []) this.#adopt(event, known)
      const last = this.#log.typeAt(this.#log.length - 1)
      if (options.endSeed === true && last !== 'session/end-seed') this.append('session/end-seed', {})
    }
    this.#wiring = options.wiring
  }

  /**
   * @internal Checks a stored log exactly as a Session built from it does (envelope, known types, surface
   * rules) and returns it with the fold that check built, for the Session that resumes it to take over
   * (`new Session({ log: verified })`) instead of walking the log again. The returned log holds the same
   * records as `options.log`, which is left as it was.
   * @throws HarnessError `SESSION_CORRUPT` as the constructor
   */
  static verify(options: SessionOptions & { readonly log: EventLog }): VerifiedLog {
    const checked = new Session({ ...options, seed: undefined, endSeed: false, wiring: undefined })
    const fold: LogFold = {
      log: checked.#log,
      surface: checked.#surface,
      header: checked.#header,
      context: checked.#context,
      lastTurn: checked.#lastTurn,
      openTurn: checked.#openTurn,
    }
    return new VerifiedLog(options.log, knownTypesOf(options), fold)
  }

  /** Connects (or replaces) the persistence/validation/publication wiring. */
  wire(wiring: SessionWiring | undefined): void {
    // A session that refuses appends keeps refusing: a new wiring must not reopen a log with a gap in it.
    this.#wiring = this.#refusal === undefined ? wiring : refusingWiring(this.#refusal)
  }

  /**
   * Set once this session refuses every append because a flush its turn depended on failed (docs/stores.md,
   * "When a write fails"): the error each later append throws. Resume the session from its store to go on.
   */
  get writeFailure(): HarnessError | undefined {
    return this.#refusal
  }

  /** Number of events (= the next seq). */
  get length(): number {
    return this.#log.length
  }

  /** All events, frozen (`event.seq === index`). A snapshot array, rebuilt after appends: avoid on hot paths. */
  get events(): readonly SessionEvent[] {
    this.#eventsView ??= Object.freeze(this.#log.toArray())
    return this.#eventsView
  }

  /** The event at `seq`. */
  at(seq: number): SessionEvent | undefined {
    return this.#log.at(seq)
  }

  /** @internal The type of the event at `seq`, without materialising a compact chunk. */
  typeAt(seq: number): string | undefined {
    return this.#log.typeAt(seq)
  }

  /** @internal The compact log itself (read-only use: stores and crash repair). */
  get log(): EventLog {
    return this.#log
  }

  /** Number of the last opened turn (0 before any). */
  get lastTurn(): number {
    return this.#lastTurn
  }

  /** The turn currently open in the log, if any. */
  get openTurn(): number | undefined {
    return this.#openTurn
  }

  /**
   * Appends an event: snapshot → envelope and surface checks → veto hooks → commit → publish.
   * @param type - event type; plugin types are log-only and must not carry a surfaceOp
   * @param data - lossless JSON payload (copied)
   * @param options - `surfaceOp` (required on surface types), `sourceEventSeqs`, or `ignorable`
   * @throws HarnessError `INVALID_JSON`, `INVALID_EVENT`, `REENTRANT_APPEND`, or a validator's veto
   */
  append(type: string, data: unknown, options?: AppendOptions): SessionEvent {
    return this.#append(type, data, options, true)
  }

  /**
   * Appends a structural closing event that `session/validate` guards cannot veto: the loop's `step/end` and
   * `turn/end` and the closers that answer tool calls left without a result after a refused append. The
   * session's own envelope and surface rules and the store's persistence still apply. This is what keeps one
   * vetoed append from leaving a turn open that no later turn could follow (seed §3: every opened step and turn is closed). Not for plugins.
   * @internal
   */
  appendCloser(type: string, data: unknown, options?: AppendOptions): SessionEvent {
    return this.#append(type, data, options, false)
  }

  /**
   * @internal The loop's `turn/end`, provisional until its flush settles: committed now (its seq is taken, the
   * store has it), but published — with every event appended meanwhile, in seq order — only by
   * {@link settleTurnEnd}, so no listener hears of a turn end the store may lack. `guarded` as for
   * {@link append} (true) or {@link appendCloser} (false).
   */
  appendTurnEnd(data: { readonly turn: number; readonly reason: TurnEndReason }, guarded: boolean): SessionEvent {
    return this.#append('turn/end', data, undefined, guarded, true)
  }

  /**
   * @internal Ends the wait {@link appendTurnEnd} began, once its flush settled; then publishes what was held.
   * With a `failure` the provisional `turn/end` is first replaced by `turn/end {error SESSION_WRITE_FAILED}`
   * (the log records what is reported), and the session refuses every later append with {@link writeFailure}
   * (docs/stores.md, "When a write fails") — also when there was no provisional `turn/end` to replace.
   */
  settleTurnEnd(failure?: unknown): void {
    const held = this.#held
    const publish = this.#wiring?.publish
    this.#held = undefined
    if (failure !== undefined) {
      const first = held?.[0]
      if (first !== undefined) {
        const replaced = turnEndNotWritten(first, failure)
        this.#log.replaceEvent(replaced)
        this.#eventsView = undefined
        ;(held as SessionEvent[])[0] = replaced
      }
      this.#refusal ??= writeRefusal(this.id, (first?.data as { turn?: number } | undefined)?.turn ?? this.#lastTurn, failure)
      this.#wiring = refusingWiring(this.#refusal)
    }
    if (held === undefined || publish === undefined) return
    for (const event of held) {
      this.#publishing = true
      try {
        publish(this, event)
      } finally {
        this.#publishing = false
      }
    }
  }

  /**
   * @internal The loop's streamed chunk: the same `assistant/chunk` `{turn, step, chunk}` event as
   * `append('assistant/chunk', …)`, kept compact in the log. No event object is built unless the wiring wants
   * one (a validate or event listener, or a store without `persistChunk`). Anything unusual (a chunk that is not
   * deep-frozen JSON, a re-entrant call) takes the ordinary `append` path, errors included.
   * @param frozen - the caller vouches that `chunk` is deep-frozen lossless JSON (it just made it so): no walk
   * @returns the chunk's seq
   */
  appendChunk(turn: number, step: number, chunk: StreamChunk, frozen = false): number {
    if (this.#publishing || !Number.isSafeInteger(turn) || !Number.isSafeInteger(step) || !(frozen || isDeepFrozenJson(chunk))) {
      return this.#append('assistant/chunk', Object.freeze({ turn, step, chunk }), undefined, true).seq
    }
    const wiring = this.#wiring
    const shown = chunkEventsWanted(wiring)
    const record = this.#chunkRecord
    record.seq = this.#log.length
    record.time = Date.now()
    record.turn = turn
    record.step = step
    record.chunk = chunk
    // The event object only for those who read one: a listener or validator, or a store without the compact path.
    const needed = shown || (wiring?.compactRecords !== true && wiring?.persist !== undefined)
    const event = needed ? chunkEvent(record.seq, record.time, turn, step, chunk) : undefined
    this.#commitPipeline(event, record, shown ? VALIDATE | PUBLISH : 0)
    return record.seq
  }

  /**
   * @internal The loop's text or reasoning delta, given as its parts (`{type, index, text}`): the same event as
   * {@link appendChunk} of that chunk, but on the compact path no chunk object is made at all (the log and a
   * store with `persistText` keep the bare text). Falls back to {@link appendChunk} whenever an event is wanted.
   * @returns the chunk's seq
   */
  appendText(turn: number, step: number, type: 'text-delta' | 'reasoning-delta', index: number, text: string): number {
    const wiring = this.#wiring
    if (this.#publishing || wiring?.compactRecords !== true || chunkEventsWanted(wiring) || !Number.isSafeInteger(turn) || !Number.isSafeInteger(step)) {
      return this.appendChunk(turn, step, Object.freeze({ type, index, text }), true)
    }
    const record = this.#textRecord
    record.seq = this.#log.length
    record.time = Date.now()
    record.turn = turn
    record.step = step
    record.type = type
    record.index = index
    record.text = text
    this.#commitPipeline(undefined, record, 0)
    return record.seq
  }

  #append(type: string, data: unknown, options: AppendOptions | undefined, guarded: boolean, provisional = false): SessionEvent {
    if (typeof type !== 'string' || type === '') throw new HarnessError('event type must be a non-empty string', 'INVALID_EVENT')
    let snapshot: JsonValue
    try {
      snapshot = snapshotJsonFrozen(data)
    } catch (error) {
      throw new HarnessError((error as Error).message.replace(/^value/, `'${type}' event data`), 'INVALID_JSON', { cause: error })
    }
    if (this.#publishing) {
      throw new HarnessError(`'${type}' appended from inside a session/event listener of the same session; append later instead`, 'REENTRANT_APPEND')
    }
    const legacy = legacyProblem(type, snapshot)
    if (legacy !== undefined) throw new HarnessError(`'${type}' refused: ${legacy}`, 'INVALID_EVENT')
    const event = buildEvent(type, this.#log.length, snapshot, options)
    this.#commitPipeline(event, undefined, (guarded ? VALIDATE : 0) | PUBLISH | (provisional ? PROVISIONAL : 0))
    return event
  }

  /**
   * The one commit pipeline every append takes: validate → persist → commit → publish. `event` is the event
   * object (undefined for a chunk nobody needs as one), `chunk` the loop's compact chunk when it is one; the
   * store gets that compact form when its wiring has one, the event otherwise. `steps` says whether the
   * `validate` hook may veto (not for closers, nor for a chunk nobody listens to), whether the event is
   * published, and whether it is a provisional `turn/end` (held with what follows until {@link settleTurnEnd}).
   */
  #commitPipeline(event: SessionEvent | undefined, chunk: ChunkRecord | TextRecord | undefined, steps: number): void {
    const wiring = this.#wiring
    // validate: the session's own surface rules, then the wiring's veto. A throw leaves nothing behind.
    if (event !== undefined) {
      this.#surface.validateNext(event, this.#log)
      if ((steps & VALIDATE) !== 0) wiring?.validate?.(this, event)
    }
    // persist: the store's buffer (a throw vetoes the append too).
    if (chunk !== undefined && wiring?.compactRecords === true) wiring.persist?.(this, chunk)
    else if (event !== undefined) wiring?.persist?.(this, event)
    // commit
    if (chunk === undefined) this.#commit(event as SessionEvent)
    else this.#commitChunk(chunk, (steps & PUBLISH) !== 0 ? event : undefined)
    // publish, in seq order: held behind a provisional turn/end until it settles.
    if (event === undefined || (steps & PUBLISH) === 0) return
    if ((steps & PROVISIONAL) !== 0 && this.#held === undefined) {
      this.#held = [event]
      return
    }
    if (wiring?.publish === undefined) return
    if (this.#held !== undefined) {
      this.#held.push(event)
      return
    }
    this.#publishing = true
    try {
      wiring.publish(this, event)
    } finally {
      this.#publishing = false
    }
  }

  /**
   * The model-visible history folded from the log. Incremental: only surface nodes added since the last call
   * are projected; a replace triggers one full re-fold. Returns shared frozen messages (the logged objects).
   */
  deriveMessages(): Message[] {
    this.#catchUp()
    // Copy the unfrozen working array: V8 slices a frozen array on a slow generic path (~80x slower).
    return this.#derived.slice()
  }

  /**
   * The same history as {@link deriveMessages}, as one frozen array shared by every caller until the history
   * changes (what the loop puts in a request: no per-attempt copy).
   */
  deriveMessagesFrozen(): readonly Message[] {
    this.#catchUp()
    if (this.#derivedView === undefined) {
      this.#derivedView = Object.freeze(this.#derived.slice())
      markHistoryLineage(this.#derivedView, this.#lineage)
    }
    return this.#derivedView
  }

  /**
   * The frozen history of {@link deriveMessagesFrozen} together with whether any message carries adapter
   * replay state, which the fold counts as it goes: the loop hands it to `LlmRegistry#pump`, so the adapter
   * boundary need not scan the history on every request.
   */
  historyView(): HistoryView {
    const messages = this.deriveMessagesFrozen()
    if (this.#historyView?.messages !== messages) this.#historyView = { messages, hasReplayState: this.#replayStateMessages > 0 }
    return this.#historyView
  }

  #catchUp(): void {
    if (this.#derivedGeneration !== this.#surface.generation || this.#projectedNodes !== this.#surface.nodes.length) this.#fold()
  }

  #fold(): void {
    if (this.#derivedGeneration !== this.#surface.generation) {
      this.#derived.length = 0
      this.#replayStateMessages = 0
      this.#projectedNodes = 0
      this.#derivedGeneration = this.#surface.generation
      this.#derivedView = undefined
      this.#lineage = {}
    }
    const nodes = this.#surface.nodes
    for (; this.#projectedNodes < nodes.length; this.#projectedNodes++) {
      const message = projectSurfaceEvent(this.#log.at(nodes[this.#projectedNodes] as number) as SessionEvent)
      if (message !== undefined) {
        if (message.source.kind === 'model' && message.source.replayState !== undefined) this.#replayStateMessages++
        this.#derived.push(message)
        this.#derivedView = undefined
      }
    }
  }

  /** Seqs of the current surface nodes (the events history is folded from), in history order. */
  surfaceNodes(): readonly number[] {
    return this.#surface.nodes
  }

  /** Latest canonical request header in the log. */
  requestHeader(): RequestHeader | undefined {
    return this.#header
  }

  /** Latest `request/context` record in the log. */
  requestContext(): { provider: string; model: string; contextWindow?: number } | undefined {
    return this.#context
  }

  /** Seq of the last `session/end-seed`, or -1 (the boundary between inherited and own history). */
  seedBoundary(): number {
    const n = this.header.seedLength
    return n === undefined ? -1 : n
  }

  #adopt(raw: EventRecord | SessionEvent, known: ReadonlySet<string>): void {
    const seq = this.#log.length
    if (typeof raw !== 'object' || raw === null) throw corrupt(seq, 'an event must be an object')
    // for…in over own keys (a JSON.parse result or frozen event: no inherited enumerable keys), no key array.
    for (const key in raw) if (Object.hasOwn(raw, key) && !ENVELOPE_KEYS.has(key)) throw corrupt(seq, `unexpected envelope key '${key}'`)
    if (raw.seq !== seq) throw corrupt(seq, `seq ${String(raw.seq)} where ${seq} was expected`)
    if (typeof raw.type !== 'string' || raw.type === '') throw corrupt(seq, 'missing type')
    if (!Number.isSafeInteger(raw.time)) throw corrupt(seq, 'time must be an integer')
    if (raw.ignorable !== undefined && raw.ignorable !== true) throw corrupt(seq, 'ignorable must be true or absent')
    const legacy = legacyProblem(raw.type, raw.data)
    if (legacy !== undefined) throw corrupt(seq, legacy)
    if (!known.has(raw.type) && raw.ignorable !== true) {
      throw corrupt(seq, `unknown event type '${raw.type}' is not marked ignorable (written by a newer ledgerloop or a plugin that is not installed?)`)
    }
    const event = (Object.isFrozen(raw) ? raw : snapshotJsonFrozen(raw, `event ${seq}`)) as SessionEvent
    try {
      this.#surface.validateNext(event, this.#log)
    } catch (error) {
      throw corrupt(seq, (error as Error).message, error)
    }
    this.#commit(event)
  }

  // A stored chunk run: its members were checked when it was decoded (exact chunk shapes, integer times), so
  // adopting it is a seq check and a surface advance, not a walk over its members.
  #adoptRun(run: CompactRun, known: ReadonlySet<string>): void {
    const seq = this.#log.length
    if (run.seq0 !== seq) throw corrupt(seq, `seq ${run.seq0} where ${seq} was expected`)
    if (!known.has('assistant/chunk')) throw corrupt(seq, `unknown event type 'assistant/chunk' is not marked ignorable`)
    this.#log.pushRun(run)
    this.#surface.advance(run.count)
    this.#eventsView = undefined
  }

  // A compact chunk joins the log's open run (with its event, when one was built for a listener to keep).
  #commitChunk(chunk: ChunkRecord | TextRecord, event: SessionEvent | undefined): void {
    if (chunk.kind === 'text') this.#log.pushText(chunk.time, chunk.turn, chunk.step, chunk.type, chunk.index, chunk.text)
    else this.#log.pushChunk(chunk.time, chunk.turn, chunk.step, chunk.chunk, event)
    this.#surface.advance(1)
    this.#eventsView = undefined
  }

  #commit(event: SessionEvent): void {
    this.#log.push(event)
    this.#surface.apply(event)
    this.#eventsView = undefined
    switch (event.type) {
      case 'turn/start':
        this.#lastTurn = (event.data as { turn: number }).turn
        this.#openTurn = this.#lastTurn
        break
      case 'turn/end':
        this.#openTurn = undefined
        break
      case 'request/header':
        this.#header = (event.data as unknown as { header: RequestHeader }).header
        break
      case 'request/context':
        this.#context = event.data as unknown as { provider: string; model: string; contextWindow?: number }
        break
    }
  }
}

/** The event types a session accepts without `ignorable`: the built-in ones and the options' extra ones. */
function knownTypesOf(options: SessionOptions): ReadonlySet<string> {
  return options.knownTypes === undefined ? KNOWN_EVENT_TYPES : new Set([...KNOWN_EVENT_TYPES, ...options.knownTypes])
}

// What a step of the commit pipeline does for one append (see Session#commitPipeline).
/** The `validate` hook may veto it. */
const VALIDATE = 1
/** Listeners hear of it. */
const PUBLISH = 2
/** A provisional `turn/end`: held, with what follows, until the turn end settles. */
const PROVISIONAL = 4

/** A record the session fills in place for each streamed chunk. */
type Refilled<T> = { -readonly [K in keyof T]: T[K] }

const NO_CHUNK: StreamChunk = Object.freeze({ type: 'text-delta', index: 0, text: '' })

/** A wiring that refuses every append with `refusal`: nothing is logged behind a batch the store lost. */
function refusingWiring(refusal: HarnessError): SessionWiring {
  const refuse = (): never => {
    throw refusal
  }
  // No validate or publish: chunks take the compact path, whose persist refuses too.
  return { persist: refuse, compactRecords: true }
}

/** Whether a streamed chunk needs its event object: a validate or publish hook is wired and wants chunks. */
function chunkEventsWanted(wiring: SessionWiring | undefined): boolean {
  return wiring !== undefined && (wiring.validate !== undefined || wiring.publish !== undefined) && (wiring.wantsChunkEvents?.() ?? true)
}
