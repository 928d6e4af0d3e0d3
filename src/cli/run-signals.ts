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
  /**
   * The exit code an outside stop asks for, if any: 141 for a closed stdout; 143 for SIGTERM once it cut a turn
   * off (the grace ran out, or a second SIGTERM) — a turn that finished within the grace keeps its own code.
   */
  readonly exitCode: number | undefined
  dispose(): void
}

/** Default grace a SIGTERM leaves a running turn before it is cancelled (as `runWorker`'s `shutdownGraceMs`). */
export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000

/** The cancel cause of a shutdown: a turn it cuts off is continued by the next resume, as after a crash. */
export const SHUTDOWN_CAUSE: CancelCause = Object.freeze({ kind: 'disposed' })

/**
 * Turns the two ways a process is stopped from outside into a clean end of the running turn, so the turn still
 * gets its `turn/end`, the log is flushed and the lock released (seed §3):
 * - SIGTERM (a process manager, `kill`, a deploy) drains: `onSigterm` is told at once (take no more input), the
 *   running turn may finish for `graceMs`, then it is cancelled `aborted {kind:'disposed'}` — the cause a resume
 *   continues (docs/scaling.md, "Continuation after a crash"). A second SIGTERM exits at once.
 * - a closed stdout (`ledgerloop run … | head -1`, which would otherwise crash with EPIPE mid-turn) cancels at
 *   once, `aborted` by the hook cause `stdout closed`.
 */
export function watchOutsideStops(cancel: (cause: CancelCause) => void, options: { readonly graceMs?: number; readonly onSigterm?: () => void } = {}): OutsideStops {
  const graceMs = options.graceMs ?? DEFAULT_SHUTDOWN_GRACE_MS
  let stopped: OutsideStop | undefined
  let cutOff = false
  let grace: NodeJS.Timeout | undefined
  let terms = 0
  const onTerm = (): void => {
    terms++
    // A second SIGTERM means "now": the turn close is skipped, as with a second Ctrl-C.
    if (terms > 1) process.exit(EXIT_TERMINATED)
    stopped ??= 'sigterm'
    options.onSigterm?.()
    const cutTurnOff = (): void => {
      cutOff = true
      cancel(SHUTDOWN_CAUSE)
    }
    if (graceMs <= 0) cutTurnOff()
    else grace = setTimeout(cutTurnOff, graceMs)
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
      if (stopped === 'stdout-closed') return EXIT_STDOUT_CLOSED
      return stopped === 'sigterm' && cutOff ? EXIT_TERMINATED : undefined
    },
    dispose() {
      if (grace !== undefined) clearTimeout(grace)
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

