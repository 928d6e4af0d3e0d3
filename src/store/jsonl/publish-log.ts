// How a new session log appears in the folder: whole or not at all. The bytes go to a private temp file that
// is fsynced, then hard-linked to the log's name (link fails if the name exists, so two creators cannot both
// win and a crash never leaves a half-written log under the real name), then the folder is fsynced so the new
// name survives a crash too. Used by create and by fork's prefix copy.
import { randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import { link, open, unlink, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'

/**
 * Publishes `parts` (in order) as the new log `path` of session `id` in `dir`, durably.
 * @throws HarnessError `SESSION_EXISTS` when a log of that name exists already
 */
export async function publishNewLog(dir: string, id: string, path: string, parts: readonly Uint8Array[]): Promise<void> {
  const temporary = join(dir, `.${id}.${randomUUID()}.tmp`)
  const handle = await open(temporary, 'wx', 0o600)
  try {
    let size = 0
    for (const part of parts) {
      await writeAll(handle, part, size)
      size += part.length
    }
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await link(temporary, path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw sessionExists(id, path)
    throw error
  } finally {
    await unlink(temporary)
  }
  await syncDir(dir)
}

/** The error of a log name already taken. */
export function sessionExists(id: string, path: string): HarnessError {
  return new HarnessError(`session '${id}' already exists (${path})`, 'SESSION_EXISTS')
}

/** Writes all of `bytes` at `position` (a write may be short). */
export async function writeAll(file: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let done = 0; done < bytes.length; ) {
    const { bytesWritten } = await file.write(bytes, done, bytes.length - done, position + done)
    done += bytesWritten
  }
}

/** Fsyncs a folder, so the names created in it are durable. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY)
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
