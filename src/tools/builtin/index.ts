import { HarnessError } from '../../errors/harness-error.js'
import { CheckpointSlot } from '../checkpoint.js'
import type { DefinedTool } from '../define-tool.js'
import { bashTool, type NetworkPolicy } from './bash.js'
import { editFileTool } from './edit-file.js'
import { globTool } from './glob.js'
import { grepTool } from './grep.js'
import { resolveToolLimits, type ToolLimits } from './limits.js'
import { listTool } from './list.js'
import { readFileTool } from './read-file.js'
import { parseSandboxMode, type SandboxMode } from './sandbox.js'
import { resolveShellEnvPolicy } from './shell-env.js'
import { Workspace } from './workspace-path.js'
import { writeFileTool } from './write-file.js'

/** Options of {@link builtinTools}. */
export interface BuiltinToolsOptions {
  /** Workspace directory every tool is confined to; must exist. */
  readonly root: string
  /** Include the `bash` tool (default false: a shell can do anything the sandbox lets it). */
  readonly shell?: boolean
  /**
   * Where `bash` runs commands: `'bwrap'` (default) inside a bubblewrap sandbox, failing closed with
   * `SANDBOX_UNAVAILABLE` when it cannot start; `'off'` directly on the host with all of the user's rights.
   */
  readonly sandbox?: SandboxMode
  /**
   * Let sandboxed commands use the network: `false` (default: a new, empty network namespace), `true` (always),
   * or `'per-call'` (only calls that pass `network: true`, which `permissionPlugin` checks against rules on the
   * pseudo-tool `network`; without that plugin the model alone decides).
   */
  readonly network?: NetworkPolicy
  /** Size, count and time limits; see {@link ToolLimits} for the defaults. */
  readonly limits?: ToolLimits
  /**
   * Environment variables `bash` passes on besides the defaults (`DEFAULT_BASH_ENV`: PATH, HOME, USER, LOGNAME,
   * SHELL, LANG, LANGUAGE, LC_*, TERM, COLORTERM, NO_COLOR, TZ, TMPDIR). `PREFIX_*` adds every name with that
   * prefix. Everything else in the environment stays out of commands, whose output the model and the log see.
   */
  readonly bashEnv?: readonly string[]
  /**
   * Variables holding secrets, above all provider keys under a name of your own: never passed to `bash`, and
   * neither is any allowed variable whose value contains one of theirs. Names like `*API_KEY*` count as
   * secrets without being listed.
   */
  readonly secretEnv?: readonly string[]
  /**
   * Checkpoint the workspace before `write_file`, `edit_file` and `bash` change it (default true): the bytes
   * they overwrite or delete are kept in the harness's store and the log says which call changed which path,
   * so `harness.rewind` can restore them. Takes effect once a harness over a store with checkpoint blobs (all
   * built-in stores) offers the tools; `bash` walks the workspace before and after each command (docs/tools.md).
   */
  readonly checkpoints?: boolean
}

/**
 * The built-in tools, confined to `root`: `read_file`, `write_file`, `edit_file`, `list`, `grep`, `glob`, and
 * `bash` when `shell` is true. Paths are relative to `root`; absolute paths, `..` and symlink escapes fail
 * with `PATH_OUTSIDE_ROOT`, also against a link swapped in between check and use. `bash` runs in a
 * bubblewrap sandbox unless `sandbox: 'off'` (docs/tools.md says what it allows and what it does not stop).
 * @example
 * ```ts
 * for (const tool of builtinTools({ root: process.cwd(), shell: true })) harness.tools.register(tool)
 * ```
 * @throws HarnessError `INVALID_CONFIG` when `root` does not exist or is not a directory, for a bad
 *   `sandbox` or limit value, and for a `bashEnv` entry that is not a variable name or names a secret
 */
export function builtinTools(options: BuiltinToolsOptions): DefinedTool[] {
  const workspace = new Workspace(options.root)
  const limits = resolveToolLimits(options.limits)
  const sandbox = parseSandboxMode(options.sandbox ?? 'bwrap')
  const env = resolveShellEnvPolicy(options.bashEnv, options.secretEnv)
  if (options.checkpoints !== undefined && typeof options.checkpoints !== 'boolean') throw new HarnessError('checkpoints must be true or false', 'INVALID_CONFIG')
  // One slot for the tool set: the harness that offers these tools binds its sink to it.
  const checkpoints = options.checkpoints === false ? undefined : new CheckpointSlot()
  const tools = [
    erase(readFileTool(workspace, limits)),
    erase(writeFileTool(workspace, limits, checkpoints)),
    erase(editFileTool(workspace, limits, checkpoints)),
    erase(listTool(workspace)),
    erase(grepTool(workspace, limits)),
    erase(globTool(workspace, limits)),
  ]
  if (options.shell === true) tools.push(erase(bashTool(workspace, { sandbox, network: parseNetworkPolicy(options.network), limits, env, ...(checkpoints !== undefined ? { checkpoints } : {}) })))
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
export { DEFAULT_TOOL_LIMITS, type ToolLimits } from './limits.js'
export type { SandboxMode } from './sandbox.js'
export type { NetworkPolicy } from './bash.js'
export { DEFAULT_BASH_ENV } from './shell-env.js'

/**
 * Checks a network policy given at run time (JavaScript callers, config files).
 * @throws HarnessError `INVALID_CONFIG` for anything but `true`, `false`, `'per-call'` or `undefined`
 */
function parseNetworkPolicy(value: unknown): NetworkPolicy {
  if (value === undefined) return false
  if (value === true || value === false || value === 'per-call') return value
  throw new HarnessError(`network must be true, false or 'per-call', not ${JSON.stringify(value)}`, 'INVALID_CONFIG')
}
