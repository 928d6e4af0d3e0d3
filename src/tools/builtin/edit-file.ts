import { readFile, stat, writeFile } from 'node:fs/promises'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { fsError } from './fs-errors.js'
import { looksBinary } from './text-file.js'
import type { Workspace } from './workspace-path.js'

/** Files larger than this are not edited in memory (a model should not be rewriting them by string match). */
export const EDIT_MAX_BYTES = 10 * 1024 * 1024

const parameters = z.object({
  path: z.string().describe('File path relative to the workspace root'),
  oldText: z.string().min(1).describe('Exact text to replace; must occur exactly once in the file'),
  newText: z.string().describe('Replacement text'),
})

/** Arguments of `edit_file`. */
export type EditFileArgs = z.infer<typeof parameters>

/**
 * `edit_file {path, oldText, newText}`: replaces the one exact occurrence of `oldText`. Fails with
 * `EDIT_NO_MATCH` when it does not occur and `EDIT_AMBIGUOUS` (with the count and lines) when it occurs more
 * than once, so an edit never lands somewhere the model did not mean.
 */
export function editFileTool(workspace: Workspace): DefinedTool<EditFileArgs> {
  return defineTool({
    name: 'edit_file',
    description:
      'Replace an exact piece of text in a file. oldText must match the file exactly (whitespace and indentation ' +
      'included) and occur exactly once; include surrounding lines to make it unique.',
    parameters,
    concurrencySafe: false,
    async execute({ path: given, oldText, newText }): Promise<ToolOutput> {
      const target = await workspace.resolve(given)
      const name = JSON.stringify(given)
      let data: Buffer
      try {
        const info = await stat(target.real)
        if (info.isDirectory()) throw new HarnessError(`${name} is a directory`, 'IS_A_DIRECTORY')
        if (!info.isFile()) throw new HarnessError(`${name} is not a regular file`, 'NOT_A_FILE')
        if (info.size > EDIT_MAX_BYTES) throw new HarnessError(`${name} is too large to edit (${info.size} bytes)`, 'FILE_TOO_LARGE')
        data = await readFile(target.real)
      } catch (error) {
        throw fsError(error, given)
      }
      if (looksBinary(data)) throw new HarnessError(`${name} looks like a binary file; edit_file only edits text`, 'BINARY_FILE')
      const text = data.toString('utf8')
      let search = { oldText, newText }
      let at = occurrences(text, oldText)
      // Models usually write "\n"; a CRLF file would then never match, so retry in the file's own line endings.
      if (at.length === 0 && text.includes('\r\n') && /(?<!\r)\n/.test(oldText)) {
        search = { oldText: toCrlf(oldText), newText: toCrlf(newText) }
        at = occurrences(text, search.oldText)
      }
      if (at.length === 0) {
        throw new HarnessError(
          `oldText was not found in ${name}. Read the file again and copy the text exactly, including whitespace and indentation.`,
          'EDIT_NO_MATCH',
        )
      }
      if (at.length > 1) {
        const lines = at.slice(0, 10).map((index) => lineOf(text, index))
        throw new HarnessError(
          `oldText occurs ${at.length} times in ${name} (at lines ${lines.join(', ')}${at.length > 10 ? ', …' : ''}); ` +
            'add surrounding lines to oldText so it matches exactly once.',
          'EDIT_AMBIGUOUS',
        )
      }
      const index = at[0] as number
      // Slicing rather than String.replace: replace() would expand `$&`, `$1`… inside newText.
      const updated = text.slice(0, index) + search.newText + text.slice(index + search.oldText.length)
      try {
        await writeFile(target.real, updated, 'utf8')
      } catch (error) {
        throw fsError(error, given)
      }
      const line = lineOf(text, index)
      return { content: `Edited ${target.rel}: replaced 1 occurrence at line ${line}`, meta: { path: target.rel, line } }
    },
  })
}

/**
 * Start indexes of `needle` in `haystack`, overlapping ones included: "aa" in "aaa" is ambiguous, and
 * counting only non-overlapping matches would call it unique.
 */
function occurrences(haystack: string, needle: string): number[] {
  const found: number[] = []
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + 1)) found.push(i)
  return found
}

function lineOf(text: string, index: number): number {
  let line = 1
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++
  return line
}

function toCrlf(value: string): string {
  return value.replace(/\r?\n/g, '\r\n')
}
