// Owns the one error app/ raises for a configuration or option a person got wrong. app/ sits below the CLI
// and must not import cli/ (docs/architecture.md: arrows point down), so it cannot throw the CLI's own
// error; the CLI maps this one to exit code 2 (docs/cli.md, "Exit codes").
import { HarnessError } from '../errors/harness-error.js'

/** The codes of {@link UsageError}: an invalid configuration value, or options that cannot be used together. */
export type UsageErrorCode = 'INVALID_CONFIG' | 'USAGE'

/**
 * A mistake in what the user asked for (a config file field, a flag, a missing key): the message is meant for
 * that person as it is, without a stack. Front ends show the message; the CLI exits 2.
 */
export class UsageError extends HarnessError {
  /**
   * @param message - what is wrong and, where we can tell, how to fix it (never a secret)
   * @param code - `USAGE` (default) or `INVALID_CONFIG`
   */
  constructor(message: string, code: UsageErrorCode = 'USAGE') {
    super(message, code)
  }
}
