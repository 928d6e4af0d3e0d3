import { join } from 'node:path'
import { createHarness, type Harness } from '../agent/harness.js'
import { HarnessError } from '../errors/harness-error.js'
import type { PermissionAnswer, PermissionQuestion } from '../plugins/permission.js'
import { permissionPlugin } from '../plugins/permission.js'
import { retryPlugin } from '../plugins/retry.js'
import { turnBudgetPlugin } from '../plugins/turn-budget.js'
import { JsonlStore } from '../store/jsonl-store.js'
import { builtinTools } from '../tools/builtin/index.js'
import type { SandboxMode } from '../tools/builtin/sandbox.js'
import { CliError, EXIT } from './cli-error.js'
import type { EffectiveConfig } from './config.js'
import type { ModelRoute } from './providers.js'

/** The persona section of every CLI agent's system prompt (`{{cwd}}` is the tool root). */
export const CLI_SYSTEM_PROMPT =
  'You are ledgerloop, a coding and operations agent working in a terminal. Your workspace is {{cwd}}; every tool ' +
  'path is relative to it. Look before you change anything, keep changes small, and end with a short account of ' +
  'what you did.'

/** What a CLI harness is built from. */
export interface CliHarnessOptions {
  readonly config: EffectiveConfig
  readonly route: ModelRoute
  /** Tool root (absolute, must exist). */
  readonly root: string
  /** Where `bash` runs (default bwrap) and whether it keeps the network (default false). */
  readonly sandbox?: SandboxMode
  readonly network?: boolean
  /** Answers permission questions; absent = asks are denied (non-interactive without --yes). */
  readonly ask?: (question: PermissionQuestion) => Promise<PermissionAnswer>
}

/** Where the CLI keeps sessions: `$LEDGERLOOP_HOME/sessions`. */
export function sessionsDir(config: EffectiveConfig): string {
  return join(config.home, 'sessions')
}

/** The session store of the CLI. */
export function cliStore(config: EffectiveConfig): JsonlStore {
  return new JsonlStore({ dir: sessionsDir(config) })
}

/**
 * A harness as the CLI runs it: the JSONL store, the route's adapter, the built-in tools on the root, and the
 * retry, permission and turn-budget plugins.
 */
export function createCliHarness(options: CliHarnessOptions): Harness {
  const { config, route } = options
  let tools
  try {
    tools = builtinTools({ root: options.root, shell: config.shell, sandbox: options.sandbox ?? 'bwrap', network: options.network === true })
  } catch (error) {
    if (error instanceof HarnessError) throw new CliError(`tool root ${options.root}: ${error.message}`, EXIT.usage)
    throw error
  }
  let budget
  try {
    budget = turnBudgetPlugin({ maxSteps: config.maxSteps, ...(config.maxTokens !== undefined ? { maxTokens: config.maxTokens } : {}) })
  } catch (error) {
    throw new CliError((error as Error).message, EXIT.usage)
  }
  let permissions
  try {
    permissions = permissionPlugin({ rules: config.permissions, ...(options.ask !== undefined ? { ask: options.ask } : {}) })
  } catch (error) {
    throw new CliError(`${config.configFile}: field "permissions": ${(error as Error).message}`, EXIT.usage)
  }
  return createHarness({
    store: cliStore(config),
    adapters: [route.adapter],
    tools,
    plugins: [retryPlugin(config.retry), permissions, budget],
    system: CLI_SYSTEM_PROMPT,
  })
}
