import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { compileGlob, staticPrefix } from './glob-pattern.js'
import type { ResolvedToolLimits } from './limits.js'
import { openBeneath } from './open-beneath.js'
import { walkFiles } from './walk.js'
import type { Workspace } from './workspace-path.js'

/** Most paths one `glob` call lists. */
export const GLOB_MAX_RESULTS = 1000

const parameters = z.object({
  pattern: z.string().min(1).describe('Glob relative to the workspace root, e.g. "src/**/*.ts" or "*.{json,md}"'),
})

/** Arguments of `glob`. */
export type GlobArgs = z.infer<typeof parameters>

/**
 * `glob {pattern}`: workspace files whose root-relative path matches the glob (see {@link compileGlob}),
 * sorted, capped at {@link GLOB_MAX_RESULTS} with a note; `.git` and `node_modules` are not searched unless
 * the pattern starts inside them; at most `limits.maxFilesWalked` files are looked at.
 */
export function globTool(workspace: Workspace, limits: ResolvedToolLimits): DefinedTool<GlobArgs> {
  return defineTool({
    name: 'glob',
    description:
      'Find files by path pattern, relative to the workspace root. "*" and "?" stay within one directory, "**" spans ' +
      'directories ("**/*.ts" finds .ts files at any depth, "*.ts" only at the top), "{a,b}" gives alternatives. ' +
      `Skips .git and node_modules; lists at most ${GLOB_MAX_RESULTS} paths, sorted.`,
    parameters,
    concurrencySafe: true,
    // Read-only: after a crash the continuation simply reads again.
    replay: 'safe',
    async execute({ pattern }, ctx): Promise<ToolOutput> {
      const glob = pattern.replace(/^(?:\.\/)+/, '')
      if (glob.startsWith('/')) throw outside(pattern, 'absolute patterns are not allowed')
      if (glob.split('/').includes('..')) throw outside(pattern, '".." segments are not allowed')
      const matches = compileGlob(glob)
      const base = staticPrefix(glob)
      // The walk starts at the fixed directory prefix, opened like any other path (it may be a symlink).
      const start = await openBeneath(workspace, base === '' ? '.' : base, 'read').catch((error: unknown) => {
        // A prefix that does not exist simply has no files under it.
        if (error instanceof HarnessError && error.code === 'FILE_NOT_FOUND') return undefined
        throw error
      })
      await start?.handle.close()
      const walk = start === undefined ? { files: [], capped: false } : await walkFiles(workspace, start.real, base === '' ? '.' : base, limits.maxFilesWalked, ctx.signal)
      const found = walk.files.filter(matches)
      const notes: string[] = []
      const more = walk.capped ? 'at least ' : ''
      if (found.length > GLOB_MAX_RESULTS) notes.push(`showing ${GLOB_MAX_RESULTS} of ${more}${found.length} matches; narrow the pattern to see the rest`)
      if (walk.capped) notes.push(`the search stopped after looking at ${limits.maxFilesWalked} files (limits.maxFilesWalked)`)
      const note = notes.length > 0 ? `\n\n[${notes.join('; ')}]` : ''
      const meta = { matches: found.length, capped: found.length > GLOB_MAX_RESULTS || walk.capped }
      if (found.length === 0) return { content: `No files match ${JSON.stringify(pattern)}${note}`, meta }
      return { content: found.slice(0, GLOB_MAX_RESULTS).join('\n') + note, meta }
    },
  })
}

function outside(pattern: string, why: string): HarnessError {
  return new HarnessError(`glob ${JSON.stringify(pattern)} reaches outside the workspace root: ${why}`, 'PATH_OUTSIDE_ROOT')
}
