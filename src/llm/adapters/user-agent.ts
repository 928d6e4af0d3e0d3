import { createRequire } from 'node:module'

/**
 * The package version, read from package.json once. The relative path holds from both `src/llm/adapters/` and
 * `dist/llm/adapters/`, so the same line works under tsx and after the build.
 */
function packageVersion(): string {
  try {
    const manifest: unknown = createRequire(import.meta.url)('../../../package.json')
    const version = (manifest as { version?: unknown }).version
    return typeof version === 'string' && version !== '' ? version : '0.0.0'
  } catch {
    return '0.0.0'
  }
}

/** The `user-agent` every adapter request carries: `ledgerloop/<version>`. */
export const LEDGERLOOP_USER_AGENT = `ledgerloop/${packageVersion()}`
