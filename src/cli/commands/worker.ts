import { resolve } from 'node:path'
import type { Command } from 'commander'
import type { HarnessOptions } from '../../agent/harness.js'
import { HarnessError } from '../../errors/harness-error.js'
import { scriptedAdapter } from '../../llm/adapters/scripted.js'
import { permissionPlugin } from '../../plugins/permission.js'
import { retryPlugin } from '../../plugins/retry.js'
import { turnBudgetPlugin } from '../../plugins/turn-budget.js'
import type { PostgresStore } from '../../store/postgres/postgres-store.js'
import { builtinTools } from '../../tools/builtin/index.js'
import { runWorker } from '../../worker/run-worker.js'
import { storeApprovalPlugin } from '../../worker/store-approvals.js'
import type { WorkerEvent } from '../../worker/session-task.js'
import { turnScript } from '../../worker/turn-script.js'
import { CliError, EXIT } from '../cli-error.js'
import { isPostgresStoreUrl, loadPostgresStoreModule } from '../../app/store-spec.js'
import { CLI_SYSTEM_PROMPT } from '../cli-harness.js'
import { bashEnvOptions, resolveConfig, type EffectiveConfig } from '../../app/config.js'
import { loadScript, providerAdapter, providerSpec, requireApiKey, SCRIPTED_PROVIDER, type ModelRoute } from '../../app/providers.js'
import { positiveInteger } from './agent-options.js'

/** Options of `ledgerloop worker`. */
export interface WorkerFlags {
  readonly store?: string
  readonly concurrency?: number
  readonly provider?: string
  readonly model?: string
  readonly baseUrl?: string
  readonly script?: string
  readonly root?: string
  readonly yes?: boolean
  readonly remoteApprovals?: boolean
  readonly maxSteps?: number
  readonly leaseMs?: number
  readonly idleGraceMs?: number
  readonly pollMs?: number
  readonly json?: boolean
}

/** Registers `ledgerloop worker` on the program; its action stores the exit code in `exit`. */
export function registerWorkerCommand(program: Command, exit: { code: number }): void {
  program
    .command('worker')
    .description('serve sessions from a PostgreSQL store: claim those with input, run their turns, take over dead workers\' sessions')
    .option('--store <url>', 'the PostgreSQL store: postgres://user@host:port/db[?schema=name]')
    .option('--concurrency <n>', 'sessions served at once (default 4)', positiveInteger)
    .option('--provider <name>', 'provider for sessions without a recorded request (default: the configured one)')
    .option('--model <name>', 'model for sessions without a recorded request')
    .option('--base-url <url>', 'endpoint base URL of the provider')
    .option('--script <file>', 'a scripted model: every turn of every session replays this JSON array of script steps')
    .option('--root <dir>', 'folder the tools work in (default: the current folder)')
    .option('--yes', 'approve every permission question (otherwise asks are denied: no one is at a terminal)')
    .option('--remote-approvals', 'permission questions wait for an answer through `ledgerloop serve` (its API and page) instead of being denied')
    .option('--max-steps <n>', 'most model steps per turn (turn budget)', positiveInteger)
    .option('--lease-ms <n>', 'lease length in database time (default 30000; renewed every third)', positiveInteger)
    .option('--idle-grace-ms <n>', 'release a session after this long without input (default 2000)', positiveInteger)
    .option('--poll-ms <n>', 'look for work at least this often, besides LISTEN/NOTIFY (default 1000)', positiveInteger)
    .option('--json', 'one JSON line per claim, input, release, lost lease and error')
    .action(async (flags: WorkerFlags) => {
      exit.code = await workerCommand(flags)
    })
}

/**
 * `ledgerloop worker --store postgres://…`: serves sessions until SIGTERM or SIGINT, then finishes (or after
 * the grace cancels) running turns, flushes and releases every session, and exits 0.
 */
export async function workerCommand(flags: WorkerFlags): Promise<number> {
  if (flags.store === undefined || !isPostgresStoreUrl(flags.store)) {
    throw new CliError('the worker needs a shared store: --store postgres://user@host:port/db', EXIT.usage)
  }
  if (flags.script !== undefined && flags.provider !== undefined) throw new CliError('--script replaces the model: it cannot be combined with --provider', EXIT.usage)
  if (flags.yes === true && flags.remoteApprovals === true) throw new CliError('--yes approves every question, --remote-approvals asks people: pass one of them', EXIT.usage)
  const config = resolveConfig({
    ...(flags.provider !== undefined ? { provider: flags.provider } : {}),
    ...(flags.model !== undefined ? { model: flags.model } : {}),
    ...(flags.baseUrl !== undefined ? { baseUrl: flags.baseUrl } : {}),
    ...(flags.root !== undefined ? { root: flags.root } : {}),
    ...(flags.maxSteps !== undefined ? { maxSteps: flags.maxSteps } : {}),
  })
  const route = workerRoute(config, flags)
  const root = resolve(flags.root ?? config.root)
  let store: PostgresStore
  try {
    store = await (await loadPostgresStoreModule()).openPostgresStoreFromUrl(flags.store, {
      ...(flags.leaseMs !== undefined ? { leaseMs: flags.leaseMs } : {}),
      poolSize: Math.max(10, (flags.concurrency ?? 4) + 4),
    })
  } catch (error) {
    if (error instanceof HarnessError) throw new CliError(`${error.message} (${error.code})`, error.code === 'INVALID_CONFIG' ? EXIT.usage : EXIT.failed)
    throw error
  }
  let harnessOptions: Omit<HarnessOptions, 'store'>
  try {
    harnessOptions = workerHarnessOptions(config, route, root, flags.yes === true ? 'yes' : flags.remoteApprovals === true ? store : 'deny')
  } catch (error) {
    await store.close()
    throw error
  }
  const stop = new AbortController()
  const onSignal = (): void => stop.abort()
  process.once('SIGTERM', onSignal)
  process.once('SIGINT', onSignal)
  const say = flags.json === true ? (event: WorkerEvent) => process.stdout.write(JSON.stringify(event) + '\n') : (event: WorkerEvent) => process.stdout.write(describe(event) + '\n')
  try {
    process.stdout.write(flags.json === true ? JSON.stringify({ type: 'started', owner: store.ownerId }) + '\n' : `worker ${store.ownerId} serving (${route.provider}/${route.model})\n`)
    const summary = await runWorker({
      ...harnessOptions,
      store,
      provider: route.provider,
      model: route.model,
      signal: stop.signal,
      onEvent: say,
      ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
      ...(flags.idleGraceMs !== undefined ? { idleGraceMs: flags.idleGraceMs } : {}),
      ...(flags.pollMs !== undefined ? { pollMs: flags.pollMs } : {}),
    })
    process.stdout.write(flags.json === true ? JSON.stringify({ type: 'stopped', ...summary }) + '\n' : `stopped: ${summary.claimed} claimed, ${summary.released} released, ${summary.leaseLost} leases lost, ${summary.errors} errors\n`)
    return EXIT.ok
  } finally {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    await store.close()
  }
}

function workerRoute(config: EffectiveConfig, flags: WorkerFlags): ModelRoute {
  if (flags.script !== undefined) {
    const { path, steps } = loadScript(flags.script)
    return { provider: SCRIPTED_PROVIDER, model: flags.model ?? 'scripted', adapter: scriptedAdapter({ script: turnScript(steps), recordRequests: false }), scriptFile: path }
  }
  const spec = providerSpec(config, config.provider)
  requireApiKey(config.provider, spec)
  const model = config.model
  if (model === undefined) throw new CliError(`no model for provider '${config.provider}': pass --model NAME`, EXIT.usage)
  return { provider: config.provider, model, adapter: providerAdapter(config.provider, spec, config.baseURL) }
}

// The same composition as the interactive CLI harness (tools on the root, retry, permissions, turn budget),
// over the worker's store; no one can answer an ask here, so asks are denied, unless --yes approves them or
// --remote-approvals stores them for `serve` to answer.
function workerHarnessOptions(config: EffectiveConfig, route: ModelRoute, root: string, asks: 'yes' | 'deny' | PostgresStore): Omit<HarnessOptions, 'store'> {
  try {
    return {
      adapters: [route.adapter],
      tools: builtinTools({ root, shell: config.shell, ...bashEnvOptions(config) }),
      plugins: [
        retryPlugin(config.retry),
        typeof asks === 'object'
          ? storeApprovalPlugin({ store: asks, rules: config.permissions })
          : permissionPlugin({ rules: config.permissions, ...(asks === 'yes' ? { ask: async () => 'yes' as const } : {}) }),
        turnBudgetPlugin({ maxSteps: config.maxSteps, ...(config.maxTokens !== undefined ? { maxTokens: config.maxTokens } : {}) }),
      ],
      system: CLI_SYSTEM_PROMPT,
    }
  } catch (error) {
    throw new CliError((error as Error).message, EXIT.usage)
  }
}

function describe(event: WorkerEvent): string {
  switch (event.type) {
    case 'claimed':
      return `claimed ${event.sessionId} (epoch ${event.epoch}${event.queued > 0 ? `, ${event.queued} queued` : ''})`
    case 'input':
      return `input ${event.sessionId}: ${event.kinds.join(', ')}`
    case 'released':
      return `released ${event.sessionId} (${event.status})`
    case 'lease-lost':
      return `lease lost ${event.sessionId} (${event.during}): ${event.message}`
    case 'error':
      return `error${event.sessionId !== undefined ? ` ${event.sessionId}` : ''}: ${event.message} (${event.code})`
  }
}
