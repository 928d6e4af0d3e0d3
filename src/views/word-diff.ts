// A word diff of two texts in the notation people know from `git diff --word-diff`: unchanged words as they are,
// removed ones as [-…-], added ones as {+…+}. Longest common subsequence over words, bounded: two very long texts
// are shown whole (removed, then added) rather than spending quadratic time on them. The page marks the same
// diff from its parts (wordDiffParts), so the notation never has to be parsed back.

const MAX_CELLS = 4_000_000

/** One run of a word diff: words both texts have, or words only the first (`removed`) or second (`added`) has. */
export interface WordDiffPart {
  readonly op: 'same' | 'removed' | 'added'
  /** The run's words, joined by single spaces. */
  readonly text: string
}

/** `the [-cat-]{+dog+} sat` for `the cat sat` → `the dog sat`. */
export function wordDiff(a: string, b: string): string {
  return wordDiffParts(a, b)
    .map((p) => (p.op === 'removed' ? `[-${p.text}-]` : p.op === 'added' ? `{+${p.text}+}` : p.text))
    .join(' ')
}

/**
 * The word diff of `a` → `b` as runs, in order; a removed run comes before the added run that replaces it.
 * @example
 * ```ts
 * wordDiffParts('the cat sat', 'the dog sat') // [same 'the', removed 'cat', added 'dog', same 'sat']
 * ```
 */
export function wordDiffParts(a: string, b: string): WordDiffPart[] {
  const x = words(a)
  const y = words(b)
  if ((x.length + 1) * (y.length + 1) > MAX_CELLS) return [...(a !== '' ? [{ op: 'removed' as const, text: a }] : []), ...(b !== '' ? [{ op: 'added' as const, text: b }] : [])]
  // lengths[i][j]: LCS length of x[i..] and y[j..], one flat array.
  const w = y.length + 1
  const lengths = new Uint32Array((x.length + 1) * w)
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lengths[i * w + j] = x[i] === y[j] ? (lengths[(i + 1) * w + j + 1] as number) + 1 : Math.max(lengths[(i + 1) * w + j] as number, lengths[i * w + j + 1] as number)
    }
  }
  const out: WordDiffPart[] = []
  let same: string[] = []
  let removed: string[] = []
  let added: string[] = []
  const flushChanges = (): void => {
    if (removed.length > 0) out.push({ op: 'removed', text: removed.join(' ') })
    if (added.length > 0) out.push({ op: 'added', text: added.join(' ') })
    removed = []
    added = []
  }
  const flushSame = (): void => {
    if (same.length > 0) out.push({ op: 'same', text: same.join(' ') })
    same = []
  }
  let i = 0
  let j = 0
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      flushChanges()
      same.push(x[i] as string)
      i++
      j++
    } else {
      flushSame()
      if (j >= y.length || (i < x.length && (lengths[(i + 1) * w + j] as number) >= (lengths[i * w + j + 1] as number))) removed.push(x[i++] as string)
      else added.push(y[j++] as string)
    }
  }
  flushChanges()
  flushSame()
  return out
}

function words(text: string): string[] {
  return text.split(/\s+/).filter((t) => t !== '')
}
