import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { globToRegExp, staticPrefix } from './glob-pattern.js'
import { walkFiles } from './walk.js'
import type { Workspace } from './workspace-path.js'

/** Most paths one `glob` call lists. */
export const GLOB_MAX_RESULTS = 1000
// Matches are gathered before sorting so the first page is the first in path order, but not without bound.
const GLOB_MAX_COLLECTED = 100_000

const parameters = z.object({
  pattern: z.string().min(1).describe('Glob relative to the workspace root, e.g. "src/**/*.ts" or "*.{json,md}"'),
})

/** Arguments of `glob`. */
export type GlobArgs = z.infer<typeof parameters>

/**
 * `glob {pattern}`: workspace files whose root-relative path matches the glob (see {@link globToRegExp}),
 * sorted, capped at {@link GLOB_MAX_RESULTS} with a note; `.git` and `node_modules` are not searched unless
 * the pattern starts inside them.
 */
export function globTool(workspace: Workspace): DefinedTool<GlobArgs> {
  return defineTool({
    name: 'glob',
    description:
      'Find files by path pattern, relative to the workspace root. "*" and "?" stay within one directory, "**" spans ' +
      'directories ("**/*.ts" finds .ts files at any depth, "*.ts" only at the top), "{a,b}" gives alternatives. ' +
      `Skips .git and node_modules; lists at most ${GLOB_MAX_RESULTS} paths, sorted.`,
    parameters,
    concurrencySafe: true,
    async execute({ pattern }, ctx): Promise<ToolOutput> {
      const glob = pattern.replace(/^(?:\.\/)+/, '')
      if (glob.startsWith('/')) throw outside(pattern, 'absolute patterns are not allowed')
      if (glob.split('/').includes('..')) throw outside(pattern, '".." segments are not allowed')
      const matcher = globToRegExp(glob)
      const base = staticPrefix(glob)
      // The walk starts at the fixed directory prefix, checked like any other path (it may be a symlink).
      const start = await workspace.resolve(base === '' ? '.' : base)
      const matches: string[] = []
      for await (const file of walkFiles(start.real, base === '' ? '.' : base, ctx.signal)) {
        if (!matcher.test(file.rel)) continue
        matches.push(file.rel)
        if (matches.length === GLOB_MAX_COLLECTED) break
      }
      if (matches.length === 0) return { content: `No files match ${JSON.stringify(pattern)}`, meta: { matches: 0, capped: false } }
      matches.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      const shown = matches.slice(0, GLOB_MAX_RESULTS)
      const more = matches.length === GLOB_MAX_COLLECTED ? 'at least ' : ''
      const note = matches.length > shown.length ? `\n\n[showing ${shown.length} of ${more}${matches.length} matches; narrow the pattern to see the rest]` : ''
      return { content: shown.join('\n') + note, meta: { matches: matches.length, capped: matches.length > shown.length } }
    },
  })
}

function outside(pattern: string, why: string): HarnessError {
  return new HarnessError(`glob ${JSON.stringify(pattern)} reaches outside the workspace root: ${why}`, 'PATH_OUTSIDE_ROOT')
}
