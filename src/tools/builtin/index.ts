import type { DefinedTool } from '../define-tool.js'
import { bashTool } from './bash.js'
import { editFileTool } from './edit-file.js'
import { globTool } from './glob.js'
import { grepTool } from './grep.js'
import { listTool } from './list.js'
import { readFileTool } from './read-file.js'
import { Workspace } from './workspace-path.js'
import { writeFileTool } from './write-file.js'

/** Options of {@link builtinTools}. */
export interface BuiltinToolsOptions {
  /** Workspace directory every tool is confined to; must exist. */
  readonly root: string
  /** Include the `bash` tool (default false: a shell can do anything the user can). */
  readonly shell?: boolean
}

/**
 * The built-in tools, confined to `root`: `read_file`, `write_file`, `edit_file`, `list`, `grep`, `glob`, and
 * `bash` when `shell` is true. Paths are relative to `root`; absolute paths, `..` and symlink escapes fail
 * with `PATH_OUTSIDE_ROOT`.
 * @example
 * ```ts
 * for (const tool of builtinTools({ root: process.cwd(), shell: true })) harness.tools.register(tool)
 * ```
 * @throws HarnessError `INVALID_CONFIG` when `root` does not exist or is not a directory
 */
export function builtinTools(options: BuiltinToolsOptions): DefinedTool[] {
  const workspace = new Workspace(options.root)
  const tools = [
    erase(readFileTool(workspace)),
    erase(writeFileTool(workspace)),
    erase(editFileTool(workspace)),
    erase(listTool(workspace)),
    erase(grepTool(workspace)),
    erase(globTool(workspace)),
  ]
  if (options.shell === true) tools.push(erase(bashTool(workspace)))
  return tools
}

/**
 * Forgets a tool's argument type so differently typed tools share one list. Sound because the pipeline only
 * calls `execute` with what the tool's own `validate` returned.
 */
function erase<Args>(tool: DefinedTool<Args>): DefinedTool {
  return tool as unknown as DefinedTool
}

export { Workspace, type WorkspacePath } from './workspace-path.js'
