import { hasExactKeys, isDeepFrozenJson, snapshotJsonFrozen, type JsonValue } from '../json/lossless.js'
import type { StreamChunk } from './types.js'

/**
 * Deep-freezes a freshly built chunk and returns it. Adapters freeze what they stream so the session log can
 * adopt each chunk as is instead of copying it (a chunk is the bulk of every log).
 */
export function freezeChunk<T extends StreamChunk>(chunk: T): T {
  freezeTree(chunk)
  return chunk
}

function freezeTree(value: object): void {
  if (Object.isFrozen(value)) return
  Object.freeze(value)
  for (const child of Object.values(value)) if (typeof child === 'object' && child !== null) freezeTree(child as object)
}

/**
 * A deep-frozen chunk equal to `chunk`: the chunk itself when it is deep-frozen lossless JSON already, a copy
 * otherwise, or `undefined` when it is not lossless JSON (the caller then takes the path that reports why).
 * The copy walks plain objects with for…in (V8's enum cache: no key array per object, several times faster than
 * the general snapshot's own-key walk, and chunks are most of what the loop logs). Hidden keys (non-enumerable,
 * symbols) are not looked for: the copy holds the enumerable keys only, which is what JSON makes of the chunk
 * either way. Arrays, unusual keys and deep trees go through the general snapshot.
 * @internal
 */
export function frozenChunkCopy(chunk: StreamChunk): StreamChunk | undefined {
  if (isDeepFrozenJson(chunk)) return chunk
  const fast = copyDelta(chunk) ?? copyPlain(chunk, 0)
  if (fast !== undefined) return fast as unknown as StreamChunk
  try {
    return snapshotJsonFrozen(chunk) as unknown as StreamChunk
  } catch {
    return undefined
  }
}

const TEXT_KEYS = ['type', 'index', 'text'] as const
const BLOCK_START_KEYS = ['type', 'index', 'blockType'] as const

/**
 * The common chunks (text and reasoning deltas, block starts) with exactly their usual keys, copied into one
 * object literal each (the same shape every time, no key-by-key build); anything else: undefined.
 */
function copyDelta(chunk: StreamChunk): StreamChunk | undefined {
  if (typeof chunk !== 'object' || chunk === null || Object.getPrototypeOf(chunk) !== Object.prototype) return undefined
  const type = chunk.type
  const delta = type === 'text-delta' || type === 'reasoning-delta'
  if (!(delta ? hasExactKeys(chunk, TEXT_KEYS) : type === 'block-start' && hasExactKeys(chunk, BLOCK_START_KEYS))) return undefined
  const c = chunk as unknown as Record<string, unknown>
  const index = c['index']
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || Object.is(index, -0)) return undefined
  const value = c[delta ? 'text' : 'blockType']
  if (typeof value !== 'string') return undefined
  return (delta ? Object.freeze({ type, index, text: value }) : Object.freeze({ type, index, blockType: value })) as StreamChunk
}

/** A frozen copy of plain JSON made of objects and scalars (each value read once), or undefined to take the general path. */
function copyPlain(value: unknown, depth: number): JsonValue | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      return Number.isFinite(value) && !Object.is(value, -0) ? value : undefined
    case 'object':
      break
    default:
      return undefined
  }
  if (value === null) return null
  if (depth > 8 || Array.isArray(value)) return undefined
  const proto: unknown = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return undefined
  const source = value as Record<string, unknown>
  const out: Record<string, JsonValue> = {}
  for (const key in source) {
    if (key === '__proto__' || !Object.hasOwn(source, key)) return undefined
    const item = copyPlain(source[key], depth + 1)
    if (item === undefined) return undefined
    out[key] = item
  }
  return Object.freeze(out)
}

/** @internal What {@link takeTextDelta} hands a text or reasoning delta's parts to. */
export interface TextDeltaSink {
  text(type: 'text-delta' | 'reasoning-delta', index: number, text: string): void
}

/**
 * @internal When `chunk` is a plain text or reasoning delta with exactly its usual keys (`type`, `index`, a safe
 * integer, `text`, a string), calls `sink.text` with its parts, each read once, and returns true; else false and
 * nothing is read but its keys and type. The loop's way to log the most common chunk without copying it.
 * The sink is an object with a method rather than a callback: the loop's sink is one instance per attempt of a
 * class, so the call site sees one long-lived method (V8 keeps its optimised code when the attempt's objects are
 * collected), where a fresh closure per attempt would be a call target that dies with the attempt.
 */
export function takeTextDelta(chunk: StreamChunk, sink: TextDeltaSink): boolean {
  if (typeof chunk !== 'object' || chunk === null || Object.getPrototypeOf(chunk) !== Object.prototype || !hasExactKeys(chunk, TEXT_KEYS)) return false
  const c = chunk as unknown as Record<string, unknown>
  const type = c['type']
  if (type !== 'text-delta' && type !== 'reasoning-delta') return false
  const index = c['index']
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || Object.is(index, -0)) return false
  const text = c['text']
  if (typeof text !== 'string') return false
  sink.text(type, index, text)
  return true
}
