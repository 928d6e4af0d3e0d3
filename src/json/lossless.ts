import { HarnessError } from '../errors/harness-error.js'

/** A value that survives `JSON.stringify` → `JSON.parse` unchanged (lossless JSON). */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue }

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue }

/** Why a value is not lossless JSON, and where (`$.a[2].b`). */
export interface JsonIssue {
  /** Path from the root, JSONPath-like. */
  readonly path: string
  /** What is wrong there. */
  readonly reason: string
}

/** Result of {@link checkJsonSnapshot}. */
export type JsonSnapshotResult = { ok: true; value: JsonValue } | { ok: false; issue: JsonIssue }

const MAX_DEPTH = 5_000

/**
 * Validates and deep-copies `value` in one pass, reading every property exactly once (so a getter cannot
 * answer differently to the check and to the copy). Accepts `null`, booleans, strings, finite numbers other
 * than `-0`, dense plain arrays and plain (or null-prototype) objects with enumerable string keys. Rejects
 * cycles, sparse arrays, `undefined`, functions, symbols, BigInt, NaN/±Infinity, `-0` and class instances
 * (Date, Map, Set, …). Key order is kept; `__proto__` is copied as an ordinary key.
 */
export function checkJsonSnapshot(value: unknown): JsonSnapshotResult {
  const ancestors: object[] = []
  let issue: JsonIssue | undefined
  const fail = (path: string, reason: string): undefined => {
    issue ??= { path, reason }
    return undefined
  }
  const copy = (v: unknown, path: string): JsonValue | undefined => {
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v
      case 'number':
        if (!Number.isFinite(v)) return fail(path, `non-finite number ${String(v)}`)
        if (Object.is(v, -0)) return fail(path, '-0 does not survive JSON')
        return v
      case 'object':
        break
      default:
        return fail(path, `${typeof v} is not JSON`)
    }
    if (v === null) return null
    if (ancestors.includes(v)) return fail(path, 'cycle')
    if (ancestors.length >= MAX_DEPTH) return fail(path, `nested deeper than ${MAX_DEPTH}`)
    ancestors.push(v)
    try {
      return Array.isArray(v) ? copyArray(v, path) : copyObject(v, path)
    } finally {
      ancestors.pop()
    }
  }
  const copyArray = (arr: unknown[], path: string): JsonValue[] | undefined => {
    if (Object.getPrototypeOf(arr) !== Array.prototype) return fail(path, 'array subclass')
    const keys = Reflect.ownKeys(arr)
    if (keys.length !== arr.length + 1) return fail(path, 'sparse array or array with extra keys')
    const out: JsonValue[] = new Array<JsonValue>(arr.length)
    for (let i = 0; i < arr.length; i++) {
      if (!Object.prototype.hasOwnProperty.call(arr, i)) return fail(`${path}[${i}]`, 'hole in sparse array')
      const item = copy(arr[i], `${path}[${i}]`)
      if (item === undefined) return undefined
      out[i] = item
    }
    return out
  }
  const copyObject = (obj: object, path: string): JsonObject | undefined => {
    const proto: unknown = Object.getPrototypeOf(obj)
    if (proto !== Object.prototype && proto !== null) return fail(path, 'class instance (not a plain object)')
    const out: JsonObject = {}
    for (const key of Reflect.ownKeys(obj)) {
      if (typeof key === 'symbol') return fail(path, 'symbol key')
      const desc = Object.getOwnPropertyDescriptor(obj, key)
      if (desc === undefined) continue
      if (!desc.enumerable) return fail(`${path}.${key}`, 'non-enumerable property')
      const raw = 'value' in desc ? desc.value : desc.get?.call(obj)
      const item = copy(raw, `${path}.${key}`)
      if (item === undefined) return undefined
      // defineProperty, not assignment: `__proto__` must stay an ordinary own key.
      Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
    }
    return out
  }
  const result = copy(value, '$')
  if (result === undefined) return { ok: false, issue: issue ?? { path: '$', reason: 'not JSON' } }
  return { ok: true, value: result }
}

/** Validates and deep-copies `value`; `undefined` when it is not lossless JSON. */
export function snapshotJsonValue(value: unknown): JsonValue | undefined {
  const result = checkJsonSnapshot(value)
  return result.ok ? result.value : undefined
}

/** True when `value` is lossless JSON (see {@link checkJsonSnapshot}). */
export function isJsonValue(value: unknown): value is JsonValue {
  return checkJsonSnapshot(value).ok
}

/**
 * Like {@link snapshotJsonValue} but throws a `HarnessError` with code `INVALID_JSON` naming the path.
 * @param what - names the value in the message ("event data", "tool arguments", …)
 */
export function snapshotJson(value: unknown, what = 'value'): JsonValue {
  const result = checkJsonSnapshot(value)
  if (!result.ok) {
    throw new HarnessError(`${what} is not lossless JSON at ${result.issue.path}: ${result.issue.reason}`, 'INVALID_JSON')
  }
  return result.value
}

/**
 * Freezes `value` and everything reachable from it, skipping `AbortSignal`s (a frozen signal cannot abort).
 * Iterative, and safe on cycles. Returns its argument.
 */
export function deepFreeze<T>(value: T): T {
  const stack: unknown[] = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v !== 'object' || v === null || Object.isFrozen(v)) continue
    if (typeof AbortSignal !== 'undefined' && v instanceof AbortSignal) continue
    Object.freeze(v)
    for (const key of Reflect.ownKeys(v)) {
      const desc = Object.getOwnPropertyDescriptor(v, key)
      if (desc !== undefined && 'value' in desc) stack.push(desc.value)
    }
  }
  return value
}
