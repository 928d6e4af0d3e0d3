// The gram filter of a JSONL session's content index: a Bloom filter of every 1-, 2- and 3-character gram of the
// session's searchable text (case-folded), so a search skips, without reading its text, every session that
// cannot contain the needle. Never a false "no"; a "maybe" is checked against the text itself.

/** Bits of one filter (16 KiB): about 1 % false "maybe" per gram at 40,000 distinct grams, far less below. */
export const GRAM_BITS = 1 << 17
const MASK = GRAM_BITS - 1
/** Bit positions set per gram. */
const PROBES = 3

/**
 * Case-folds text the way the filter keys it: lower case, with upper-then-lower for non-ASCII text so that
 * characters one case-insensitive match treats alike (final and medial sigma, long s and s) key alike.
 */
export function foldForGrams(text: string): string {
  const lower = text.toLowerCase()
  // eslint-disable-next-line no-control-regex
  return /^[\u0000-\u007f]*$/.test(lower) ? lower : lower.toUpperCase().toLowerCase()
}

// Two independent 32-bit hashes of the gram text[i..i+n) (FNV-1a and a multiplicative mix), for double hashing.
function probe(bits: Uint8Array, text: string, i: number, n: number, set: boolean): boolean {
  let h1 = 0x811c9dc5
  let h2 = 0x9e3779b9
  for (let j = i; j < i + n; j++) {
    const c = text.charCodeAt(j)
    h1 = Math.imul(h1 ^ c, 0x01000193)
    h2 = Math.imul(h2 ^ c, 0x85ebca6b) ^ (h2 >>> 13)
  }
  h2 |= 1
  let all = true
  for (let k = 0; k < PROBES; k++) {
    const bit = (h1 + Math.imul(k, h2)) & MASK
    const byte = bit >>> 3
    const mask = 1 << (bit & 7)
    const value = bits[byte] as number
    if (set) {
      if ((value & mask) === 0) {
        bits[byte] = value | mask
        all = false
      }
    } else if ((value & mask) === 0) return false
  }
  return set ? !all : true
}

/**
 * Adds every gram of `text` to `bits`.
 * @returns whether any bit changed
 */
export function addGrams(bits: Uint8Array, text: string): boolean {
  const folded = foldForGrams(text)
  let changed = false
  for (let i = 0; i < folded.length; i++) {
    for (let n = 1; n <= 3 && i + n <= folded.length; n++) if (probe(bits, folded, i, n, true)) changed = true
  }
  return changed
}

/** The grams a needle's text must have (its trigrams; the needle itself when it is shorter). */
export function needleGrams(needle: string): readonly [string, number][] {
  const folded = foldForGrams(needle)
  if (folded.length <= 3) return [[folded, 0]]
  const out: [string, number][] = []
  for (let i = 0; i + 3 <= folded.length; i++) out.push([folded, i])
  return out
}

/** Whether `bits` may hold every gram of a needle (false: its text certainly does not contain it). */
export function mayContain(bits: Uint8Array, grams: readonly [string, number][]): boolean {
  for (const [text, i] of grams) if (!probe(bits, text, i, Math.min(3, text.length - i), false)) return false
  return true
}
