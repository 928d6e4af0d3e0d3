import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

// What the CLI points people at must be in the installed package: both paths are resolved from this module,
// which sits one folder below the package root in src/ and in dist/ alike, never from the current folder.

/** The offline demo script `run --demo` plays (shipped in the package's `examples/scripts/`). */
export const DEMO_SCRIPT = fileURLToPath(new URL('../../examples/scripts/demo.json', import.meta.url))

/** The prompt `run --demo` sends when none is given. */
export const DEMO_PROMPT = 'Take notes'

/** The CLI reference, as shipped in the package's `docs/` (the same version as the code that prints it). */
export function cliDocsPath(): string {
  const path = fileURLToPath(new URL('../../docs/cli.md', import.meta.url))
  return existsSync(path) ? path : 'docs/cli.md in the ledgerloop package'
}
