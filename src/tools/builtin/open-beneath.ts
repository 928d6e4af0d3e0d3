import { constants, existsSync } from 'node:fs'
import { mkdir, open, readlink, type FileHandle } from 'node:fs/promises'
import path from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'
import { fsError } from './fs-errors.js'
import type { Workspace } from './workspace-path.js'

const { O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_NOFOLLOW, O_DIRECTORY, O_NONBLOCK } = constants

/** What the opened descriptor is for. */
export type OpenIntent =
  /** An existing file or directory, read-only. */
  | 'read'
  /** An existing directory, read-only. */
  | 'directory'
  /** An existing regular file for writing, or a new one created exclusively (see {@link ensureParents}). */
  | 'write'
  /** An existing file for reading and writing (never created). */
  | 'update'

/** A descriptor opened beneath the workspace root, and where it really is. */
export interface OpenedBeneath {
  readonly handle: FileHandle
  /** Real absolute path of the opened file, read back from the descriptor. */
  readonly real: string
  /** The same, relative to the root (`.` for the root). */
  readonly rel: string
  /** True when `write` created the file. */
  readonly created: boolean
}

// Linux gives up after 40 symlink hops (ELOOP); we follow links by hand, so we need our own bound.
const MAX_SYMLINK_HOPS = 40
// Without /proc (macOS), there is no way to name "this directory descriptor" in a path, so we fall back to
// checked real paths, which leave the check-then-use window open. Linux is what the guarantee is made for.
const HAVE_PROC_FD = existsSync('/proc/self/fd')

/**
 * Opens `given` (relative to the workspace root) without ever leaving the root, even while something swaps a
 * symlink in and out of the path. Each component is opened from the descriptor of the directory before it
 * (through `/proc/self/fd/N/name`, our `openat`) with `O_NOFOLLOW`, so a link is never followed by the kernel.
 * A link we meet is read, its target checked to lie inside the root, and the walk restarts from the root with
 * the target spliced in; links inside the workspace keep working. Files are created with `O_EXCL` and
 * directories with `mkdir` relative to a checked descriptor. Finally the descriptor's real path, read back
 * from `/proc/self/fd`, must lie inside the root (this catches a directory renamed out mid-walk).
 * Nothing is read or written before that check: callers do all I/O through the returned handle.
 * @throws HarnessError `PATH_OUTSIDE_ROOT`, `INVALID_ARGS`, `SYMLINK_LOOP`, `FILE_NOT_FOUND`,
 *   `NOT_A_DIRECTORY`, `IS_A_DIRECTORY`, `PERMISSION_DENIED`
 */
export async function openBeneath(workspace: Workspace, given: string, intent: OpenIntent): Promise<OpenedBeneath> {
  const lexical = workspace.checkLexically(given)
  if (!HAVE_PROC_FD) return openByRealPath(workspace, given, intent)
  let pending = splitRel(workspace.relative(lexical))
  let hops = 0
  let dir: FileHandle | undefined = await open(workspace.root, O_RDONLY | O_DIRECTORY)
  let dirParts: string[] = []
  try {
    for (;;) {
      const name = pending[0]
      if (name === undefined) {
        // The root itself.
        if (intent === 'write' || intent === 'update') throw new HarnessError('cannot write to the workspace root itself; name a file', 'IS_A_DIRECTORY')
        const handle: FileHandle = dir
        dir = undefined // handed to the caller
        return await verified(workspace, given, handle, false)
      }
      const last = pending.length === 1
      const child = `/proc/self/fd/${dir.fd}/${name}`
      const step = await openComponent(child, last ? intent : 'parent', given)
      if (step.kind === 'link') {
        if (++hops > MAX_SYMLINK_HOPS) throw new HarnessError(`too many levels of symbolic links in ${JSON.stringify(given)}`, 'SYMLINK_LOOP')
        const target = path.resolve(workspace.root, ...dirParts, step.target)
        if (!workspace.contains(target)) throw outside(given)
        pending = [...splitRel(workspace.relative(target)), ...pending.slice(1)]
        await dir.close()
        dir = await open(workspace.root, O_RDONLY | O_DIRECTORY)
        dirParts = []
        continue
      }
      if (last) return await verified(workspace, given, step.handle, step.created)
      await dir.close()
      dir = step.handle
      dirParts.push(name)
      pending = pending.slice(1)
    }
  } finally {
    await dir?.close()
  }
}

type Step = { kind: 'opened'; handle: FileHandle; created: boolean } | { kind: 'link'; target: string }

/** Opens one component (a path through a directory descriptor) without following a link there. */
async function openComponent(child: string, intent: OpenIntent | 'parent', given: string): Promise<Step> {
  const flags =
    intent === 'parent' || intent === 'directory'
      ? O_RDONLY | O_DIRECTORY | O_NOFOLLOW
      : // O_NONBLOCK: opening a FIFO would otherwise wait for a peer forever; the caller refuses non-files.
        (intent === 'write' ? O_WRONLY : intent === 'update' ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK
  for (let attempt = 0; ; attempt++) {
    try {
      return { kind: 'opened', handle: await open(child, flags), created: false }
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      // O_NOFOLLOW on a link fails with ELOOP; with O_DIRECTORY some kernels say ENOTDIR instead.
      if (code === 'ELOOP' || code === 'ENOTDIR') {
        const link = await readlink(child).then(
          (target) => ({ target }),
          (failed: NodeJS.ErrnoException) => ({ failed: failed.code }),
        )
        if ('target' in link) return { kind: 'link', target: link.target }
        // The entry changed between open and readlink (a swap in progress): look again. After a few tries an
        // EINVAL (not a link) means a real ENOTDIR: a file where a directory was expected.
        if ((link.failed === 'ENOENT' || link.failed === 'EINVAL') && attempt < 8) continue
      }
      if (code !== 'ENOENT' || attempt > 8) throw fsError(error, given)
    }
    // Missing. Only a write creates, and only ever through the checked parent descriptor.
    if (intent === 'parent') {
      throw new HarnessError(`no such directory on the way to ${JSON.stringify(given)}`, 'FILE_NOT_FOUND')
    }
    if (intent !== 'write') throw fsError(Object.assign(new Error('missing'), { code: 'ENOENT' }), given)
    try {
      return { kind: 'opened', handle: await open(child, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666), created: true }
    } catch (error) {
      // EEXIST: something appeared meanwhile (perhaps a link); go round and look at it again.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw fsError(error, given)
    }
  }
}

/** Reads the descriptor's real path back from /proc and refuses it unless it lies inside the root. */
async function verified(workspace: Workspace, given: string, handle: FileHandle, created: boolean): Promise<OpenedBeneath> {
  let real: string
  try {
    real = HAVE_PROC_FD ? await readlink(`/proc/self/fd/${handle.fd}`) : ''
  } catch (error) {
    await handle.close()
    throw fsError(error, given)
  }
  if (!workspace.contains(real)) {
    await handle.close()
    throw outside(given)
  }
  return { handle, real, rel: workspace.relative(real), created }
}

/**
 * A path that names exactly the opened file (its `/proc/self/fd` link), for calls that take a path, such as
 * `readdir`; where there is no /proc, its checked real path.
 */
export function descriptorPath(opened: OpenedBeneath): string {
  return HAVE_PROC_FD ? `/proc/self/fd/${opened.handle.fd}` : opened.real
}

/** Creates the missing parent directories of a write, each relative to a checked descriptor. */
export async function ensureParents(workspace: Workspace, given: string): Promise<void> {
  const parent = path.posix.dirname(workspace.relative(workspace.checkLexically(given)))
  if (parent === '.') return
  let made = '.'
  for (const part of parent.split('/')) {
    const opened = await openBeneath(workspace, made, 'directory')
    try {
      await mkdir(HAVE_PROC_FD ? `/proc/self/fd/${opened.handle.fd}/${part}` : path.join(opened.real, part))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw fsError(error, given)
    } finally {
      await opened.handle.close()
    }
    made = made === '.' ? part : `${made}/${part}`
  }
}

/** The fallback without /proc: checked real path, then open without following a final link. */
async function openByRealPath(workspace: Workspace, given: string, intent: OpenIntent): Promise<OpenedBeneath> {
  const target = await workspace.resolve(given)
  if ((intent === 'write' || intent === 'update') && target.real === workspace.root) throw new HarnessError('cannot write to the workspace root itself; name a file', 'IS_A_DIRECTORY')
  try {
    if (intent === 'write') {
      try {
        return { handle: await open(target.real, O_WRONLY | O_NOFOLLOW | O_NONBLOCK), real: target.real, rel: target.rel, created: false }
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
        return { handle: await open(target.real, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o666), real: target.real, rel: target.rel, created: true }
      }
    }
    const flags = intent === 'directory' ? O_RDONLY | O_DIRECTORY : (intent === 'update' ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_NONBLOCK
    return { handle: await open(target.real, flags), real: target.real, rel: target.rel, created: false }
  } catch (error) {
    throw fsError(error, given)
  }
}

function splitRel(rel: string): string[] {
  return rel === '.' ? [] : rel.split('/')
}

function outside(given: string): HarnessError {
  return new HarnessError(
    `path ${JSON.stringify(given)} is outside the workspace root: it leads outside the workspace root through a symlink`,
    'PATH_OUTSIDE_ROOT',
  )
}
