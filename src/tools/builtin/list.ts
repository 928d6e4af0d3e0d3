import { readdir } from 'node:fs/promises'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { fsError } from './fs-errors.js'
import { descriptorPath, openBeneath } from './open-beneath.js'
import type { Workspace } from './workspace-path.js'

/** Most entries one `list` call shows. */
export const LIST_MAX_ENTRIES = 1000

const parameters = z.object({
  path: z.string().optional().describe('Directory relative to the workspace root (default: the root)'),
})

/** Arguments of `list`. */
export type ListArgs = z.infer<typeof parameters>

/**
 * `list {path?}`: one directory's entries, sorted by name, directories suffixed `/` and symlinks `@`,
 * capped at {@link LIST_MAX_ENTRIES} with a note of how many were left out.
 */
export function listTool(workspace: Workspace): DefinedTool<ListArgs> {
  return defineTool({
    name: 'list',
    description:
      'List the entries of a directory in the workspace (not recursive). Directories end with "/", symlinks with "@". ' +
      'Use glob to find files by name across directories.',
    parameters,
    concurrencySafe: true,
    // Read-only: after a crash the continuation simply reads again.
    replay: 'safe',
    async execute({ path: given = '.' }): Promise<ToolOutput> {
      const opened = await openBeneath(workspace, given, 'read')
      const name = JSON.stringify(given)
      const rel = opened.rel
      let entries
      try {
        if (!(await opened.handle.stat()).isDirectory()) throw new HarnessError(`${name} is not a directory; use read_file for files`, 'NOT_A_DIRECTORY')
        // Listed through the checked descriptor, so a link swapped in after the check is never listed.
        entries = await readdir(descriptorPath(opened), { withFileTypes: true })
      } catch (error) {
        throw fsError(error, given)
      } finally {
        await opened.handle.close()
      }
      // Symlinks are shown as links, not followed: following one is how a listing would peek outside the root.
      const names = entries
        .map((entry) => entry.name + (entry.isSymbolicLink() ? '@' : entry.isDirectory() ? '/' : ''))
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      if (names.length === 0) return { content: `(${rel} is empty)`, meta: { path: rel, entries: 0 } }
      const shown = names.slice(0, LIST_MAX_ENTRIES)
      const note = names.length > shown.length ? `\n\n[${names.length - shown.length} more entries not shown; ${names.length} in total]` : ''
      return { content: shown.join('\n') + note, meta: { path: rel, entries: names.length } }
    },
  })
}
