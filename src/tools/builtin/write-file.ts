import type { FileHandle } from 'node:fs/promises'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { CheckpointSlot } from '../checkpoint.js'
import type { ToolOutput } from '../types.js'
import { checkpointBeforeChange, openWithPreImage, readPreImage, sinkOf, type RecordChange } from './file-checkpoint.js'
import { fsError } from './fs-errors.js'
import type { ResolvedToolLimits } from './limits.js'
import { ensureParents, openBeneath } from './open-beneath.js'
import { tooLarge } from './text-file.js'
import type { Workspace } from './workspace-path.js'

const parameters = z.object({
  path: z.string().describe('File path relative to the workspace root'),
  content: z.string().describe('The complete new content of the file'),
})

/** Arguments of `write_file`. */
export type WriteFileArgs = z.infer<typeof parameters>

/**
 * `write_file {path, content}`: creates or replaces a file (UTF-8), creating missing parent directories, and
 * reports the bytes written. The file is opened beneath the root without following links (a new one with
 * `O_EXCL`) and written through that descriptor. Content over `limits.maxWriteBytes` fails `FILE_TOO_LARGE`.
 * Not concurrency-safe: two writes to one file must not race. With a `checkpoints` slot whose sink takes the
 * session, the file's previous bytes (or its absence) are stored before anything is written.
 */
export function writeFileTool(workspace: Workspace, limits: ResolvedToolLimits, checkpoints?: CheckpointSlot): DefinedTool<WriteFileArgs> {
  return defineTool({
    ...(checkpoints !== undefined ? { checkpoints } : {}),
    name: 'write_file',
    description:
      'Create a file or replace its whole content (UTF-8). Missing parent directories are created. ' +
      'To change part of an existing file prefer edit_file.',
    parameters,
    concurrencySafe: false,
    async execute({ path: given, content }, ctx): Promise<ToolOutput> {
      const data = Buffer.from(content, 'utf8')
      if (data.length > limits.maxWriteBytes) throw tooLarge(given, data.length, limits.maxWriteBytes, 'written')
      const sink = sinkOf(checkpoints, ctx)
      let recordChange: RecordChange | undefined
      // An existing file is opened once, for its pre-image and for the write.
      const pre = sink !== undefined ? await openWithPreImage(workspace, given, limits.maxFileBytes) : undefined
      if (sink !== undefined) {
        try {
          const before = pre !== undefined ? pre.before : await readPreImage(workspace, given, limits.maxFileBytes)
          recordChange = await checkpointBeforeChange(sink, ctx, 'write_file', workspace, before)
        } catch (error) {
          await pre?.opened.handle.close()
          throw error
        }
      }
      if (pre === undefined) await ensureParents(workspace, given)
      const { handle, rel, created } = pre?.opened ?? (await openBeneath(workspace, given, 'write'))
      let writing = false
      try {
        if (!(await handle.stat()).isFile()) throw new HarnessError(`${JSON.stringify(given)} is not a regular file`, 'NOT_A_FILE')
        writing = true
        await writeThrough(handle, data)
      } catch (error) {
        // A write that failed half way changed the file all the same: log what it holds now.
        if (writing && recordChange !== undefined) recordChange(rel, await readPreImage(workspace, given, Number.MAX_SAFE_INTEGER).then(asBytes, () => null))
        throw fsError(error, given)
      } finally {
        await handle.close()
      }
      recordChange?.(rel, data)
      return {
        content: `${created ? 'Created' : 'Overwrote'} ${rel} (${data.length} bytes written)`,
        meta: { path: rel, bytes: data.length, created },
      }
    },
  })
}

/** Replaces the whole content of an open, checked file. */
export async function writeThrough(handle: FileHandle, data: Buffer): Promise<void> {
  await handle.truncate(0)
  let written = 0
  while (written < data.length) {
    const { bytesWritten } = await handle.write(data, written, data.length - written, written)
    written += bytesWritten
  }
}

function asBytes(image: Buffer | null | 'untracked'): Buffer | null {
  return image === 'untracked' ? null : image
}
