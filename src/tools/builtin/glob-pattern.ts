import { HarnessError } from '../../errors/harness-error.js'

// Brace sets multiply; a pattern like {a,b}{c,d}… could otherwise expand into millions of alternatives.
const MAX_BRACE_EXPANSIONS = 256

/**
 * Compiles a glob to an anchored RegExp over `/`-separated relative paths. Our own small matcher rather than a
 * dependency (Node 20 has no `fs.glob`/`path.matchesGlob` without a flag):
 * - `*` any run of characters except `/`; `?` one character except `/`;
 * - `**` as a whole segment: any number of directories (`**\/x` also matches a top-level `x`);
 * - `[abc]`, `[a-z]`, `[!abc]` character classes; `{a,b}` alternatives (nesting allowed);
 * - `\x` a literal `x`. Leading dots are not special: `*` matches `.env`.
 * @throws HarnessError `INVALID_PATTERN` for a pattern that cannot be compiled
 */
export function globToRegExp(glob: string): RegExp {
  const alternatives = expandBraces(glob)
  const source = alternatives.map(translate).join('|')
  try {
    return new RegExp(`^(?:${source})$`, 'u')
  } catch (error) {
    throw new HarnessError(`invalid glob ${JSON.stringify(glob)}: ${(error as Error).message}`, 'INVALID_PATTERN', { cause: error })
  }
}

/** The leading segments of a glob that contain no wildcard (where a walk for it can start), `''` when none. */
export function staticPrefix(glob: string): string {
  const segments = glob.split('/')
  const fixed: string[] = []
  // The last segment names the files themselves, so it is never part of the directory to start from.
  for (const segment of segments.slice(0, -1)) {
    if (/[*?[\]{}\\]/.test(segment)) break
    fixed.push(segment)
  }
  return fixed.join('/')
}

function translate(glob: string): string {
  let out = ''
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i] as string
    const atSegmentStart = i === 0 || glob[i - 1] === '/'
    if (char === '*' && glob[i + 1] === '*' && atSegmentStart && (i + 2 === glob.length || glob[i + 2] === '/')) {
      if (i + 2 === glob.length) {
        out += '.*'
        i += 1
      } else {
        out += '(?:.*/)?'
        i += 2
      }
    } else if (char === '*') {
      while (glob[i + 1] === '*') i++
      out += '[^/]*'
    } else if (char === '?') {
      out += '[^/]'
    } else if (char === '\\' && i + 1 < glob.length) {
      out += escapeRegExp(glob[++i] as string)
    } else if (char === '[') {
      const end = glob.indexOf(']', i + 2)
      if (end === -1) {
        out += '\\['
      } else {
        let body = glob.slice(i + 1, end)
        const negated = body.startsWith('!') || body.startsWith('^')
        if (negated) body = body.slice(1)
        // Inside a class only `\`, `]` and `^` mean something to RegExp; `-` keeps its range meaning.
        body = body.replace(/[\\\]^]/g, '\\$&')
        out += negated ? `[^/${body}]` : `[${body}]`
        i = end
      }
    } else {
      out += escapeRegExp(char)
    }
  }
  return out
}

/** Expands the first `{…,…}` set (recursively) into separate globs. */
function expandBraces(glob: string): string[] {
  const results: string[] = []
  const pending = [glob]
  while (pending.length > 0) {
    const current = pending.pop() as string
    const set = findBraceSet(current)
    if (set === undefined) {
      results.push(current)
      continue
    }
    const head = current.slice(0, set.start)
    const tail = current.slice(set.end + 1)
    for (const option of set.options) pending.push(head + option + tail)
    if (pending.length + results.length > MAX_BRACE_EXPANSIONS) {
      throw new HarnessError(`glob ${JSON.stringify(glob)} expands to more than ${MAX_BRACE_EXPANSIONS} alternatives`, 'INVALID_PATTERN')
    }
  }
  return results.reverse()
}

function findBraceSet(glob: string): { start: number; end: number; options: string[] } | undefined {
  for (let start = 0; start < glob.length; start++) {
    if (glob[start] === '\\') {
      start++
      continue
    }
    if (glob[start] !== '{') continue
    let depth = 0
    const cuts: number[] = []
    for (let i = start; i < glob.length; i++) {
      const char = glob[i]
      if (char === '\\') i++
      else if (char === '{') depth++
      else if (char === ',' && depth === 1) cuts.push(i)
      else if (char === '}' && --depth === 0) {
        // `{x}` with no comma is literal text, as in the shell.
        if (cuts.length === 0) break
        const bounds = [start, ...cuts, i]
        const options = bounds.slice(0, -1).map((from, k) => glob.slice(from + 1, bounds[k + 1]))
        return { start, end: i, options }
      }
    }
  }
  return undefined
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
}
