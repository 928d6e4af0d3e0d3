import { deepFreeze, hasExactKeys, type JsonValue } from '../json/lossless.js'
import type { StreamChunk } from '../llm/types.js'
import { CompactRun, type ChunkTemplate, type EventLog } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'

/** A run shorter than this is stored event by event: packing two chunks saves nothing. */
export const MIN_CHUNK_RUN = 3
/** Most events one packed row holds, so a row (and what one bad row can take with it) stays bounded. */
export const MAX_CHUNK_RUN = 1024

/** Storage tag of a packed run of text or reasoning deltas. */
export type TextRunTag = 'text-chunks' | 'reasoning-chunks'

/**
 * A packed run of ≥ {@link MIN_CHUNK_RUN} consecutive `assistant/chunk` text or reasoning deltas of one
 * block. Member `i` has seq `seq0 + i` and time `time0 + dt[0] + … + dt[i-1]`.
 */
export interface TextChunkRun {
  readonly type: TextRunTag
  readonly seq0: number
  readonly time0: number
  readonly data: { readonly turn: number; readonly step: number; readonly index: number; readonly dt: number[]; readonly texts: string[] }
}

/** A packed run of `tool-call-delta` chunks of one call (same id, same presence and value of `name`). */
export interface ToolCallChunkRun {
  readonly type: 'tool-call-chunks'
  readonly seq0: number
  readonly time0: number
  readonly data: {
    readonly turn: number
    readonly step: number
    readonly index: number
    readonly id: string
    readonly name?: string
    readonly dt: number[]
    readonly args: string[]
  }
}

/** A packed chunk run. */
export type ChunkRun = TextChunkRun | ToolCallChunkRun

/** One stored record: an event kept verbatim, or a packed run standing for several events. */
export type StorageRecord = SessionEvent | ChunkRun

/** What a packable chunk event contributes to a run; events with equal {@link sameRun} fields may share one. */
interface Member {
  readonly tag: TextRunTag | 'tool-call-chunks'
  readonly turn: number
  readonly step: number
  readonly index: number
  readonly id: string | undefined
  /** Whether the delta has a `name` key (then `name` is its string value). */
  readonly named: boolean
  readonly name: string | undefined
  readonly payload: string
}

/**
 * Packs runs of chunk events into rows; everything else (and any chunk whose shape is not exactly the
 * whitelisted one, key order included) is kept verbatim, so decoding gives byte-identical events.
 * @param events - consecutive events (contiguous seqs)
 */
export function packChunkRuns(events: readonly SessionEvent[]): StorageRecord[] {
  const records: StorageRecord[] = []
  let i = 0
  while (i < events.length) {
    const first = events[i] as SessionEvent
    const member = packableMember(first)
    if (member === undefined) {
      records.push(first)
      i++
      continue
    }
    // Each member is examined once: its payload and time step are collected as the run grows.
    const dt: number[] = []
    const payloads: string[] = [member.payload]
    let end = i + 1
    while (end < events.length && end - i < MAX_CHUNK_RUN) {
      const prev = events[end - 1] as SessionEvent
      const next = events[end] as SessionEvent
      const step = next.time - prev.time
      if (next.seq !== prev.seq + 1 || !Number.isSafeInteger(step)) break
      const nextMember = packableMember(next)
      if (nextMember === undefined || !sameRun(member, nextMember)) break
      dt.push(step)
      payloads.push(nextMember.payload)
      end++
    }
    if (end - i < MIN_CHUNK_RUN) {
      records.push(first)
      i++
      continue
    }
    records.push(buildRun(member, first, dt, payloads))
    i = end
  }
  return records
}

function sameRun(a: Member, b: Member): boolean {
  return a.tag === b.tag && a.turn === b.turn && a.step === b.step && a.index === b.index && a.id === b.id && a.named === b.named && a.name === b.name
}

function buildRun(member: Member, first: SessionEvent, dt: number[], payloads: string[]): ChunkRun {
  const { turn, step, index } = member
  if (member.tag === 'tool-call-chunks') {
    const id = member.id as string
    const data = member.named ? { turn, step, index, id, name: member.name as string, dt, args: payloads } : { turn, step, index, id, dt, args: payloads }
    return { type: 'tool-call-chunks', seq0: first.seq, time0: first.time, data }
  }
  return { type: member.tag, seq0: first.seq, time0: first.time, data: { turn, step, index, dt, texts: payloads } }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

const EVENT_KEYS = ['type', 'seq', 'time', 'data']
const CHUNK_DATA_KEYS = ['turn', 'step', 'chunk']
const TEXT_KEYS = ['type', 'index', 'text']
const TOOL_KEYS_NAMED = ['type', 'index', 'id', 'name', 'argumentsDelta']
const TOOL_KEYS = ['type', 'index', 'id', 'argumentsDelta']

// Only the exact shapes the decoder rebuilds may be packed: anything else must stay verbatim.
function packableMember(event: SessionEvent): Member | undefined {
  if (event.type !== 'assistant/chunk' || !hasExactKeys(event, EVENT_KEYS)) return undefined
  if (!Number.isSafeInteger(event.seq) || !Number.isSafeInteger(event.time)) return undefined
  // Read as plain JSON: this check is what establishes the shape, so it may not assume it.
  const data: JsonValue = event.data
  if (!isRecord(data) || !hasExactKeys(data, CHUNK_DATA_KEYS)) return undefined
  const { turn, step, chunk } = data
  if (!Number.isSafeInteger(turn) || !Number.isSafeInteger(step) || !isRecord(chunk)) return undefined
  const index = chunk.index
  if (!Number.isSafeInteger(index)) return undefined
  if ((chunk.type === 'text-delta' || chunk.type === 'reasoning-delta') && hasExactKeys(chunk, TEXT_KEYS) && typeof chunk.text === 'string') {
    const tag = chunk.type === 'text-delta' ? 'text-chunks' : 'reasoning-chunks'
    return { tag, turn: turn as number, step: step as number, index: index as number, id: undefined, named: false, name: undefined, payload: chunk.text }
  }
  if (chunk.type !== 'tool-call-delta' || typeof chunk.id !== 'string' || typeof chunk.argumentsDelta !== 'string') return undefined
  const named = hasExactKeys(chunk, TOOL_KEYS_NAMED)
  if (!named && !hasExactKeys(chunk, TOOL_KEYS)) return undefined
  if (named && typeof chunk.name !== 'string') return undefined
  return {
    tag: 'tool-call-chunks',
    turn: turn as number,
    step: step as number,
    index: index as number,
    id: chunk.id,
    named,
    name: named ? (chunk.name as string) : undefined,
    payload: chunk.argumentsDelta,
  }
}

/**
 * Expands one parsed stored record into its events: a packed run is validated strictly and rebuilt into
 * byte-identical events; any other object is returned as the single event it is (the Session validates it).
 * @throws Error describing the defect (callers add the file and line)
 */
export function decodeRecord(record: unknown): SessionEvent[] {
  const decoded = decodeCompact(record)
  if (!(decoded instanceof CompactRun)) return [decoded]
  const events: SessionEvent[] = []
  for (let k = 0; k < decoded.count; k++) {
    const chunk = decoded.chunkAt(k)
    events.push({ type: 'assistant/chunk', seq: decoded.seq0 + k, time: decoded.times[k], data: { turn: decoded.turn, step: decoded.step, chunk } } as unknown as SessionEvent)
  }
  return events
}

/**
 * Decodes one parsed stored record straight into a compact log: a packed run becomes one sealed
 * {@link CompactRun} (its payload array is kept as is: no event object per member), any other record one
 * deep-frozen event. Validation is the same as {@link decodeRecord}'s.
 * @returns the record's first seq
 * @throws Error describing the defect (callers add the file and line)
 */
export function decodeRecordInto(record: unknown, log: EventLog): number {
  const decoded = decodeCompact(record)
  if (decoded instanceof CompactRun) {
    log.pushRun(decoded)
    return decoded.seq0
  }
  log.push(freezeParsed(decoded))
  return decoded.seq
}

/**
 * Deep-freezes a JSON.parse result: plain objects and arrays with own enumerable data properties only, so a
 * for…in walk is enough (deepFreeze's descriptor walk costs several times more on a big load).
 * @internal
 */
export function freezeParsed<T>(value: T, depth = 0): T {
  if (typeof value !== 'object' || value === null) return value
  if (depth > 256) return deepFreeze(value) // iterative: no deep recursion on a pathological record
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) freezeParsed(value[i], depth + 1)
  } else {
    const record = value as Record<string, unknown>
    for (const key in record) freezeParsed(record[key], depth + 1)
  }
  return Object.freeze(value)
}

/**
 * One parsed stored record checked: a packed row becomes a sealed {@link CompactRun}, any other object is
 * returned as the (not yet frozen) event it is.
 * @throws Error describing the defect (callers add the file and line)
 * @internal
 */
export function decodeCompact(record: unknown): SessionEvent | CompactRun {
  if (!isRecord(record)) throw new Error('a record must be a JSON object')
  if (!Object.hasOwn(record, 'seq0')) {
    if (!Number.isSafeInteger(record.seq)) throw new Error('a stored event needs an integer seq')
    return record as unknown as SessionEvent
  }
  const { type, seq0, time0, data } = record
  if (!hasExactKeys(record, ['type', 'seq0', 'time0', 'data'])) throw new Error('a packed chunk row has unexpected keys')
  if (!Number.isSafeInteger(seq0) || (seq0 as number) < 0 || !Number.isSafeInteger(time0) || !isRecord(data)) {
    throw new Error('a packed chunk row needs integer seq0/time0 and a data object')
  }
  const { turn, step, index, dt } = data
  if (!Number.isSafeInteger(turn) || !Number.isSafeInteger(step) || !Number.isSafeInteger(index)) throw new Error('a packed chunk row needs integer turn/step/index')
  let payloads: unknown
  let template: ChunkTemplate
  if (type === 'text-chunks' || type === 'reasoning-chunks') {
    if (!hasExactKeys(data, ['turn', 'step', 'index', 'dt', 'texts'])) throw new Error(`a ${type} row has unexpected data keys`)
    payloads = data.texts
    template = { type: type === 'text-chunks' ? 'text-delta' : 'reasoning-delta', index: index as number }
  } else if (type === 'tool-call-chunks') {
    const named = Object.hasOwn(data, 'name')
    if (!hasExactKeys(data, named ? ['turn', 'step', 'index', 'id', 'name', 'dt', 'args'] : ['turn', 'step', 'index', 'id', 'dt', 'args'])) {
      throw new Error('a tool-call-chunks row has unexpected data keys')
    }
    const { id, name } = data
    if (typeof id !== 'string' || (named && typeof name !== 'string')) throw new Error('a tool-call-chunks row needs a string id (and name)')
    payloads = data.args
    template = named ? { type: 'tool-call-delta', index: index as number, id, name: name as string } : { type: 'tool-call-delta', index: index as number, id }
  } else {
    throw new Error(`unknown packed row type ${JSON.stringify(type)}`)
  }
  if (!Array.isArray(payloads) || payloads.length < 1 || payloads.length > MAX_CHUNK_RUN || !payloads.every((p) => typeof p === 'string')) {
    throw new Error(`a packed chunk row needs 1..${MAX_CHUNK_RUN} string payloads`)
  }
  if (!Array.isArray(dt) || dt.length !== payloads.length - 1 || !dt.every((d) => Number.isSafeInteger(d))) {
    throw new Error('a packed chunk row needs one integer time gap between each pair of members')
  }
  const times: number[] = new Array<number>(payloads.length)
  let time = time0 as number
  for (let k = 0; k < payloads.length; k++) {
    if (k > 0) time += dt[k - 1] as number
    if (!Number.isSafeInteger(time)) throw new Error('a packed chunk row has a time outside the safe integer range')
    times[k] = time
  }
  return new CompactRun(seq0 as number, turn as number, step as number, template, times, payloads as (string | StreamChunk)[], true)
}

/** First seq a record stands for. */
export function firstSeqOf(record: StorageRecord): number {
  return 'seq0' in record ? record.seq0 : record.seq
}
