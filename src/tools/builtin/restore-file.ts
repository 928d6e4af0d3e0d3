// The workspace side of a rewind: reading a path's current bytes and putting checkpointed bytes back, with
// the same confinement as the file tools (every path opened beneath the root, never through a link out).
import { unlink } from 'node:fs/promises'
import path from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'
import { sha256 } from '../checkpoint.js'
import { fsError } from './fs-errors.js'
import { ensureParents, openBeneath } from './open-beneath.js'
import type { Workspace } from './workspace-path.js'
import { writeThrough } from './write-file.js'

/** What a path holds now: the hash of its bytes, `null` for no file, `'other'` for a folder, device or the like. */
export type CurrentContent = string | null | 'other'

/** The current content of `rel` (see {@link CurrentContent}). */
export async function currentContent(workspace: Workspace, rel: string): Promise<CurrentContent> {
  let opened
  try {
    opened = await openBeneath(workspace, rel, 'read')
  } catch (error) {
    if (error instanceof HarnessError && (error.code === 'FILE_NOT_FOUND' || error.code === 'NOT_A_DIRECTORY')) return null
    throw error
  }
  try {
    if (!(await opened.handle.stat()).isFile()) return 'other'
    return sha256(await opened.handle.readFile())
  } finally {
    await opened.handle.close()
  }
}

/** Writes `bytes` to `rel` (creating it and its folders), or removes the file when `bytes` is null. */
export async function restoreFile(workspace: Workspace, rel: string, bytes: Buffer | null): Promise<void> {
  if (bytes === null) {
    const folder = path.posix.dirname(rel)
    const opened = await openBeneath(workspace, folder, 'directory')
    try {
      await unlink(`/proc/self/fd/${opened.handle.fd}/${path.posix.basename(rel)}`)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw fsError(error, rel)
    } finally {
      await opened.handle.close()
    }
    return
  }
  await ensureParents(workspace, rel)
  const { handle } = await openBeneath(workspace, rel, 'write')
  try {
    if (!(await handle.stat()).isFile()) throw new HarnessError(`${JSON.stringify(rel)} is not a regular file`, 'NOT_A_FILE')
    await writeThrough(handle, bytes)
    await handle.sync()
  } catch (error) {
    throw fsError(error, rel)
  } finally {
    await handle.close()
  }
}
