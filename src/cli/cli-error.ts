/** Exit codes of the `ledgerloop` command (docs/cli.md). */
export const EXIT = Object.freeze({
  ok: 0,
  /** The turn ended `error`, `blocked`, or `aborted` by a budget; a failed check (verify, replay). */
  failed: 1,
  /** Bad usage: unknown option, missing argument, invalid config, missing API key. */
  usage: 2,
  /** Cancelled with Ctrl-C (128 + SIGINT). */
  interrupted: 130,
})

/**
 * An error meant for the person at the terminal: `main` prints only its message (no stack) to stderr and exits
 * with its code. Messages must never contain secrets.
 */
export class CliError extends Error {
  /** Process exit code. */
  readonly exitCode: number

  constructor(message: string, exitCode: number = EXIT.usage) {
    super(message)
    this.name = 'CliError'
    this.exitCode = exitCode
  }
}
