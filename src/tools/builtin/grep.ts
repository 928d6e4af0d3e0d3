import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { fsError, throwIfAborted } from './fs-errors.js'
import { globToRegExp } from './glob-pattern.js'
import { clipLine, LINE_BREAK, looksBinary } from './text-file.js'
import { walkFiles, type WalkedFile } from './walk.js'
import type { Workspace } from './workspace-path.js'

/** Most matching lines one `grep` call reports. */
export const GREP_MAX_MATCHES = 200
/** Matching lines are shown cut to this many characters. */
export const GREP_MAX_LINE_CHARS = 300
/** Larger files are skipped (and counted in the note): they are generated or data, rarely what a model wants. */
export const GREP_MAX_FILE_BYTES = 4 * 1024 * 1024

const parameters = z.object({
  pattern: z.string().min(1).describe('JavaScript regular expression, matched against each line'),
  path: z.string().optional().describe('File or directory to search, relative to the workspace root (default: the root)'),
  glob: z
    .string()
    .optional()
    .describe('Only search files matching this glob; without a "/" it matches the file name at any depth (e.g. "*.ts")'),
})

/** Arguments of `grep`. */
export type GrepArgs = z.infer<typeof parameters>

/**
 * `grep {pattern, path?, glob?}`: lines matching a regex in the text files under `path`, as `file:line: text`,
 * skipping `.git`, `node_modules`, binary and very large files; capped at {@link GREP_MAX_MATCHES} with a note.
 * An invalid regex fails with `INVALID_PATTERN`.
 */
export function grepTool(workspace: Workspace): DefinedTool<GrepArgs> {
  return defineTool({
    name: 'grep',
    description:
      'Search file contents with a JavaScript regular expression. Prints "file:line: text" for each matching line. ' +
      `Skips .git, node_modules and binary files; reports at most ${GREP_MAX_MATCHES} matches.`,
    parameters,
    concurrencySafe: true,
    async execute({ pattern, path: given = '.', glob }, ctx): Promise<ToolOutput> {
      const regex = compile(pattern)
      const accept = glob === undefined ? () => true : fileFilter(glob)
      const target = await workspace.resolve(given)
      const info = await stat(target.real).catch((error: unknown) => {
        throw fsError(error, given)
      })
      const files: AsyncIterable<WalkedFile> | WalkedFile[] = info.isDirectory()
        ? walkFiles(target.real, target.rel, ctx.signal)
        : [{ abs: target.real, rel: target.rel }]
      const found: string[] = []
      let filesSearched = 0
      let skippedLarge = 0
      let capped = false
      search: for await (const file of files) {
        if (!accept(file.rel)) continue
        throwIfAborted(ctx.signal)
        const lines = await readSearchable(file.abs)
        if (lines === 'large') skippedLarge++
        if (typeof lines === 'string') continue
        filesSearched++
        for (let i = 0; i < lines.length; i++) {
          const line = lines[i] as string
          if (!regex.test(line)) continue
          if (found.length === GREP_MAX_MATCHES) {
            capped = true
            break search
          }
          found.push(`${file.rel}:${i + 1}: ${clipLine(line, GREP_MAX_LINE_CHARS).text}`)
        }
      }
      const notes: string[] = []
      if (capped) notes.push(`stopped after ${GREP_MAX_MATCHES} matches; narrow the pattern, path or glob to see the rest`)
      if (skippedLarge > 0) notes.push(`${skippedLarge} file(s) larger than ${GREP_MAX_FILE_BYTES / 1024 / 1024} MiB were not searched`)
      const body = found.length > 0 ? found.join('\n') : `No matches for ${JSON.stringify(pattern)} in ${target.rel} (${filesSearched} files searched)`
      return {
        content: notes.length > 0 ? `${body}\n\n[${notes.join('; ')}]` : body,
        meta: { matches: found.length, filesSearched, capped },
      }
    },
  })
}

function compile(pattern: string): RegExp {
  try {
    return new RegExp(pattern)
  } catch (error) {
    throw new HarnessError(`invalid regular expression ${JSON.stringify(pattern)}: ${(error as Error).message}`, 'INVALID_PATTERN', {
      cause: error,
    })
  }
}

/** ripgrep's convention: a glob without `/` names files at any depth, one with `/` is matched from the root. */
function fileFilter(glob: string): (rel: string) => boolean {
  const matcher = globToRegExp(glob)
  if (glob.includes('/')) return (rel) => matcher.test(rel)
  return (rel) => matcher.test(path.posix.basename(rel))
}

/** The file's lines, or why it is not searched. Read errors skip the file: one unreadable file should not sink a search. */
async function readSearchable(file: string): Promise<string[] | 'large' | 'binary' | 'unreadable'> {
  try {
    if ((await stat(file)).size > GREP_MAX_FILE_BYTES) return 'large'
    const data = await readFile(file)
    if (looksBinary(data)) return 'binary'
    const lines = data.toString('utf8').split(LINE_BREAK)
    // A final line break ends the last line; it does not start an empty one that `^$` would "match".
    if (lines.at(-1) === '') lines.pop()
    return lines
  } catch {
    return 'unreadable'
  }
}
