// A word diff of two texts in the notation people know from `git diff --word-diff`: unchanged words as they are,
// removed ones as [-…-], added ones as {+…+}. Longest common subsequence over words, bounded: two very long texts
// are shown whole (removed, then added) rather than spending quadratic time on them.

const MAX_CELLS = 4_000_000

/** `the [-cat-]{+dog+} sat` for `the cat sat` → `the dog sat`. */
export function wordDiff(a: string, b: string): string {
  const x = words(a)
  const y = words(b)
  if ((x.length + 1) * (y.length + 1) > MAX_CELLS) return `${mark('-', a)}${mark('+', b)}`
  // lengths[i][j]: LCS length of x[i..] and y[j..], one flat array.
  const w = y.length + 1
  const lengths = new Uint32Array((x.length + 1) * w)
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lengths[i * w + j] = x[i] === y[j] ? (lengths[(i + 1) * w + j + 1] as number) + 1 : Math.max(lengths[(i + 1) * w + j] as number, lengths[i * w + j + 1] as number)
    }
  }
  const out: string[] = []
  let removed: string[] = []
  let added: string[] = []
  const flush = (): void => {
    if (removed.length > 0) out.push(mark('-', removed.join(' ')))
    if (added.length > 0) out.push(mark('+', added.join(' ')))
    removed = []
    added = []
  }
  let i = 0
  let j = 0
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      flush()
      out.push(x[i] as string)
      i++
      j++
    } else if (j >= y.length || (i < x.length && (lengths[(i + 1) * w + j] as number) >= (lengths[i * w + j + 1] as number))) {
      removed.push(x[i++] as string)
    } else {
      added.push(y[j++] as string)
    }
  }
  flush()
  return out.join(' ')
}

function words(text: string): string[] {
  return text.split(/\s+/).filter((t) => t !== '')
}

function mark(sign: '-' | '+', text: string): string {
  return sign === '-' ? `[-${text}-]` : `{+${text}+}`
}
