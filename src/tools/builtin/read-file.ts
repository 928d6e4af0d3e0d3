import type { FileHandle } from 'node:fs/promises'
import { createInterface } from 'node:readline'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { throwIfAborted } from './fs-errors.js'
import type { ResolvedToolLimits } from './limits.js'
import { openBeneath } from './open-beneath.js'
import { clipLine, handleLooksBinary, tooLarge } from './text-file.js'
import type { Workspace } from './workspace-path.js'

/** Lines shown when the model gives no `limit`. */
export const READ_DEFAULT_LINES = 2000
/** Most bytes of file text one call returns, whatever the `limit`. */
export const READ_MAX_BYTES = 256 * 1024
/** Longer lines are cut (and say so) so one minified line cannot use up the byte cap. */
export const READ_MAX_LINE_CHARS = 2000

const parameters = z.object({
  path: z.string().describe('File path relative to the workspace root'),
  offset: z.number().int().min(1).optional().describe('1-based line to start at (default 1)'),
  limit: z.number().int().min(1).optional().describe(`How many lines to read (default ${READ_DEFAULT_LINES})`),
})

/** Arguments of `read_file`. */
export type ReadFileArgs = z.infer<typeof parameters>

/**
 * `read_file {path, offset?, limit?}`: a text file's lines, numbered (`   12\t…`), from `offset` for `limit`
 * lines, capped at {@link READ_DEFAULT_LINES} lines / {@link READ_MAX_BYTES} with a note saying where to go on.
 * Binary files are refused with `BINARY_FILE`, files over `limits.maxFileBytes` with `FILE_TOO_LARGE`.
 */
export function readFileTool(workspace: Workspace, limits: ResolvedToolLimits): DefinedTool<ReadFileArgs> {
  return defineTool({
    name: 'read_file',
    description:
      `Read a text file in the workspace. Output lines are prefixed with their line number and a tab. ` +
      `Reads at most ${READ_DEFAULT_LINES} lines or ${READ_MAX_BYTES / 1024} KiB per call; use offset/limit to page through larger files.`,
    parameters,
    concurrencySafe: true,
    // Read-only: after a crash the continuation simply reads again.
    replay: 'safe',
    async execute({ path: given, offset = 1, limit = READ_DEFAULT_LINES }, ctx): Promise<ToolOutput> {
      // Every byte is read through this descriptor, checked to lie inside the root (no check-then-use race).
      const { handle, rel } = await openBeneath(workspace, given, 'read')
      let page: Page
      try {
        const info = await handle.stat()
        if (info.isDirectory()) throw new HarnessError(`${JSON.stringify(given)} is a directory; use the list tool`, 'IS_A_DIRECTORY')
        // A FIFO or device would block the read forever (or never end), so only regular files are read.
        if (!info.isFile()) throw new HarnessError(`${JSON.stringify(given)} is not a regular file`, 'NOT_A_FILE')
        if (info.size > limits.maxFileBytes) throw tooLarge(given, info.size, limits.maxFileBytes, 'read')
        if (await handleLooksBinary(handle)) {
          throw new HarnessError(`${JSON.stringify(given)} looks like a binary file (${info.size} bytes); read_file only shows text`, 'BINARY_FILE')
        }
        if (info.size === 0) return { content: `(${given} is empty)`, meta: { path: rel, lines: 0 } }
        page = await readLines(handle, offset, limit, ctx.signal)
      } finally {
        await handle.close()
      }
      if (page.lines.length === 0) {
        throw new HarnessError(`offset ${offset} is past the end of ${JSON.stringify(given)}, which has ${page.seen} lines`, 'INVALID_ARGS')
      }
      const last = offset + page.lines.length - 1
      const notes: string[] = []
      if (page.clippedLines > 0) notes.push(`${page.clippedLines} line(s) longer than ${READ_MAX_LINE_CHARS} characters were cut`)
      if (page.stoppedBy === 'bytes') {
        notes.push(`stopped at the ${READ_MAX_BYTES / 1024} KiB output cap after line ${last}; the file continues — call read_file with offset=${last + 1} to read more`)
      } else if (page.stoppedBy === 'limit') {
        notes.push(`showing lines ${offset}-${last}; the file continues — call read_file with offset=${last + 1} to read more`)
      }
      const body = page.lines.map((line, i) => `${String(offset + i).padStart(5)}\t${line}`).join('\n')
      return {
        content: notes.length === 0 ? body : `${body}\n\n[${notes.join('; ')}]`,
        meta: { path: rel, from: offset, to: last, truncated: page.stoppedBy !== undefined },
      }
    },
  })
}

interface Page {
  lines: string[]
  /** Lines seen in the file (all of them when the page ran to the end). */
  seen: number
  clippedLines: number
  /** Set when lines remained after the page. */
  stoppedBy?: 'limit' | 'bytes'
}

/** Streams the file so a huge log costs only the lines up to the page's end, never the whole file in memory. */
async function readLines(handle: FileHandle, offset: number, limit: number, signal: AbortSignal): Promise<Page> {
  const page: Page = { lines: [], seen: 0, clippedLines: 0 }
  let bytes = 0
  // autoClose off: the caller owns the descriptor and closes it once.
  const input = handle.createReadStream({ encoding: 'utf8', start: 0, autoClose: false })
  const reader = createInterface({ input, crlfDelay: Infinity })
  try {
    for await (const raw of reader) {
      page.seen++
      if (page.seen % 10_000 === 0) throwIfAborted(signal)
      if (page.seen < offset) continue
      // Stopping only once the next line exists means every "continues" note is true.
      if (page.lines.length === limit) {
        page.stoppedBy = 'limit'
        break
      }
      const { text, clipped } = clipLine(raw, READ_MAX_LINE_CHARS)
      const size = Buffer.byteLength(text) + 1
      if (page.lines.length > 0 && bytes + size > READ_MAX_BYTES) {
        page.stoppedBy = 'bytes'
        break
      }
      bytes += size
      if (clipped) page.clippedLines++
      page.lines.push(text)
    }
  } finally {
    // Closing the interface leaves its input stream open; an early stop must end the stream too.
    reader.close()
    input.destroy()
  }
  return page
}
