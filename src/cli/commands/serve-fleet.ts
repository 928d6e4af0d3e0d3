import { resolve } from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'
import { createLedgerServer, type LedgerServer } from '../../server/server.js'
import { PostgresSessionPort } from '../../server/postgres-session-port.js'
import { CliError, EXIT } from '../cli-error.js'
import { cliPricing } from '../cli-harness.js'
import type { EffectiveConfig } from '../../app/config.js'
import { describeStoreSpec, loadPostgresStoreModule } from '../../app/store-spec.js'
import { UsageError } from '../../app/usage-error.js'
import type { ServeFlags } from './serve-flags.js'

// Flags that choose how sessions run: with a worker fleet the workers decide, so they would be silently ignored.
const WORKER_SIDE: readonly (keyof ServeFlags)[] = ['provider', 'model', 'baseUrl', 'script', 'yes', 'maxSteps', 'system', 'sandbox', 'network', 'networkAsk', 'reasoningEffort', 'maxOutputTokens', 'retries', 'maxCost']

/**
 * `serve --store postgres://…`: the server only writes the inbox (and approval answers) and follows the log;
 * `ledgerloop worker` processes run the sessions. Resolves to the started server and its closer.
 */
export async function startFleetServer(flags: ServeFlags, config: EffectiveConfig, url: string): Promise<{ server: LedgerServer; banner: string; close: () => Promise<void> }> {
  const given = WORKER_SIDE.filter((flag) => flags[flag] !== undefined)
  if (given.length > 0) {
    const names = given.map((f) => `--${f.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')
    throw new CliError(`${names}: with --store postgres://… the sessions run on workers; pass these to \`ledgerloop worker\` instead`, EXIT.usage)
  }
  let store
  try {
    store = await (await loadPostgresStoreModule()).openPostgresStoreFromUrl(url)
    await store.ready()
  } catch (error) {
    await store?.close().catch(() => undefined)
    if (error instanceof HarnessError && !(error instanceof UsageError)) throw new CliError(`--store: ${error.message} (${error.code})`, error.code === 'INVALID_CONFIG' ? EXIT.usage : EXIT.failed)
    throw error
  }
  const port = new PostgresSessionPort({ store, cwd: resolve(flags.root ?? config.root) })
  const server = await createLedgerServer({
    store,
    sessions: { input: port, feed: port, close: () => port.close() },
    pricing: cliPricing(config),
    token: flags.unsafeNoToken === true ? false : (flags.token ?? undefined),
    host: flags.host,
    port: flags.port,
    ...(flags.allowOrigin !== undefined ? { allowedOrigins: flags.allowOrigin } : {}),
  })
  return {
    server,
    banner: `ledgerloop serve · sessions run by workers on ${describeStoreSpec({ kind: 'postgres', url })}`,
    close: async () => {
      await server.close()
      await store.close()
    },
  }
}
