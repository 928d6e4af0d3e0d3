import { HarnessError } from '../../errors/harness-error.js'

/**
 * Turns a Node fs error into a `HarnessError` whose message names the path as the model wrote it, so the
 * model reads "no such file: src/x.ts" rather than an errno with our absolute path in it.
 * A `HarnessError` passes through unchanged.
 */
export function fsError(error: unknown, given: string): HarnessError {
  if (error instanceof HarnessError) return error
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  const name = JSON.stringify(given)
  switch (code) {
    case 'ENOENT':
      return new HarnessError(`no such file or directory: ${name}`, 'FILE_NOT_FOUND', { cause: error })
    case 'EISDIR':
      return new HarnessError(`${name} is a directory (use the list tool for directories)`, 'IS_A_DIRECTORY', { cause: error })
    case 'ENOTDIR':
      return new HarnessError(`a component of ${name} is not a directory`, 'NOT_A_DIRECTORY', { cause: error })
    case 'EACCES':
    case 'EPERM':
      return new HarnessError(`permission denied: ${name}`, 'PERMISSION_DENIED', { cause: error })
    case 'ELOOP':
      return new HarnessError(`too many levels of symbolic links: ${name}`, 'SYMLINK_LOOP', { cause: error })
    default:
      return new HarnessError(`cannot access ${name}: ${(error as Error | undefined)?.message ?? String(error)}`, 'FS_ERROR', { cause: error })
  }
}

/** Throws `ABORTED` when the turn was cancelled; long walks call it between files. */
export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw new HarnessError('the tool call was cancelled', 'ABORTED', { cause: signal.reason })
}
