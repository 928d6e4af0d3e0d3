import type { Command } from 'commander'
import { compose } from '../../app/compose.js'
import { resolveConfig } from '../../app/config.js'
import { startHarnessExtensions } from '../../app/harness-extensions.js'
import { projectInstructions } from '../../app/project-instructions.js'
import { checkRouteFlags, modelRoute } from '../../app/providers.js'
import { isPostgresStoreUrl, loadPostgresStoreModule } from '../../app/store-spec.js'
import { UsageError } from '../../app/usage-error.js'
import { HarnessError } from '../../errors/harness-error.js'
import type { PostgresStore } from '../../store/postgres/postgres-store.js'
import { runWorker } from '../../worker/run-worker.js'
import { storeApprovalPlugin } from '../../worker/store-approvals.js'
import type { WorkerEvent } from '../../worker/session-task.js'
import { turnScript } from '../../worker/turn-script.js'
import { CliError, EXIT } from '../cli-error.js'
import { addAgentOptions, configFlagsOf, ALL_AGENT_OPTION_NAMES, positiveInteger, SESSION_OPTION_NAMES, toolConfinement, type AgentFlags, type AgentOptionName } from './agent-options.js'

/** Options of `ledgerloop worker`: the agent options it honours (declared once, in agent-options.ts) plus its own. */
export interface WorkerFlags extends Omit<AgentFlags, 'session' | 'continue' | 'print' | 'verbose' | 'attach' | 'json'> {
  readonly concurrency?: number
  readonly remoteApprovals?: boolean
  readonly leaseMs?: number
  readonly idleGraceMs?: number
  readonly pollMs?: number
  readonly json?: boolean
}

/** Registers `ledgerloop worker` on the program; its action stores the exit code in `exit`. */
export function registerWorkerCommand(program: Command, exit: { code: number }): void {
  addAgentOptions(
    program.command('worker').description('serve sessions from a PostgreSQL store: claim those with input, run their turns, take over dead workers\' sessions'),
    workerAgentOptions(),
  )
    .option('--concurrency <n>', 'sessions served at once (default 4)', positiveInteger)
    .option('--remote-approvals', 'permission questions wait for an answer through `ledgerloop serve` (its API and page) instead of being denied')
    .option('--lease-ms <n>', 'lease length in database time (default 30000; renewed every third)', positiveInteger)
    .option('--idle-grace-ms <n>', 'release a session after this long without input (default 2000)', positiveInteger)
    .option('--poll-ms <n>', 'look for work at least this often, besides LISTEN/NOTIFY (default 1000)', positiveInteger)
    .option('--json', 'one JSON line per claim, input, release, lost lease and error')
    .action(async (flags: WorkerFlags) => {
      exit.code = await workerCommand(flags)
    })
}

// Every agent option but those that pick one session or shape one terminal's output: a worker serves many
// sessions and has no terminal (`--json` is its own: one line per worker event).
function workerAgentOptions(): AgentOptionName[] {
  return ALL_AGENT_OPTION_NAMES.filter((name) => !SESSION_OPTION_NAMES.includes(name))
}

/**
 * `ledgerloop worker --store postgres://…`: serves sessions until SIGTERM or SIGINT, then finishes (or after
 * the grace cancels) running turns, flushes and releases every session, and exits 0. Its sessions are composed
 * as `run` composes one (app/compose.ts): same tools, plugins and request settings.
 */
export async function workerCommand(flags: WorkerFlags): Promise<number> {
  const config = resolveConfig(configFlagsOf(flags))
  if (!isPostgresStoreUrl(config.store)) {
    throw new CliError('the worker needs a shared store: --store postgres://user@host:port/db', EXIT.usage)
  }
  checkRouteFlags(flags)
  if (flags.yes === true && flags.remoteApprovals === true) throw new CliError('--yes approves every question, --remote-approvals asks people: pass one of them', EXIT.usage)
  // A worker's script replays from its start in every turn of every session (worker/turn-script.ts), unlike
  // `run --script`, whose one session walks through it once; a real route is chosen as `run` chooses one.
  const route = modelRoute(config, flags, { scriptPlay: { script: turnScript, recordRequests: false } })
  const root = config.root
  const instructions = projectInstructions(config.system, root, config.projectFile)
  let store: PostgresStore
  try {
    store = await (await loadPostgresStoreModule()).openPostgresStoreFromUrl(config.store, {
      ...(flags.leaseMs !== undefined ? { leaseMs: flags.leaseMs } : {}),
      poolSize: Math.max(10, (flags.concurrency ?? 4) + 4),
    })
  } catch (error) {
    if (error instanceof HarnessError && !(error instanceof UsageError)) throw new CliError(`${error.message} (${error.code})`, error.code === 'INVALID_CONFIG' ? EXIT.usage : EXIT.failed)
    throw error
  }
  let composition
  try {
    // No one can answer an ask here, so asks are denied, unless --yes approves them or --remote-approvals
    // stores them for `serve` to answer.
    composition = compose({
      config,
      route,
      root,
      ...toolConfinement(flags),
      approvals: flags.yes === true ? { kind: 'yes' } : flags.remoteApprovals === true ? { kind: 'store', plugin: storeApprovalPlugin({ store, rules: config.permissions }) } : { kind: 'deny' },
      instructions: instructions.text,
      extensions: await startHarnessExtensions(config, flags),
    })
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
      ...composition.options,
      store,
      provider: route.provider,
      model: route.model,
      signal: stop.signal,
      onEvent: say,
      ...(flags.concurrency !== undefined ? { concurrency: flags.concurrency } : {}),
      ...(flags.idleGraceMs !== undefined ? { idleGraceMs: flags.idleGraceMs } : {}),
      ...(flags.shutdownGraceMs !== undefined ? { shutdownGraceMs: flags.shutdownGraceMs } : {}),
      ...(flags.pollMs !== undefined ? { pollMs: flags.pollMs } : {}),
    })
    process.stdout.write(flags.json === true ? JSON.stringify({ type: 'stopped', ...summary }) + '\n' : `stopped: ${summary.claimed} claimed, ${summary.released} released, ${summary.leaseLost} leases lost, ${summary.errors} errors\n`)
    return EXIT.ok
  } finally {
    process.off('SIGTERM', onSignal)
    process.off('SIGINT', onSignal)
    try {
      await store.close()
    } finally {
      await composition.close()
    }
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
    case 'quarantined':
      return `quarantined ${event.sessionId}: ${event.message}`
    case 'lease-lost':
      return `lease lost ${event.sessionId} (${event.during}): ${event.message}`
    case 'error':
      return `error${event.sessionId !== undefined ? ` ${event.sessionId}` : ''}: ${event.message} (${event.code})`
  }
}
