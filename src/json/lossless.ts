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

/** State of one snapshot pass (module-level functions, no per-call closures: this runs for every event). */
interface Pass {
  readonly ancestors: object[]
  readonly freeze: boolean
  issue: JsonIssue | undefined
}

/**
 * Validates and deep-copies `value` in one pass, reading every property exactly once (so a getter cannot
 * answer differently to the check and to the copy). Accepts `null`, booleans, strings, finite numbers other
 * than `-0`, dense plain arrays and plain (or null-prototype) objects with enumerable string keys. Rejects
 * cycles, sparse arrays, `undefined`, functions, symbols, BigInt, NaN/±Infinity, `-0` and class instances
 * (Date, Map, Set, …). Key order is kept; `__proto__` is copied as an ordinary key.
 */
export function checkJsonSnapshot(value: unknown): JsonSnapshotResult {
  return runPass(value, false)
}

/**
 * Returns `s`, flattened in place when V8 holds it as a rope: a string built by `+=` (a streamed text block, a
 * tool's output) is a tree of one 32-byte node per piece, which the log would keep for as long as the session
 * lives. Reading a character makes V8 flatten it once (same value: nothing observable changes). Ropes are at
 * least 13 characters long, so shorter strings are left alone.
 */
function flat(s: string): string {
  if (s.length >= 13) s.charCodeAt(0)
  return s
}

function runPass(value: unknown, freeze: boolean): JsonSnapshotResult {
  const pass: Pass = { ancestors: [], freeze, issue: undefined }
  const result = copyValue(pass, value, '$')
  if (result === undefined) return { ok: false, issue: pass.issue ?? { path: '$', reason: 'not JSON' } }
  return { ok: true, value: result }
}

function fail(pass: Pass, path: string, reason: string): undefined {
  pass.issue ??= { path, reason }
  return undefined
}

function copyValue(pass: Pass, v: unknown, path: string): JsonValue | undefined {
  switch (typeof v) {
    case 'string':
      return flat(v)
    case 'boolean':
      return v
    case 'number':
      if (!Number.isFinite(v)) return fail(pass, path, `non-finite number ${String(v)}`)
      if (v === 0 && 1 / v < 0) return fail(pass, path, '-0 does not survive JSON')
      return v
    case 'object':
      break
    default:
      return fail(pass, path, `${typeof v} is not JSON`)
  }
  if (v === null) return null
  // A deep-frozen plain value cannot change any more: adopt it as is (adapters freeze the chunks they
  // stream, so the log shares them instead of copying every chunk). Anything unusual takes the copy path.
  if (pass.freeze && Object.isFrozen(v) && isFrozenJson(v, 0)) return v as JsonValue
  const ancestors = pass.ancestors
  if (ancestors.includes(v)) return fail(pass, path, 'cycle')
  if (ancestors.length >= MAX_DEPTH) return fail(pass, path, `nested deeper than ${MAX_DEPTH}`)
  ancestors.push(v)
  const out = Array.isArray(v) ? copyArray(pass, v, path) : copyObject(pass, v, path)
  ancestors.pop()
  if (out !== undefined && pass.freeze) Object.freeze(out)
  return out
}

function copyArray(pass: Pass, arr: unknown[], path: string): JsonValue[] | undefined {
  if (Object.getPrototypeOf(arr) !== Array.prototype) return fail(pass, path, 'array subclass')
  const n = arr.length
  const out: JsonValue[] = new Array<JsonValue>(n)
  for (let i = 0; i < n; i++) {
    if (!(i in arr)) return fail(pass, `${path}[${i}]`, 'hole in sparse array')
    const item = copyValue(pass, arr[i], '')
    if (item === undefined) return rewritePath(pass, `${path}[${i}]`)
    out[i] = item
  }
  // Extra own keys (a named property on an array) would be lost by JSON: refuse them.
  if (Object.keys(arr).length !== n) return fail(pass, path, 'array with extra keys')
  return out
}

function copyObject(pass: Pass, obj: object, path: string): JsonObject | undefined {
  const proto: unknown = Object.getPrototypeOf(obj)
  if (proto !== Object.prototype && proto !== null) return fail(pass, path, 'class instance (not a plain object)')
  const keys = Reflect.ownKeys(obj)
  const out: JsonObject = {}
  const source = obj as Record<string, unknown>
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string | symbol
    if (typeof key === 'symbol') return fail(pass, path, 'symbol key')
    if (!Object.prototype.propertyIsEnumerable.call(obj, key)) return fail(pass, `${path}.${key}`, 'non-enumerable property')
    const item = copyValue(pass, source[key], '')
    if (item === undefined) return rewritePath(pass, `${path}.${key}`)
    // Plain assignment would set the prototype for `__proto__`: that key must stay an ordinary own key.
    if (key === '__proto__') Object.defineProperty(out, key, { value: item, enumerable: true, writable: true, configurable: true })
    else out[key] = item
  }
  return out
}

/**
 * True when `v` is deep-frozen lossless JSON (checked without copying; getters are not looked for). Depth-limited, so a frozen cycle
 * answers false and is then rejected by the copy path with a proper reason.
 */
function isFrozenJson(v: unknown, depth: number): boolean {
  switch (typeof v) {
    case 'string':
      flat(v)
      return true
    case 'boolean':
      return true
    case 'number':
      return Number.isFinite(v) && !(v === 0 && 1 / v < 0)
    case 'object':
      break
    default:
      return false
  }
  if (v === null) return true
  if (depth > 64 || !Object.isFrozen(v)) return false
  if (Array.isArray(v)) {
    if (Object.getPrototypeOf(v) !== Array.prototype) return false
    for (let i = 0; i < v.length; i++) if (!(i in v) || !isFrozenJson(v[i], depth + 1)) return false
    return true
  }
  const proto: unknown = Object.getPrototypeOf(v)
  if (proto !== Object.prototype && proto !== null) return false
  const source = v as Record<string, unknown>
  // Enumerable own string keys are what JSON keeps; non-enumerable or symbol keys of a frozen object are
  // not looked for (this path is per chunk), they would simply not reach the stored log.
  // for…in over a frozen object uses V8's enum cache: no key array is allocated (this runs per chunk).
  for (const key in source) {
    if (!Object.hasOwn(source, key) || key === '__proto__' || !isFrozenJson(source[key], depth + 1)) return false
  }
  return true
}

/**
 * True when `value` is a deep-frozen lossless JSON object or array: what the session log adopts without a copy
 * (checked without allocating).
 */
export function isDeepFrozenJson(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.isFrozen(value) && isFrozenJson(value, 0)
}

/** Paths are built only on failure: the innermost failure recorded a relative path, prefix it on the way out. */
function rewritePath(pass: Pass, prefix: string): undefined {
  const issue = pass.issue
  if (issue !== undefined) pass.issue = { path: prefix + issue.path, reason: issue.reason }
  return undefined
}

/**
 * Like {@link checkJsonSnapshot}, but the copy comes back deep-frozen (one pass instead of copy + freeze):
 * what the session log uses for every event.
 */
export function snapshotJsonFrozen(value: unknown, what: string | (() => string) = 'value'): JsonValue {
  // What the loop appends is mostly built deep-frozen already: adopt it without allocating a pass.
  if (typeof value === 'string' || isDeepFrozenJson(value)) return value as JsonValue
  const result = runPass(value, true)
  if (!result.ok) {
    // `what` may be a function so hot callers build no message string unless something is wrong.
    const name = typeof what === 'function' ? what() : what
    throw new HarnessError(`${name} is not lossless JSON at ${result.issue.path}: ${result.issue.reason}`, 'INVALID_JSON')
  }
  return result.value
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

/**
 * True when `value`'s enumerable string keys are exactly `keys`, in that order. Walked with for…in (V8's enum
 * cache: no key array per call, which matters per chunk); hidden keys (non-enumerable, symbols) are not looked for.
 * @internal
 */
export function hasExactKeys(value: object, keys: readonly string[]): boolean {
  let n = 0
  for (const key in value) {
    if (key !== keys[n]) return false
    n++
  }
  return n === keys.length
}
