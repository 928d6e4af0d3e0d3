import { HarnessError } from '../errors/harness-error.js'
import type { Message } from '../llm/types.js'
import { SURFACE_TYPES, type SessionEvent, type SurfaceOp } from './events.js'

/**
 * The surface: the ordered seqs of message-producing events, the only source of model history
 * (docs/events.md). `append` pushes a node; `replace` swaps an inclusive node range for the new event's node and bumps
 * `generation`, which tells derivations to re-fold.
 */
export class Surface {
  #nodes: number[] = []
  #generation = 0
  #nextSeq = 0

  /**
   * @internal A surface as it stood after `nextSeq` events (a resume checkpoint's): `nodes` in history order and
   * the number of replaces so far.
   */
  static restore(nodes: readonly number[], generation: number, nextSeq: number): Surface {
    const surface = new Surface()
    surface.#nodes = nodes.slice()
    surface.#generation = generation
    surface.#nextSeq = nextSeq
    return surface
  }

  /** Surface node seqs in history order. */
  get nodes(): readonly number[] {
    return this.#nodes
  }

  /** Bumped by every replace. */
  get generation(): number {
    return this.#generation
  }

  /**
   * Checks that `event` may be the next log entry as far as the surface is concerned; throws a
   * `HarnessError` (code `INVALID_EVENT`) naming the rule it breaks. `log` holds the earlier events (an array
   * indexed by seq, or anything with `at(seq)`).
   */
  validateNext(event: SessionEvent, log: EventLookup): void {
    if (event.seq !== this.#nextSeq) fail(event, `seq ${event.seq} is not the next position ${this.#nextSeq}`)
    const isSurface = SURFACE_TYPES.has(event.type)
    if (!isSurface) {
      if (event.surfaceOp !== undefined || event.sourceEventSeqs !== undefined) {
        fail(event, `'${event.type}' is not a surface type and may not carry surfaceOp or sourceEventSeqs`)
      }
      return
    }
    const op = event.surfaceOp
    if (op === undefined) fail(event, `surface event '${event.type}' needs a surfaceOp`)
    validateMessage(event)
    const sources = event.sourceEventSeqs
    if (sources !== undefined) {
      if (!Array.isArray(sources)) fail(event, 'sourceEventSeqs must be an array')
      if (sources.length === 0 && event.type !== 'assistant/message') fail(event, 'an empty sourceEventSeqs is allowed only on assistant/message')
      // A message cites its chunks in order: while the seqs rise, none can repeat, and no set is needed (a long
      // answer cites hundreds). At the first seq out of order, the set's check runs over all of them.
      let previous = -1
      let rising = true
      for (const s of sources) {
        if (!Number.isSafeInteger(s) || s <= previous || s >= event.seq) {
          rising = false
          break
        }
        previous = s
      }
      if (!rising) {
        const seen = new Set<number>()
        for (const s of sources) {
          if (!Number.isSafeInteger(s) || s < 0 || s >= event.seq) fail(event, `source seq ${String(s)} must be an earlier seq`)
          if (seen.has(s)) fail(event, `source seq ${s} repeated`)
          seen.add(s)
        }
      }
    }
    if (op === 'append') return
    if (typeof op !== 'object' || op === null || op.op !== 'replace' || Object.keys(op).length !== 3) fail(event, 'surfaceOp must be "append" or {op:"replace", start, end}')
    const startIndex = this.#nodes.indexOf(op.start)
    const endIndex = this.#nodes.indexOf(op.end)
    if (startIndex < 0 || endIndex < 0) fail(event, `replace range ${op.start}..${op.end} must name current surface nodes`)
    if (startIndex > endIndex) fail(event, `replace start ${op.start} comes after end ${op.end}`)
    const shadowed = this.#nodes.slice(startIndex, endIndex + 1)
    const missing = shadowed.filter((s) => !(sources ?? []).includes(s))
    if (missing.length > 0) fail(event, `a replace must cite every node it shadows in sourceEventSeqs (missing ${missing.join(', ')})`)
    if (event.type === 'tool/result') {
      const old = shadowed.length === 1 ? log.at(shadowed[0] as number) : undefined
      if (old === undefined || old.type !== 'tool/result') fail(event, 'a tool/result replace must shadow exactly one tool/result')
      if (!sameExceptToolContent(old.data, event.data) && !isRerunOf(old, event, log)) {
        fail(event, 'a tool/result replace may change only the tool-result content (or answer the same call by a re-run)')
      }
    }
  }

  /** Moves past `count` log-only events (compact chunk members) without looking at them. */
  advance(count: number): void {
    this.#nextSeq += count
  }

  /** Applies a validated event. */
  apply(event: SessionEvent): void {
    this.#nextSeq = event.seq + 1
    const op = event.surfaceOp
    if (op === undefined) return
    if (op === 'append') {
      this.#nodes.push(event.seq)
      return
    }
    const startIndex = this.#nodes.indexOf(op.start)
    const endIndex = this.#nodes.indexOf(op.end)
    this.#nodes = [...this.#nodes.slice(0, startIndex), event.seq, ...this.#nodes.slice(endIndex + 1)]
    this.#generation++
  }
}

/** Where a surface looks earlier events up by seq: an array, or a log with `at(seq)`. */
export interface EventLookup {
  at(seq: number): SessionEvent | undefined
}

/** The message a surface node contributes to history (empty assistant anchors contribute nothing). */
export function projectSurfaceEvent(event: SessionEvent): Message | undefined {
  switch (event.type) {
    case 'user/message':
      return event.data as unknown as Message
    case 'assistant/message': {
      const data = event.data as unknown as { message: Message; interrupted?: true; note?: unknown }
      const message = data.message
      if (message.content.length === 0) return undefined
      return data.interrupted === true && typeof data.note === 'string' ? markedInterrupted(message, data.note) : message
    }
    case 'tool/result':
      return (event.data as unknown as { message: Message }).message
    default:
      return undefined
  }
}

/**
 * The note the loop logs with an interrupted answer (`assistant/message` with `interrupted: true`, data `note`),
 * which the fold sends to the model as one more text block after the cut-off text: without it the model reads its
 * own cut-off prefix as an answer it chose to end there. It is logged, not inferred, so every request is rebuilt
 * as it was sent: an anchor logged before notes existed has none, and its requests carried none. The wording
 * names no cause: the anchor is logged when the stream stops, before the turn's end reason is.
 */
export const INTERRUPTED_MARKER = '[interrupted: this answer was cut off before it was finished]'

// One marked copy per logged message, so every fold of the same log shares it (as it shares the logged objects).
const markedCopies = new WeakMap<Message, Message>()

function markedInterrupted(message: Message, note: string): Message {
  let marked = markedCopies.get(message)
  if (marked === undefined) {
    const block = Object.freeze({ type: 'text' as const, text: note })
    marked = Object.freeze({ ...message, content: Object.freeze([...message.content, block]) })
    markedCopies.set(message, marked)
  }
  return marked
}

/** A full fold of `events` from scratch: the model-visible history after them. */
export function foldMessages(events: readonly SessionEvent[]): Message[] {
  const surface = new Surface()
  for (const e of events) surface.apply(e)
  const out: Message[] = []
  for (const seq of surface.nodes) {
    const m = projectSurfaceEvent(events[seq] as SessionEvent)
    if (m !== undefined) out.push(m)
  }
  return out
}

function fail(event: SessionEvent, why: string): never {
  throw new HarnessError(`invalid event '${event.type}' at seq ${event.seq}: ${why}`, 'INVALID_EVENT')
}

function validateMessage(event: SessionEvent): void {
  const data = event.data as Record<string, unknown> | null
  const message = (event.type === 'user/message' ? data : (data?.message as Record<string, unknown> | undefined)) as
    | { id?: unknown; role?: unknown; content?: unknown; source?: { kind?: unknown; provider?: unknown; model?: unknown; callId?: unknown } }
    | null
    | undefined
  if (typeof message !== 'object' || message === null) fail(event, 'missing message')
  if (typeof message.id !== 'string' || message.id === '') fail(event, 'message needs a non-empty id')
  const role = event.type === 'assistant/message' ? 'assistant' : 'user'
  if (message.role !== role) fail(event, `message role must be '${role}'`)
  if (!Array.isArray(message.content)) fail(event, 'message content must be an array')
  const source = message.source
  if (typeof source !== 'object' || source === null || typeof source.kind !== 'string' || source.kind === '') fail(event, 'message needs a source kind')
  if (role === 'assistant' && (source.kind !== 'model' || typeof source.provider !== 'string' || source.provider === '' || typeof source.model !== 'string' || source.model === '')) {
    fail(event, 'an assistant message needs a model source with provider and model')
  }
  if (event.type === 'tool/result') {
    const blocks = message.content as { type?: unknown; toolCallId?: unknown }[]
    if (source.kind !== 'tool' || typeof source.callId !== 'string' || source.callId === '') fail(event, 'a tool result needs source {kind:"tool", callId}')
    if (blocks.length !== 1 || blocks[0]?.type !== 'tool-result' || blocks[0].toolCallId !== source.callId) {
      fail(event, 'a tool result needs exactly one tool-result block for its callId')
    }
  }
}

function sameExceptToolContent(a: unknown, b: unknown): boolean {
  const strip = (d: unknown): string => {
    const data = d as { message: { content: { content: unknown }[] } }
    const block = data.message.content[0]
    return JSON.stringify({ ...data, message: { ...data.message, content: [{ ...block, content: null }] } })
  }
  try {
    return strip(a) === strip(b)
  } catch {
    return false
  }
}

/**
 * A re-run's result after a crash (replay policy `safe`/`keyed`): it replaces repair's result for the same call
 * and cites the re-run's `tool/call`, whose `of` names the call that result answered. Everything may differ
 * but the call it answers.
 */
function isRerunOf(old: SessionEvent, event: SessionEvent, log: EventLookup): boolean {
  const callIdOf = (e: SessionEvent): string | undefined => (e.data as { message?: { source?: { callId?: string } } }).message?.source?.callId
  const callId = callIdOf(old)
  if (callId === undefined || callIdOf(event) !== callId) return false
  const original = old.sourceEventSeqs?.[0]
  return (event.sourceEventSeqs ?? []).some((s) => {
    const call = log.at(s)
    const d = call?.data as { callId?: string; of?: number } | undefined
    return call?.type === 'tool/call' && d?.callId === callId && original !== undefined && d.of === original
  })
}

/** Type guard: is this the type of a surface event. */
export function isSurfaceType(type: string): boolean {
  return SURFACE_TYPES.has(type)
}

export type { SurfaceOp }
