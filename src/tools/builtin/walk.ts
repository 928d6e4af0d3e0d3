import type { Dirent } from 'node:fs'
import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { throwIfAborted } from './fs-errors.js'

/** Directories grep and glob never descend into: VCS internals and installed dependencies are noise to search. */
export const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set(['.git', 'node_modules'])

/** A regular file met by {@link walkFiles}. */
export interface WalkedFile {
  /** Absolute real path. */
  readonly abs: string
  /** Path relative to the workspace root, `/`-separated. */
  readonly rel: string
}

/**
 * Yields the regular files under `dir` (a checked real path inside the workspace), depth first in name order
 * so results are deterministic. Symlinks are not followed, which keeps the walk inside the root and out of
 * cycles; unreadable directories are skipped rather than failing the whole search.
 * @param dir - absolute real directory to walk
 * @param relDir - how results name `dir` (`.` for the root), so a walk started through a symlinked directory
 *   reports paths under the name the model used
 * @param signal - checked once per directory
 * @throws HarnessError `ABORTED` when `signal` fires during the walk
 */
export async function* walkFiles(dir: string, relDir: string, signal: AbortSignal): AsyncGenerator<WalkedFile> {
  throwIfAborted(signal)
  let entries: Dirent[]
  try {
    entries = await readdir(dir, { withFileTypes: true })
  } catch {
    return
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  for (const entry of entries) {
    const abs = path.join(dir, entry.name)
    const rel = relDir === '.' ? entry.name : `${relDir}/${entry.name}`
    if (entry.isDirectory()) {
      if (!SKIPPED_DIRECTORIES.has(entry.name)) yield* walkFiles(abs, rel, signal)
    } else if (entry.isFile()) {
      yield { abs, rel }
    }
  }
}
