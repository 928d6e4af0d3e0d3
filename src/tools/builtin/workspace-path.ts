import { lstat, readlink, realpath } from 'node:fs/promises'
import { realpathSync, statSync } from 'node:fs'
import path from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'
import { fsError } from './fs-errors.js'

/** A path the model named, checked to lie inside the workspace root. */
export interface WorkspacePath {
  /** The real (symlink-free) absolute path the operation must use. */
  readonly real: string
  /** The same location relative to the real root, `/`-separated (`.` for the root itself). */
  readonly rel: string
  /** The path exactly as the model wrote it, for messages. */
  readonly given: string
}

// Linux gives up after 40 symlink hops (ELOOP); we follow dangling links by hand, so we need our own bound.
const MAX_SYMLINK_HOPS = 40

/**
 * The directory the built-in file tools are confined to. Every path the model passes is relative to it;
 * absolute paths, `..` escapes and symlinks that lead outside are refused with `PATH_OUTSIDE_ROOT`.
 *
 * {@link Workspace.resolve} resolves symlinks on the deepest existing ancestor, so a new file under a symlinked
 * directory is judged by where it would really land. The file tools do their I/O through `openBeneath`, which
 * closes the window in which something else swaps a directory for a symlink between the check and the use.
 */
export class Workspace {
  /** The root, realpath'd once at construction. */
  readonly root: string

  /**
   * @param root - an existing directory
   * @throws HarnessError `INVALID_CONFIG` when `root` does not exist or is not a directory
   */
  constructor(root: string) {
    let real: string
    try {
      real = realpathSync(root)
    } catch (error) {
      throw new HarnessError(`tool root ${JSON.stringify(root)} does not exist`, 'INVALID_CONFIG', { cause: error })
    }
    if (!statSync(real).isDirectory()) throw new HarnessError(`tool root ${JSON.stringify(root)} is not a directory`, 'INVALID_CONFIG')
    this.root = real
  }

  /**
   * Resolves a model-supplied path (for reading or for creating) to a real path inside the root.
   * @throws HarnessError `PATH_OUTSIDE_ROOT` naming `given` when it is absolute, climbs out with `..`, or
   *   reaches outside through a symlink; `INVALID_ARGS` for an empty path or one with a NUL byte;
   *   `SYMLINK_LOOP` for a symlink cycle
   */
  async resolve(given: string): Promise<WorkspacePath> {
    const lexical = this.checkLexically(given)
    let real: string
    try {
      real = await realLocation(lexical, 0)
    } catch (error) {
      throw fsError(error, given)
    }
    if (!this.contains(real)) throw outside(given, 'it leads outside the workspace root through a symlink')
    return { real, rel: this.relative(real), given }
  }

  /**
   * The absolute path `given` names, checked without touching the disk (so `a/../../x` is refused even when
   * `a` does not exist).
   * @throws HarnessError `PATH_OUTSIDE_ROOT` for an absolute path or a `..` escape; `INVALID_ARGS` for an
   *   empty path or one with a NUL byte
   */
  checkLexically(given: string): string {
    if (given.includes('\0')) throw new HarnessError(`path ${JSON.stringify(given)} contains a NUL byte`, 'INVALID_ARGS')
    if (given.trim() === '') throw new HarnessError('path must not be empty (use "." for the workspace root)', 'INVALID_ARGS')
    if (path.isAbsolute(given)) throw outside(given, 'absolute paths are not allowed; give a path relative to the workspace root')
    const lexical = path.resolve(this.root, given)
    if (!this.contains(lexical)) throw outside(given, 'it climbs out of the workspace root with ".."')
    return lexical
  }

  /** `abs` relative to the root, `/`-separated, `.` for the root itself. */
  relative(abs: string): string {
    const rel = path.relative(this.root, abs)
    return rel === '' ? '.' : rel.split(path.sep).join('/')
  }

  /** Whether `abs` is the root or lies beneath it (lexically; callers pass real paths). */
  contains(abs: string): boolean {
    const rel = path.relative(this.root, abs)
    return rel === '' || (!rel.startsWith('..' + path.sep) && rel !== '..' && !path.isAbsolute(rel))
  }
}

/**
 * Where `abs` really is: `realpath` when it exists; otherwise the real location of its parent plus its name.
 * A dangling symlink is followed by hand, because writing through it would create its target.
 */
async function realLocation(abs: string, hops: number): Promise<string> {
  try {
    return await realpath(abs)
  } catch (error) {
    if (!isMissing(error)) throw error
  }
  const link = await lstat(abs).catch((error: unknown) => {
    if (isMissing(error)) return undefined
    throw error
  })
  if (link?.isSymbolicLink()) {
    if (hops >= MAX_SYMLINK_HOPS) throw new HarnessError(`too many levels of symbolic links at ${abs}`, 'SYMLINK_LOOP')
    return realLocation(path.resolve(path.dirname(abs), await readlink(abs)), hops + 1)
  }
  const parent = path.dirname(abs)
  if (parent === abs) return abs
  return path.join(await realLocation(parent, hops), path.basename(abs))
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  // ENOTDIR: a file stands where a directory was expected; the operation itself will report that.
  return code === 'ENOENT' || code === 'ENOTDIR'
}

function outside(given: string, why: string): HarnessError {
  return new HarnessError(`path ${JSON.stringify(given)} is outside the workspace root: ${why}`, 'PATH_OUTSIDE_ROOT')
}
