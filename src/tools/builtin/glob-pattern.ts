import path from 'node:path'
import picomatch from 'picomatch'
import { HarnessError } from '../../errors/harness-error.js'

/**
 * Compiles a glob into a test over `/`-separated workspace-relative paths, with picomatch (bash glob rules:
 * `*`, `?`, `**`, `[a-z]`, `[!a]`, `{a,b}`, `{1..3}`, extglobs such as `!(x)`, `\x` escapes; as in picomatch,
 * `(a|b)` groups, so a literal parenthesis needs `\(`). Dotfiles match like any other name (`*` matches
 * `.env`): the model asks for files, and hiding `.github` would surprise it.
 * @throws HarnessError `INVALID_PATTERN` for a glob picomatch cannot compile (e.g. the range `[z-a]`)
 */
export function compileGlob(glob: string): (rel: string) => boolean {
  let regex: RegExp
  try {
    // debug: picomatch otherwise turns an uncompilable glob into a regex that silently matches nothing.
    regex = picomatch.makeRe(bashClassNegation(glob), { dot: true, debug: true })
  } catch (error) {
    throw new HarnessError(`invalid glob ${JSON.stringify(glob)}: ${(error as Error).message}`, 'INVALID_PATTERN', { cause: error })
  }
  return (rel) => regex.test(rel)
}

/** The leading directories of a glob that contain no wildcard (where a walk for it can start), `''` when none. */
export function staticPrefix(glob: string): string {
  const scanned = picomatch.scan(glob)
  // Without wildcards the whole glob names one file; its directory is where to look.
  const base = scanned.isGlob ? scanned.base : path.posix.dirname(scanned.base)
  return base === '.' || /[\\*?[\]{}]/.test(base) ? '' : base
}

/**
 * `[!ab]` is bash's negated class; picomatch reads it as a class containing `!`, so it is rewritten to the
 * `[^ab]` picomatch understands (an escaped `\[` is left alone).
 */
function bashClassNegation(glob: string): string {
  return glob.replace(/(^|[^\\])\[!/g, '$1[^')
}
