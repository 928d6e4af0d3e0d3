import path from 'node:path'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { fsError, throwIfAborted } from './fs-errors.js'
import { compileGlob } from './glob-pattern.js'
import type { ResolvedToolLimits } from './limits.js'
import { openBeneath } from './open-beneath.js'
import { RegexWorker, type LineHit } from './regex-worker.js'
import { looksBinary } from './text-file.js'
import { walkFiles } from './walk.js'
import type { Workspace } from './workspace-path.js'

/** Most matching lines one `grep` call reports. */
export const GREP_MAX_MATCHES = 200
/** Matching lines are shown cut to this many characters. */
export const GREP_MAX_LINE_CHARS = 300

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
 * skipping `.git`, `node_modules`, binary files and files over `limits.maxFileBytes`; capped at
 * {@link GREP_MAX_MATCHES} with a note. Matching runs in a worker thread with a `limits.grepTimeoutMs`
 * budget: a pattern that backtracks catastrophically fails with `TOOL_TIMEOUT` instead of freezing the loop,
 * and cancelling the turn terminates it (`ABORTED`). An invalid regex fails with `INVALID_PATTERN`.
 */
export function grepTool(workspace: Workspace, limits: ResolvedToolLimits): DefinedTool<GrepArgs> {
  return defineTool({
    name: 'grep',
    description:
      'Search file contents with a JavaScript regular expression. Prints "file:line: text" for each matching line. ' +
      `Skips .git, node_modules and binary files; reports at most ${GREP_MAX_MATCHES} matches.`,
    parameters,
    concurrencySafe: true,
    // Read-only: after a crash the continuation simply reads again.
    replay: 'safe',
    async execute({ pattern, path: given = '.', glob }, ctx): Promise<ToolOutput> {
      const regex = compile(pattern)
      const accept = glob === undefined ? () => true : fileFilter(glob)
      const start = await openBeneath(workspace, given, 'read')
      let isDirectory: boolean
      try {
        isDirectory = (await start.handle.stat()).isDirectory()
      } catch (error) {
        throw fsError(error, given)
      } finally {
        await start.handle.close()
      }
      const walk = isDirectory ? await walkFiles(workspace, start.real, start.rel, limits.maxFilesWalked, ctx.signal) : { files: [start.rel], capped: false }
      const matcher = new RegexWorker(regex, limits.grepTimeoutMs, ctx.signal)
      const found: string[] = []
      let filesSearched = 0
      let skippedLarge = 0
      let capped = false
      try {
        for (const rel of walk.files) {
          if (!accept(rel)) continue
          throwIfAborted(ctx.signal)
          const file = await readSearchable(workspace, rel, limits.maxFileBytes)
          if (file.skipped === 'large') skippedLarge++
          if (file.text === undefined) continue
          filesSearched++
          const hits = await matcher.match(file.text, GREP_MAX_MATCHES + 1 - found.length, GREP_MAX_LINE_CHARS)
          for (const hit of hits) {
            if (found.length === GREP_MAX_MATCHES) {
              capped = true
              break
            }
            found.push(`${rel}:${hit[0]}: ${formatLine(hit)}`)
          }
          if (capped) break
        }
      } finally {
        await matcher.close()
      }
      const notes: string[] = []
      if (capped) notes.push(`stopped after ${GREP_MAX_MATCHES} matches; narrow the pattern, path or glob to see the rest`)
      if (skippedLarge > 0) notes.push(`${skippedLarge} file(s) larger than ${limits.maxFileBytes} bytes (limits.maxFileBytes) were not searched`)
      if (walk.capped) notes.push(`the search stopped after looking at ${limits.maxFilesWalked} files (limits.maxFilesWalked)`)
      const body = found.length > 0 ? found.join('\n') : `No matches for ${JSON.stringify(pattern)} in ${start.rel} (${filesSearched} files searched)`
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
  const matches = compileGlob(glob)
  if (glob.includes('/')) return matches
  return (rel) => matches(path.posix.basename(rel))
}

function formatLine([, head, length]: LineHit): string {
  if (length <= GREP_MAX_LINE_CHARS) return head
  return `${head}… [${length - GREP_MAX_LINE_CHARS} more characters]`
}

/**
 * A file's text, read through a descriptor opened beneath the root, or why it is not searched. Errors skip
 * the file (one unreadable file should not sink a search), and so does a name that now leads outside.
 */
type Searchable = { text: string; skipped?: undefined } | { text?: undefined; skipped: 'large' | 'binary' | 'unreadable' }

async function readSearchable(workspace: Workspace, rel: string, maxBytes: number): Promise<Searchable> {
  let opened
  try {
    opened = await openBeneath(workspace, rel, 'read')
  } catch {
    return { skipped: 'unreadable' }
  }
  try {
    const info = await opened.handle.stat()
    if (!info.isFile()) return { skipped: 'unreadable' }
    if (info.size > maxBytes) return { skipped: 'large' }
    const data = await opened.handle.readFile()
    if (looksBinary(data)) return { skipped: 'binary' }
    return { text: data.toString('utf8') }
  } catch {
    return { skipped: 'unreadable' }
  } finally {
    await opened.handle.close()
  }
}
