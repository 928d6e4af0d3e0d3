import type { FileHandle } from 'node:fs/promises'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { CheckpointSlot } from '../checkpoint.js'
import type { ToolContext, ToolOutput } from '../types.js'
import { checkpointBeforeChange, readWhole, sinkOf } from './file-checkpoint.js'
import { fsError } from './fs-errors.js'
import type { ResolvedToolLimits } from './limits.js'
import { openBeneath } from './open-beneath.js'
import { looksBinary, tooLarge } from './text-file.js'
import { writeThrough } from './write-file.js'
import type { Workspace } from './workspace-path.js'

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
 * than once, so an edit never lands somewhere the model did not mean. With a `checkpoints` slot whose sink
 * takes the session, the file's bytes before the edit are stored before it is written.
 */
export function editFileTool(workspace: Workspace, limits: ResolvedToolLimits, checkpoints?: CheckpointSlot): DefinedTool<EditFileArgs> {
  return defineTool({
    ...(checkpoints !== undefined ? { checkpoints } : {}),
    name: 'edit_file',
    description:
      'Replace an exact piece of text in a file. oldText must match the file exactly (whitespace and indentation ' +
      'included) and occur exactly once; include surrounding lines to make it unique.',
    parameters,
    concurrencySafe: false,
    async execute(args, ctx): Promise<ToolOutput> {
      // Read and written through one descriptor opened beneath the root: no window for a link swap between them.
      const { handle, rel } = await openBeneath(workspace, args.path, 'update')
      try {
        return await applyEdit(handle, rel, args, limits, { workspace, ctx, slot: checkpoints })
      } finally {
        await handle.close()
      }
    },
  })
}

/** What an edit needs to checkpoint the file before writing it. */
interface EditCheckpoint {
  readonly workspace: Workspace
  readonly ctx: ToolContext
  readonly slot: CheckpointSlot | undefined
}

async function applyEdit(
  handle: FileHandle,
  rel: string,
  { path: given, oldText, newText }: EditFileArgs,
  limits: ResolvedToolLimits,
  checkpoint: EditCheckpoint,
): Promise<ToolOutput> {
  const name = JSON.stringify(given)
  let data: Buffer
  try {
    const info = await handle.stat()
    if (info.isDirectory()) throw new HarnessError(`${name} is a directory`, 'IS_A_DIRECTORY')
    if (!info.isFile()) throw new HarnessError(`${name} is not a regular file`, 'NOT_A_FILE')
    if (info.size > limits.maxFileBytes) throw tooLarge(given, info.size, limits.maxFileBytes, 'read')
    data = await handle.readFile()
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
  const bytes = Buffer.from(updated, 'utf8')
  if (bytes.length > limits.maxWriteBytes) throw tooLarge(given, bytes.length, limits.maxWriteBytes, 'written')
  // The bytes just read are the pre-image: stored before the write, through the descriptor that reads and writes.
  const sink = sinkOf(checkpoint.slot, checkpoint.ctx)
  const recordChange = await checkpointBeforeChange(sink, checkpoint.ctx, 'edit_file', checkpoint.workspace, data)
  try {
    await writeThrough(handle, bytes)
  } catch (error) {
    // Half written is changed all the same: log what the descriptor holds now.
    if (recordChange !== undefined) recordChange(rel, await readWhole(handle))
    throw fsError(error, given)
  }
  recordChange?.(rel, bytes)
  const line = lineOf(text, index)
  return { content: `Edited ${rel}: replaced 1 occurrence at line ${line}`, meta: { path: rel, line } }
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
