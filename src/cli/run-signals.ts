import type { CancelCause } from '../session/events.js'

/** Exit code after SIGTERM (128 + 15), the convention of shells and process managers. */
export const EXIT_TERMINATED = 143
/** Exit code when stdout was closed under us (128 + SIGPIPE), what `yes | head -1` reports for `yes`. */
export const EXIT_STDOUT_CLOSED = 141

/** How a run was stopped from outside, once it was. */
export type OutsideStop = 'sigterm' | 'stdout-closed'

/** What {@link watchOutsideStops} reports and how it is undone. */
export interface OutsideStops {
  /** The first outside stop, if any. */
  readonly stopped: OutsideStop | undefined
  /** The exit code an outside stop asks for, if any. */
  readonly exitCode: number | undefined
  dispose(): void
}

/**
 * Turns the two ways a process is stopped from outside into a cancel of the running turn, so the turn still
 * gets its `turn/end`, the log is flushed and the lock released (seed §3): SIGTERM (a process manager, `kill`)
 * and a closed stdout (`ledgerloop run … | head -1`, which would otherwise crash with EPIPE mid-turn). Both are
 * logged as `aborted` by a named cause, so `inspect` tells them from a Ctrl-C.
 */
export function watchOutsideStops(cancel: (cause: CancelCause) => void): OutsideStops {
  let stopped: OutsideStop | undefined
  let terms = 0
  const onTerm = (): void => {
    terms++
    // A second SIGTERM means "now": the turn close is skipped, as with a second Ctrl-C.
    if (terms > 1) process.exit(EXIT_TERMINATED)
    stopped ??= 'sigterm'
    cancel({ kind: 'hook', reason: 'SIGTERM' })
  }
  const onStdoutError = (error: NodeJS.ErrnoException): void => {
    // Every later write fails too; the listener stays so none of them becomes an uncaught exception.
    if (stopped !== undefined && stopped !== 'sigterm') return
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') {
      stopped ??= 'stdout-closed'
      cancel({ kind: 'hook', reason: 'stdout closed' })
    }
  }
  process.on('SIGTERM', onTerm)
  process.stdout.on('error', onStdoutError)
  return {
    get stopped() {
      return stopped
    },
    get exitCode() {
      return stopped === 'sigterm' ? EXIT_TERMINATED : stopped === 'stdout-closed' ? EXIT_STDOUT_CLOSED : undefined
    },
    dispose() {
      process.off('SIGTERM', onTerm)
      // Kept for stdout: the final footer and the exit path may still write to a closed pipe.
      if (stopped === undefined) process.stdout.off('error', onStdoutError)
    },
  }
}

/** The exit code for a run: an outside stop wins over the turn's own outcome. */
export function exitCodeAfter(stops: OutsideStops, turnExit: number): number {
  return stops.exitCode ?? turnExit
}

/** Whether stdout can still be written (false after the reader went away). */
export function stdoutOpen(): boolean {
  return !process.stdout.destroyed && process.stdout.writable
}

