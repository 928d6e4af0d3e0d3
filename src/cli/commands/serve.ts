import { DEFAULT_SHUTDOWN_GRACE_MS } from '../run-signals.js'
import { InvalidArgumentError, type Command } from 'commander'
import { compose, type Composition } from '../../app/compose.js'
import { startHarnessExtensions } from '../../app/harness-extensions.js'
import { createLedgerServer, type LedgerServer } from '../../server/server.js'
import { isLoopbackHost } from '../../server/access-guard.js'
import { CliError, EXIT } from '../cli-error.js'
import { cliPricing, storeSpecOf } from '../cli-harness.js'
import { resolveConfig } from '../../app/config.js'
import { addAgentOptions, configFlagsOf, prepareRun } from './agent-options.js'
import { startFleetServer } from './serve-fleet.js'
import { removeScratch } from './run.js'
import type { ServeFlags } from './serve-flags.js'

export type { ServeFlags }

/** Agent options that pick one session or shape one terminal's output: `serve` refuses them. */
const REFUSED_BY_SERVE: readonly string[] = ['session', 'continue', 'json', 'print', 'raw', 'attach', 'force']

/** Adds the options of `serve` (the agent options of `run`, minus the per-run ones, plus host, port, token). */
export function addServeOptions(command: Command): Command {
  addAgentOptions(command)
  // Still parsed, so passing one gets the message saying why it does not apply; but help lists only what works.
  for (const option of command.options) if (REFUSED_BY_SERVE.includes(option.attributeName())) option.hideHelp()
  return command
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on (0: any free port)', port, 4141)
    .option('--token <token>', 'the access token (default: a random one, printed once in the page URL)')
    .option('--unsafe-no-token', 'no token at all: anyone who can reach the port drives the agents (loopback hosts only)')
    .option('--allow-origin <origin>', 'also accept browser requests from this origin (a reverse proxy\'s public URL); repeatable', collect)
}

/** Registers `serve`. */
export function registerServe(program: Command, exit: { code: number }): void {
  addServeOptions(program.command('serve').description('the HTTP API and live web page over the session store (prints the page URL with its token)')).action(async (flags: ServeFlags) => {
    exit.code = await serveCommand(flags)
  })
}

function port(value: string): number {
  const n = Number(value)
  if (!/^\d+$/.test(value) || n > 65535) throw new InvalidArgumentError('expected a port number 0-65535')
  return n
}

function collect(value: string, previous: string[] | undefined): string[] {
  try {
    const origin = new URL(value).origin
    return [...(previous ?? []), origin]
  } catch {
    throw new InvalidArgumentError(`expected an origin like https://agents.example.com, got '${value}'`)
  }
}

/**
 * `ledgerloop serve`: the HTTP API and web page over the session store, running sessions in this process (JSONL,
 * SQLite), or only writing the inbox and following the log while `ledgerloop worker` processes run them
 * (`--store postgres://…`). Prints the page URL (with the token) once, then serves until SIGINT/SIGTERM.
 */
export async function serveCommand(flags: ServeFlags): Promise<number> {
  if (flags.session !== undefined) throw new CliError('serve runs every session of the store: --session does not apply (open the session in the page)', EXIT.usage)
  if (flags.json === true) throw new CliError('serve has no --json output: the API is JSON (GET /api/sessions/ID/events)', EXIT.usage)
  if (flags.continue === true || flags.print === true || flags.raw === true || flags.attach === true) {
    throw new CliError('-c, --print, --raw and --attach are options of run and chat; serve runs every session of the store from the page and the API', EXIT.usage)
  }
  if (flags.unsafeNoToken === true && flags.token !== undefined) throw new CliError('--token and --unsafe-no-token contradict each other', EXIT.usage)
  if (flags.unsafeNoToken === true && !isLoopbackHost(flags.host)) {
    throw new CliError(`--unsafe-no-token is only allowed on a loopback host (127.0.0.1, localhost, ::1), not ${flags.host}`, EXIT.usage)
  }
  const config = resolveConfig(configFlagsOf(flags))
  const spec = storeSpecOf(config)
  if (spec.kind === 'postgres') {
    const fleet = await startFleetServer(flags, config, spec.url)
    return serveUntilStopped(fleet.server, fleet.banner, fleet.close, flags)
  }
  const prepared = await prepareRun(flags)
  const { route, root } = prepared
  const store = prepared.store
  let composition: Composition
  try {
    // The composition of `run` (app/compose.ts); the server's session host asks permission questions through
    // its API, and --yes (the person starting the server) approves every tool call in advance.
    composition = compose({
      config: prepared.config,
      route,
      root,
      sandbox: prepared.sandbox,
      network: prepared.network,
      approvals: { kind: 'host', yes: flags.yes === true },
      instructions: prepared.instructions.text,
      extensions: await startHarnessExtensions(prepared.config, flags),
    })
  } catch (error) {
    await store.close()
    throw error
  }
  const server = await createLedgerServer({
    store,
    agents: {
      ...composition.options,
      defaults: { provider: route.provider, model: route.model },
      cwd: root,
      ...(composition.hostPermissions !== undefined ? { permissions: composition.hostPermissions } : {}),
    },
    pricing: cliPricing(prepared.config),
    token: flags.unsafeNoToken === true ? false : (flags.token ?? undefined),
    host: flags.host,
    port: flags.port,
    ...(flags.allowOrigin !== undefined ? { allowedOrigins: flags.allowOrigin } : {}),
  })
  const model = route.scriptFile !== undefined ? `scripted model from ${route.scriptFile}` : `${route.provider} · ${route.model}`
  const close = async (): Promise<void> => {
    try {
      await server.close()
    } finally {
      await composition.close()
    }
  }
  const code = await serveUntilStopped(server, `ledgerloop serve · ${model} · tools in ${root}`, close, flags)
  if (prepared.scratchRoot) removeScratch(root)
  return code
}

/** Listens, prints the banner and the page URL, serves until SIGINT/SIGTERM, then closes. */
async function serveUntilStopped(server: LedgerServer, banner: string, close: () => Promise<void>, flags: ServeFlags): Promise<number> {
  try {
    await server.listen()
  } catch (error) {
    await close()
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE') throw new CliError(`port ${flags.port} on ${flags.host} is in use (pick another with --port)`, EXIT.usage)
    throw error
  }
  process.stdout.write(`${banner}\n`)
  process.stdout.write(`open ${server.pageUrl()}\n`)
  await new Promise<void>((done) => {
    const stop = (): void => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      done()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
  const graceMs = flags.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS
  process.stdout.write(`stopping: no new input; running turns may finish for ${graceMs} ms, then they are cut off (the next resume continues them)\n`)
  await server.drain(graceMs)
  await close()
  return EXIT.ok
}
