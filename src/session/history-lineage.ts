// Which frozen history arrays extend one another. A session folds its history by appending within a surface
// generation, so every frozen view it hands out in one generation is a prefix of every later, longer one. A
// consumer that compares request after request (a cassette, views/request-divergence.ts) can then skip the
// prefix it proved equal last time instead of walking it again: O(new messages) per request, not O(history).
// The mark lives in a WeakMap, not on the array: a named property takes an array off V8's fast paths.
import type { Message } from '../llm/types.js'

const lineageOf = new WeakMap<readonly Message[], object>()

/**
 * Marks `view` as a member of `lineage`: the caller promises that any two views of one lineage agree (the same
 * message objects) on the length of the shorter.
 */
export function markHistoryLineage(view: readonly Message[], lineage: object): void {
  lineageOf.set(view, lineage)
}

/**
 * The lineage `view` belongs to, or `undefined` for an array a session did not hand out (one a plugin built, a
 * copy): such an array proves nothing about any other and must be compared in full.
 */
export function historyLineage(view: readonly Message[]): object | undefined {
  return lineageOf.get(view)
}
