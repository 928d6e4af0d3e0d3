// Where a fresh request first differs from a recorded one, as a path a person can read ('system',
// 'tools[2].parameters', 'messages[5].content[0].text'). A cassette compares every request it answers, so the
// comparison is incremental: history entries that are the same objects as in the previous, already compared
// request (the loop shares frozen messages between requests) are not walked again, and when the session vouches
// that the fresh history extends the last one (session/history-lineage.ts) the proven prefix is skipped outright.
import type { JsonValue } from '../json/lossless.js'
import type { GenerateOptions, Message } from '../llm/types.js'
import { historyLineage } from '../session/history-lineage.js'
import type { RecordedRequest } from './recorded-requests.js'

/** The first difference between a recorded request and the one a fresh loop built. */
export interface Divergence {
  /** 1-based number of the request (among the requests the cassette received). */
  readonly request: number
  /** Where they differ: a config field (`model`, `maxTokens`, …), `system`, `tools` (names or order), `tools[i]…`, `messages[i]…`. */
  readonly path: string
  /** The recorded value at `path` (`null` when absent). */
  readonly expected: JsonValue
  /** The fresh request's value at `path` (`null` when absent). */
  readonly actual: JsonValue
}

// The fields of a call config (`LlmCallConfig`), which a request carries beside messages, system and tools.
const CONFIG_KEYS: readonly string[] = ['provider', 'model', 'reasoningEffort', 'temperature', 'maxTokens', 'stop']

/**
 * Compares requests one after another with a memory of the last pair it found equal, so a long session's
 * unchanged history costs a pointer comparison per message instead of a deep walk.
 */
export class RequestComparer {
  readonly #provenActual: Message[] = []
  #lastExpected: readonly Message[] = []
  #lastLineage: object | undefined
  #lastTools: { expected: unknown; actual: readonly unknown[] } | undefined
  #keysOf: { config: unknown; keys: readonly string[] } | undefined

  /** The first difference of `actual` from `recorded`, or `undefined` when the fresh request is the recorded one. */
  compare(recorded: RecordedRequest, actual: GenerateOptions, request = recorded.request): Divergence | undefined {
    const at = (path: string, expected: unknown, got: unknown): Divergence => ({ request, path, expected: json(expected), actual: json(got) })
    const header = recorded.header
    if (header === undefined) return at('header', null, { provider: actual.provider, model: actual.model })
    const config = header.config as unknown as Record<string, unknown>
    const fresh = actual as unknown as Record<string, unknown>
    for (const key of this.#configKeys(config)) {
      const d = firstDifference(config[key], fresh[key], key)
      if (d !== undefined) return at(d.path, d.expected, d.actual)
    }
    if ((header.system ?? '') !== (actual.system ?? '')) return at('system', header.system, actual.system)
    const tools = this.#compareTools(header.tools ?? [], actual.tools ?? [])
    if (tools !== undefined) return at(tools.path, tools.expected, tools.actual)
    const history = this.#compareHistory(recorded.history.messages, recorded.history.length, actual.messages)
    if (history !== undefined) return at(history.path, history.expected, history.actual)
    return undefined
  }

  // The call-config fields to compare: every field the recorded config has, and every field a config can have.
  #configKeys(config: Record<string, unknown>): readonly string[] {
    if (this.#keysOf?.config === config) return this.#keysOf.keys
    const keys = [...CONFIG_KEYS]
    for (const key in config) if (!keys.includes(key)) keys.push(key)
    this.#keysOf = { config, keys }
    return keys
  }

  #compareTools(expected: readonly { name: string }[], actual: readonly { name: string }[]): Difference | undefined {
    // Proven equal before: the same recorded list and the same schema objects (the loop may rebuild the list).
    const last = this.#lastTools
    if (last?.expected === expected && last.actual.length === actual.length && actual.every((t, i) => t === last.actual[i])) return undefined
    // Tools are known by name: a tool added, removed or moved is a difference of the list itself.
    const names = (list: readonly { name: string }[]): string[] => list.map((t) => t.name)
    if (JSON.stringify(names(expected)) !== JSON.stringify(names(actual))) return { path: 'tools', expected: names(expected), actual: names(actual) }
    for (let i = 0; i < expected.length; i++) {
      const d = firstDifference(expected[i], actual[i], `tools[${i}]`)
      if (d !== undefined) return d
    }
    this.#lastTools = { expected, actual }
    return undefined
  }

  #compareHistory(expected: readonly Message[], length: number, actual: readonly Message[]): Difference | undefined {
    // Entries proven equal in the previous request: the same two objects at the same position. One pointer
    // comparison each, then a deep walk of the rest. The proven fresh messages are kept in a plain array of our
    // own: a request's history is frozen, and V8 reads a frozen array several times slower than a plain one.
    const lastExpected = this.#lastExpected
    const provenActual = this.#provenActual
    const proven = Math.min(provenActual.length, length, actual.length)
    // A fresh history the session handed out in the same fold generation as the last proven one extends it
    // (history/lineage): its proven prefix holds the same objects, so not even the pointers need comparing.
    const lineage = historyLineage(actual)
    let start = 0
    if (expected === lastExpected && lineage !== undefined && lineage === this.#lastLineage) start = proven
    else if (expected === lastExpected) while (start < proven && actual[start] === provenActual[start]) start++
    else while (start < proven && actual[start] === provenActual[start] && expected[start] === lastExpected[start]) start++
    const n = Math.max(length, actual.length)
    for (let i = start; i < n; i++) {
      const e = i < length ? expected[i] : undefined
      const a = actual[i]
      if (e === undefined || a === undefined) return { path: `messages[${i}]`, expected: e, actual: a }
      const d = firstDifference(e, a, `messages[${i}]`, true)
      if (d !== undefined) return d
    }
    this.#lastExpected = expected
    this.#lastLineage = lineage
    provenActual.length = start
    for (let i = start; i < n; i++) provenActual.push(actual[i] as Message)
    return undefined
  }
}

interface Difference {
  readonly path: string
  readonly expected: unknown
  readonly actual: unknown
}

/**
 * The first place two JSON-like values differ, depth first, object keys in the recorded value's order.
 * `undefined` and an absent key are the same thing (JSON has no undefined). With `skipId`, the top-level `id`
 * is ignored: a fresh loop mints its own message ids.
 */
export function firstDifference(expected: unknown, actual: unknown, path: string, skipId = false): Difference | undefined {
  const trail: (string | number)[] = []
  if (!differs(expected, actual, trail, skipId)) return undefined
  // The trail was collected on the way out: innermost first. Walk it back in to the differing values.
  let e = expected
  let a = actual
  let at = path
  for (let i = trail.length - 1; i >= 0; i--) {
    const step = trail[i] as string | number
    e = (e as Record<string | number, unknown> | undefined)?.[step]
    a = (a as Record<string | number, unknown> | undefined)?.[step]
    at = typeof step === 'number' ? `${at}[${step}]` : at === '' ? step : `${at}.${step}`
  }
  return { path: at, expected: e, actual: a }
}

// Whether the values differ; on a difference, `trail` holds the keys down to it (innermost first). No path
// strings and no key arrays are built while the values agree: a cassette walks every new message of every request.
function differs(e: unknown, a: unknown, trail: (string | number)[], skipId: boolean): boolean {
  if (e === a) return false
  if (typeof e !== 'object' || typeof a !== 'object' || e === null || a === null) return !Object.is(e, a)
  const eArray = Array.isArray(e)
  if (eArray !== Array.isArray(a)) return true
  if (eArray) {
    const x = e as unknown[]
    const y = a as unknown[]
    if (x.length !== y.length) return true
    for (let i = 0; i < x.length; i++) {
      if (differs(x[i], y[i], trail, false)) return (trail.push(i), true)
    }
    return false
  }
  const x = e as Record<string, unknown>
  const y = a as Record<string, unknown>
  for (const key in x) {
    if (skipId && key === 'id') continue
    if (differs(x[key], y[key], trail, false)) return (trail.push(key), true)
  }
  for (const key in y) {
    if ((skipId && key === 'id') || key in x || y[key] === undefined) continue
    return (trail.push(key), true)
  }
  return false
}

/** A value as a divergence reports it: JSON, with absent as `null`. */
function json(value: unknown): JsonValue {
  if (value === undefined) return null
  try {
    return JSON.parse(JSON.stringify(value)) as JsonValue
  } catch {
    return String(value)
  }
}

/** One line for a person: `request 1 diverged at system: expected "…", got "…"`. */
export function describeDivergence(d: Divergence): string {
  return `request ${d.request} diverged from the recording at ${d.path}: expected ${clip(d.expected)}, got ${clip(d.actual)}`
}

function clip(value: JsonValue): string {
  const text = JSON.stringify(value)
  return text.length > 120 ? `${text.slice(0, 119)}…` : text
}
