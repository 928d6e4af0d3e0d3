import { HarnessError } from '../../errors/harness-error.js'

/**
 * Resource limits of the built-in tools. Every field is optional; {@link DEFAULT_TOOL_LIMITS} fills the rest.
 * docs/tools.md explains each one.
 */
export interface ToolLimits {
  /** Largest file `read_file` and `edit_file` open and `grep` searches, in bytes (default 10 MiB). */
  readonly maxFileBytes?: number
  /** Largest content `write_file` and `edit_file` write, in bytes (default 10 MiB). */
  readonly maxWriteBytes?: number
  /** Most files `glob` and `grep` look at in one call (default 100,000); the call says when it stopped early. */
  readonly maxFilesWalked?: number
  /** Wall-clock budget of one `grep` call's regex matching, in milliseconds (default 10,000). */
  readonly grepTimeoutMs?: number
  /** Most processes a sandboxed `bash` command may run at once, a fork bomb's ceiling (default 256). */
  readonly maxProcesses?: number
}

/** {@link ToolLimits} with every field set. */
export type ResolvedToolLimits = Required<ToolLimits>

/** The defaults: generous for source trees, small enough that one call cannot exhaust the host. */
export const DEFAULT_TOOL_LIMITS: ResolvedToolLimits = Object.freeze({
  maxFileBytes: 10 * 1024 * 1024,
  maxWriteBytes: 10 * 1024 * 1024,
  maxFilesWalked: 100_000,
  grepTimeoutMs: 10_000,
  maxProcesses: 256,
})

/**
 * `limits` merged over the defaults.
 * @throws HarnessError `INVALID_CONFIG` for a limit that is not a positive integer, or an unknown limit name
 */
export function resolveToolLimits(limits: ToolLimits = {}): ResolvedToolLimits {
  const resolved: Record<string, number> = { ...DEFAULT_TOOL_LIMITS }
  for (const [name, value] of Object.entries(limits) as Array<[string, unknown]>) {
    if (!(name in DEFAULT_TOOL_LIMITS)) {
      throw new HarnessError(`unknown tool limit ${JSON.stringify(name)}; known: ${Object.keys(DEFAULT_TOOL_LIMITS).join(', ')}`, 'INVALID_CONFIG')
    }
    if (value === undefined) continue
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new HarnessError(`tool limit ${name} must be a positive integer, got ${JSON.stringify(value)}`, 'INVALID_CONFIG')
    }
    resolved[name] = value
  }
  return resolved as unknown as ResolvedToolLimits
}
