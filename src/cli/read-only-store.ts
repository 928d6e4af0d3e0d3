import type { SessionStore } from '../store/types.js'
import { cliStore, storeSpecOf } from './cli-harness.js'
import { resolveConfig, type EffectiveConfig } from '../app/config.js'
import { resolveSessionRef } from './session-ref.js'
import type { StoreSpec } from '../app/store-spec.js'

/** A store opened by a command that only looks at sessions, with the session it was asked about. */
export interface OpenedForReading {
  readonly config: EffectiveConfig
  readonly spec: StoreSpec
  readonly store: SessionStore
  /** The full id the user's prefix named. */
  readonly id: string
}

/**
 * Opens the `--store` for a read-only command (`inspect`, `verify`, `replay`, `fork`) and resolves a session id
 * prefix. A broken config file is reported and ignored: it must not keep anyone from their logs. The caller
 * closes `store`.
 */
export async function openForReading(storeFlag: string | undefined, ref: string): Promise<OpenedForReading> {
  const config = resolveConfig(storeFlag !== undefined ? { store: storeFlag } : {}, process.env, process.cwd(), { lenient: true })
  if (config.ignoredConfigProblem !== undefined) process.stderr.write(`ledgerloop: warning: ignoring the config file: ${config.ignoredConfigProblem}\n`)
  const spec = storeSpecOf(config)
  const store = await cliStore(config)
  try {
    return { config, spec, store, id: await resolveSessionRef(store, ref) }
  } catch (error) {
    await store.close()
    throw error
  }
}
