// Where a fresh request first differs from a recorded one, as a path a person can read ('system',
// 'tools[2].parameters', 'messages[5].content[0].text'). A cassette compares every request it answers, so the
// comparison is incremental: history entries that are the same objects as in the previous, already compared
// request (the loop shares frozen messages between requests) are not walked again.
import type { JsonValue } from '../json/lossless.js'
import type { GenerateOptions, Message } from '../llm/types.js'
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

// Request fields that are not part of the call config the header logs.
const NOT_CONFIG = new Set(['messages', 'system', 'tools', 'sessionId', 'signal', 'origin'])

/**
 * Compares requests one after another with a memory of the last pair it found equal, so a long session's
 * unchanged history costs a pointer comparison per message instead of a deep walk.
 */
export class RequestComparer {
  #lastActual: readonly Message[] = []
  #lastExpected: readonly Message[] = []
  #verified = 0
  #lastTools: { expected: unknown; actual: unknown } | undefined

  /** The first difference of `actual` from `recorded`, or `undefined` when the fresh request is the recorded one. */
  compare(recorded: RecordedRequest, actual: GenerateOptions, request = recorded.request): Divergence | undefined {
    const at = (path: string, expected: unknown, got: unknown): Divergence => ({ request, path, expected: json(expected), actual: json(got) })
    const header = recorded.header
    if (header === undefined) return at('header', null, { provider: actual.provider, model: actual.model })
    const config = header.config as unknown as Record<string, unknown>
    const fresh = actual as unknown as Record<string, unknown>
    const keys = new Set(Object.keys(config))
    for (const key of Object.keys(fresh)) if (!NOT_CONFIG.has(key)) keys.add(key)
    for (const key of keys) {
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

  #compareTools(expected: readonly { name: string }[], actual: readonly { name: string }[]): Difference | undefined {
    if (this.#lastTools?.expected === expected && this.#lastTools.actual === actual) return undefined
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
    const n = Math.max(length, actual.length)
    for (let i = 0; i < n; i++) {
      const e = i < length ? expected[i] : undefined
      const a = actual[i]
      // Proven equal in an earlier request: the same two objects at the same position.
      if (i < this.#verified && e === this.#lastExpected[i] && a === this.#lastActual[i]) continue
      if (e === undefined || a === undefined) return { path: `messages[${i}]`, expected: e, actual: a }
      const d = firstDifference(e, a, `messages[${i}]`, true)
      if (d !== undefined) return d
    }
    this.#lastExpected = expected
    this.#lastActual = actual
    this.#verified = length
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
  if (expected === actual) return undefined
  if (typeof expected !== 'object' || typeof actual !== 'object' || expected === null || actual === null) {
    return Object.is(expected, actual) ? undefined : { path, expected, actual }
  }
  if (Array.isArray(expected) || Array.isArray(actual)) {
    if (!Array.isArray(expected) || !Array.isArray(actual) || expected.length !== actual.length) return { path, expected, actual }
    for (let i = 0; i < expected.length; i++) {
      const d = firstDifference(expected[i], actual[i], `${path}[${i}]`)
      if (d !== undefined) return d
    }
    return undefined
  }
  const e = expected as Record<string, unknown>
  const a = actual as Record<string, unknown>
  const keys = new Set([...Object.keys(e), ...Object.keys(a)])
  for (const key of keys) {
    if (skipId && key === 'id') continue
    const d = firstDifference(e[key], a[key], path === '' ? key : `${path}.${key}`)
    if (d !== undefined) return d
  }
  return undefined
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
