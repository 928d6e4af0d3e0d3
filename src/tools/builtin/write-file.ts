import { mkdir, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { fsError } from './fs-errors.js'
import type { Workspace } from './workspace-path.js'

const parameters = z.object({
  path: z.string().describe('File path relative to the workspace root'),
  content: z.string().describe('The complete new content of the file'),
})

/** Arguments of `write_file`. */
export type WriteFileArgs = z.infer<typeof parameters>

/**
 * `write_file {path, content}`: creates or replaces a file (UTF-8), creating missing parent directories, and
 * reports the bytes written. Not concurrency-safe: two writes to one file must not race.
 */
export function writeFileTool(workspace: Workspace): DefinedTool<WriteFileArgs> {
  return defineTool({
    name: 'write_file',
    description:
      'Create a file or replace its whole content (UTF-8). Missing parent directories are created. ' +
      'To change part of an existing file prefer edit_file.',
    parameters,
    concurrencySafe: false,
    async execute({ path: given, content }): Promise<ToolOutput> {
      const target = await workspace.resolve(given)
      if (target.real === workspace.root) throw new HarnessError('cannot write to the workspace root itself; name a file', 'IS_A_DIRECTORY')
      const existed = await stat(target.real).then(
        (info) => {
          if (info.isDirectory()) throw new HarnessError(`${JSON.stringify(given)} is a directory`, 'IS_A_DIRECTORY')
          return true
        },
        () => false,
      )
      const bytes = Buffer.byteLength(content)
      try {
        // The parent is derived from the checked real path, so directories are only ever created inside the root.
        await mkdir(path.dirname(target.real), { recursive: true })
        await writeFile(target.real, content, 'utf8')
      } catch (error) {
        throw fsError(error, given)
      }
      return {
        content: `${existed ? 'Overwrote' : 'Created'} ${target.rel} (${bytes} bytes written)`,
        meta: { path: target.rel, bytes, created: !existed },
      }
    },
  })
}
