// The fold a resume checkpoint keeps (docs/stores.md, "Resume checkpoints"): what a Session, crash repair and
// the loop's inbox need from the events before a turn boundary, so that resuming reads only the events after it.
import type { UserMessage } from '../llm/types.js'
import type { EventLog, InboxState, LazyPrefix } from './event-log.js'
import type { CoreEventData, RequestHeader, SessionEvent } from './events.js'
import { Surface } from './surface.js'
import type { LogFold } from './verified-log.js'

/** A claim of queued input (a splice that removed input without cancelling it), as crash repair reads it. */
export interface InputClaim {
  readonly seq: number
  readonly target: 'next-turn' | 'next-step'
  readonly messages: readonly UserMessage[]
}

/**
 * What the input of the last turn started before the cut did, for crash repair (`lostInputRestores`): its
 * claims, the ids of the user messages it committed, and the claims already restored.
 */
export interface TurnInput {
  /** Seq of that turn's `turn/start`. */
  readonly start: number
  readonly claims: readonly InputClaim[]
  readonly committed: readonly string[]
  readonly restored: readonly number[]
}

/**
 * The fold of a log's first `length` events at a turn boundary (no turn open), as plain JSON. Enough to resume
 * without reading those events: the surface, the latest request header and context (as their events), the
 * last turn, the inbox, and per event type the seq of its last event.
 */
export interface ResumeFoldState {
  /** Events covered (the seq the tail starts at). */
  readonly length: number
  /** Number of the last turn opened (0 before any). */
  readonly lastTurn: number
  /** Surface node seqs in history order. */
  readonly nodes: readonly number[]
  /** Replaces folded so far (the surface's generation). */
  readonly generation: number
  /** Per event type (chunks aside), the seq of its last event. */
  readonly lastOfType: Readonly<Record<string, number>>
  /**
   * Events kept whole, ascending seq: the last one of each structural type (turn and step marks, request header
   * and context, quarantine marks, seed end) and every plugin-sourced user message (runtime-context snapshots).
   */
  readonly kept: readonly SessionEvent[]
  /** The inbox as its splices leave it (from the seed boundary on). */
  readonly inbox: InboxState
  /** The last turn's input, when a turn was started (see {@link TurnInput}). */
  readonly turnInput?: TurnInput
}

/** Types whose last event a checkpoint keeps whole: small, and what resume and repair look up by seq. */
const KEPT_TYPES: ReadonlySet<string> = new Set([
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'request/header',
  'request/context',
  'session/quarantined',
  'session/quarantine-lifted',
  'session/end-seed',
])

/**
 * Follows a log event by event (whole events; chunk members are only counted) and gives the
 * {@link ResumeFoldState} of any turn boundary it passes. Store writers feed it what they commit; it trusts the
 * events (the Session checked them before they reached the writer).
 * @internal
 */
export class ResumeFoldTracker {
  readonly #seedLength: number
  #length = 0
  #surface = new Surface()
  #lastTurn = 0
  #open = false
  readonly #lastOfType = new Map<string, number>()
  readonly #kept = new Map<string, SessionEvent>()
  readonly #pluginMessages: SessionEvent[] = []
  #lists: { 'next-turn': UserMessage[]; 'next-step': UserMessage[] } = { 'next-turn': [], 'next-step': [] }
  #keys = new Map<string, string>()
  #turnInput: { start: number; claims: InputClaim[]; committed: string[]; restored: number[] } | undefined
  /** False once an event was seen that this fold cannot follow (then it gives no state). */
  #sound = true

  /** @param seedLength - the session's seed length (the inbox of a fork starts after its seed) */
  constructor(seedLength = 0, from?: ResumeFoldState) {
    this.#seedLength = seedLength
    if (from === undefined) return
    this.#length = from.length
    this.#surface = Surface.restore(from.nodes, from.generation, from.length)
    this.#lastTurn = from.lastTurn
    for (const [type, seq] of Object.entries(from.lastOfType)) this.#lastOfType.set(type, seq)
    for (const event of from.kept) {
      if (KEPT_TYPES.has(event.type)) this.#kept.set(event.type, event)
      else this.#pluginMessages.push(event)
    }
    this.#lists = { 'next-turn': [...from.inbox.nextTurn], 'next-step': [...from.inbox.nextStep] }
    this.#keys = new Map(from.inbox.keys)
    const t = from.turnInput
    if (t !== undefined) this.#turnInput = { start: t.start, claims: [...t.claims], committed: [...t.committed], restored: [...t.restored] }
  }

  /** Events followed so far (the next seq). */
  get length(): number {
    return this.#length
  }

  /** Whether the events so far end at a turn boundary (a turn ended, none open) that a checkpoint may cut at. */
  get atBoundary(): boolean {
    return this.#sound && !this.#open && this.#lastOfType.get('turn/end') === this.#length - 1
  }

  /** Counts `count` chunk members (they change nothing a resume needs). */
  skip(count: number): void {
    this.#length += count
    this.#surface.advance(count)
  }

  /** Follows one whole event (its seq may be past {@link length}: the members between are chunks). */
  observe(event: SessionEvent): void {
    if (event.seq < this.#length) {
      this.#sound = false
      return
    }
    if (event.seq > this.#length) this.skip(event.seq - this.#length)
    this.#length = event.seq + 1
    if (event.type === 'assistant/chunk') {
      this.#surface.advance(1)
      return
    }
    try {
      this.#surface.apply(event)
    } catch {
      this.#sound = false
    }
    this.#lastOfType.set(event.type, event.seq)
    if (KEPT_TYPES.has(event.type)) this.#kept.set(event.type, event)
    const d = event.data as Record<string, unknown>
    switch (event.type) {
      case 'turn/start':
        this.#lastTurn = d.turn as number
        this.#open = true
        this.#turnInput = { start: event.seq, claims: [], committed: [], restored: [] }
        break
      case 'turn/end':
        this.#open = false
        break
      case 'user/message': {
        const message = event.data as unknown as UserMessage
        if (message.source?.kind === 'plugin') this.#pluginMessages.push(event)
        this.#turnInput?.committed.push(message.id)
        break
      }
      case 'agent/inbox/spliced':
        this.#splice(event)
        break
    }
  }

  // The inbox's own replay (from the seed boundary on), plus the claims crash repair looks at.
  #splice(event: SessionEvent): void {
    const d = event.data as unknown as CoreEventData['agent/inbox/spliced']
    const list = this.#lists[d.target]
    if (list === undefined || !Array.isArray(d.inserted)) {
      this.#sound = false
      return
    }
    const removed = list.splice(d.start, d.removedCount ?? 0, ...d.inserted)
    if (event.seq < this.#seedLength) {
      // A fork's inherited splices: the inbox starts empty after the seed (the loop's Inbox replays from there).
      this.#lists = { 'next-turn': [], 'next-step': [] }
      this.#keys.clear()
      return
    }
    if (d.key !== undefined && d.inserted[0] !== undefined && !this.#keys.has(d.key)) this.#keys.set(d.key, d.inserted[0].id)
    const input = this.#turnInput
    if (input === undefined) return
    if (d.restores !== undefined) input.restored.push(d.restores)
    if ((d.removedCount ?? 0) > 0 && d.inserted.length === 0 && d.outcome === undefined && d.restores === undefined) input.claims.push({ seq: event.seq, target: d.target, messages: removed })
  }

  /** The state at this point, or undefined when it is not a turn boundary (or the fold lost track). */
  state(): ResumeFoldState | undefined {
    if (!this.atBoundary) return undefined
    const kept = [...this.#kept.values(), ...this.#pluginMessages].sort((a, b) => a.seq - b.seq)
    const t = this.#turnInput
    return {
      length: this.#length,
      lastTurn: this.#lastTurn,
      nodes: this.#surface.nodes.slice(),
      generation: this.#surface.generation,
      lastOfType: Object.fromEntries(this.#lastOfType),
      kept,
      inbox: { nextTurn: [...this.#lists['next-turn']], nextStep: [...this.#lists['next-step']], keys: [...this.#keys] },
      ...(t !== undefined ? { turnInput: { start: t.start, claims: [...t.claims], committed: [...t.committed], restored: [...t.restored] } } : {}),
    }
  }
}

/** The {@link ResumeFoldState} of a whole log that ends at a turn boundary (undefined otherwise). */
export function resumeFoldOf(log: EventLog, seedLength = 0): ResumeFoldState | undefined {
  const tracker = new ResumeFoldTracker(seedLength)
  log.forEachEvent(0, (event) => tracker.observe(event))
  tracker.skip(log.length - tracker.length)
  return tracker.state()
}

/**
 * The unread prefix a checkpoint stands for: what it kept, and `load` (memoised) for everything else.
 * @param load - reads and checks the prefix (called at most once)
 */
export function lazyPrefixOf(state: ResumeFoldState, load: () => EventLog): LazyPrefix {
  let loaded: EventLog | undefined
  const kept = new Map(state.kept.map((event) => [event.seq, event] as const))
  const plugins = new Map<string, number[]>()
  for (const event of [...state.kept].reverse()) {
    const source = (event.data as { source?: { kind?: string; plugin?: string } }).source
    if (event.type !== 'user/message' || source?.kind !== 'plugin' || typeof source.plugin !== 'string') continue
    const seqs = plugins.get(source.plugin)
    if (seqs === undefined) plugins.set(source.plugin, [event.seq])
    else seqs.push(event.seq)
  }
  return {
    length: state.length,
    kept,
    lastOfType: new Map(Object.entries(state.lastOfType)),
    inbox: state.inbox,
    ...(state.turnInput !== undefined ? { turnInput: state.turnInput } : {}),
    pluginMessages: (plugin) => plugins.get(plugin) ?? [],
    load: () => (loaded ??= load()),
  }
}

/** The fold a Session starts from when it resumes from a checkpoint: `log` holds the unread prefix only. */
export function foldOfCheckpoint(state: ResumeFoldState, log: EventLog): LogFold {
  const byType = new Map(state.kept.filter((e) => KEPT_TYPES.has(e.type)).map((e) => [e.type, e] as const))
  const header = byType.get('request/header')?.data as unknown as { header: RequestHeader } | undefined
  const context = byType.get('request/context')?.data as unknown as { provider: string; model: string; contextWindow?: number } | undefined
  return { log, surface: Surface.restore(state.nodes, state.generation, state.length), header: header?.header, context, lastTurn: state.lastTurn, openTurn: undefined }
}
