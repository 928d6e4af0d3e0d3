import * as nativeFs from 'node:fs'
import { readdir } from 'node:fs/promises'
import { fdir } from 'fdir'
import { throwIfAborted } from './fs-errors.js'
import { descriptorPath, openBeneath } from './open-beneath.js'
import type { Workspace } from './workspace-path.js'

/** Directories grep and glob never descend into: VCS internals and installed dependencies are noise to search. */
export const SKIPPED_DIRECTORIES: ReadonlySet<string> = new Set(['.git', 'node_modules'])

/** What {@link walkFiles} found. */
export interface Walk {
  /** Paths relative to the workspace root, `/`-separated, sorted. */
  readonly files: string[]
  /** True when the walk stopped at its file limit, so more files may exist. */
  readonly capped: boolean
}

/**
 * The regular files under `dir` (a checked real path inside the workspace), with fdir. Symlinks are neither
 * followed nor listed, which keeps the walk inside the root and out of cycles; unreadable directories are
 * skipped; `.git` and `node_modules` below the start are not entered. fdir lists each directory through
 * `openBeneath`, so a directory swapped for a link to the outside mid-walk is skipped, never listed. Reading a
 * listed file must still go through `openBeneath`: a name is no promise about what it points to later.
 * @param dir - absolute real directory to walk, inside the workspace
 * @param relDir - how results name `dir` (`.` for the root), so a walk started through a symlinked directory
 *   reports paths under the name the model used
 * @param maxFiles - stop after this many files
 * @throws HarnessError `ABORTED` when `signal` fires during the walk
 */
export async function walkFiles(workspace: Workspace, dir: string, relDir: string, maxFiles: number, signal: AbortSignal): Promise<Walk> {
  throwIfAborted(signal)
  const found = await new fdir({ excludeSymlinks: true, suppressErrors: true, fs: confinedFs(workspace) })
    .withRelativePaths()
    .withPathSeparator('/')
    .exclude((name) => SKIPPED_DIRECTORIES.has(name))
    .withMaxFiles(maxFiles)
    .withAbortSignal(signal)
    .crawl(dir)
    .withPromise()
  throwIfAborted(signal)
  const files = relDir === '.' ? found : found.map((rel) => `${relDir}/${rel}`)
  files.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
  return { files, capped: found.length >= maxFiles }
}

/** Node's fs for fdir, except that `readdir` lists a directory through a descriptor opened beneath the root. */
function confinedFs(workspace: Workspace): typeof nativeFs {
  const list = async (abs: string): Promise<nativeFs.Dirent[]> => {
    const opened = await openBeneath(workspace, workspace.relative(abs), 'directory')
    try {
      return await readdir(descriptorPath(opened), { withFileTypes: true })
    } finally {
      await opened.handle.close()
    }
  }
  const confinedReaddir = (abs: string, _options: unknown, callback: (error: Error | null, entries: nativeFs.Dirent[]) => void): void => {
    list(abs).then(
      (entries) => callback(null, entries),
      (error: Error) => callback(error, []),
    )
  }
  return { ...nativeFs, readdir: confinedReaddir as unknown as typeof nativeFs.readdir }
}
