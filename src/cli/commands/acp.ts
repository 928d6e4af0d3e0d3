import { readFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import type { Command } from 'commander'
import { ndJsonStream } from '@agentclientprotocol/sdk'
import { startAcpAgent } from '../../acp/acp-agent.js'
import { cliTelemetry, otlpEndpoint } from '../../app/telemetry-setup.js'
import { CliError, EXIT } from '../cli-error.js'
import { EXIT_TERMINATED } from '../run-signals.js'
import { addAgentOptions, ALL_AGENT_OPTION_NAMES, prepareRun, SESSION_OPTION_NAMES, type AgentFlags } from './agent-options.js'
import { removeScratch } from './run.js'

/** Registers `acp`. */
export function registerAcp(program: Command, exit: { code: number }): void {
  addAgentOptions(
    program.command('acp').description('an Agent Client Protocol agent over stdio, for editors such as Zed and JetBrains IDEs (docs/acp.md)'),
    // The editor owns the process: on SIGTERM its turns are cancelled at once (docs/acp.md), so no grace.
    ALL_AGENT_OPTION_NAMES.filter((name) => !SESSION_OPTION_NAMES.includes(name) && name !== 'shutdownGraceMs'),
  )
    .addHelpText('after', '\nThe editor starts this command and talks JSON-RPC on its stdin and stdout; logs go to stderr.\nExamples:\n  ledgerloop acp\n  ledgerloop acp --provider anthropic --model claude-sonnet-4-5\n  ledgerloop acp --script examples/scripts/demo.json      offline, no key')
    .action(async (flags: AgentFlags) => {
      exit.code = await acpCommand(flags)
    })
}

/**
 * `ledgerloop acp`: serves ACP on stdin/stdout until the client closes stdin (exit 0) or SIGTERM/SIGINT (the
 * running turns are cancelled and every log flushed first). Nothing but JSON-RPC is written to stdout: anything
 * else that writes there (a library, a stray notice) is sent to stderr instead.
 */
export async function acpCommand(flags: AgentFlags): Promise<number> {
  if (process.stdin.isTTY === true) throw new CliError('ledgerloop acp talks JSON-RPC with an editor over stdin/stdout: configure it as an agent server in the editor (see docs/acp.md)', EXIT.usage)
  const output = reserveStdout()
  const prepared = await prepareRun(flags)
  const url = otlpEndpoint(flags.otlp, process.env)
  const telemetry = url !== undefined ? cliTelemetry(url, process.env) : undefined
  const warn = (line: string): void => void process.stderr.write(`${line}\n`)
  const input = Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>
  const agent = startAcpAgent(
    {
      config: prepared.config,
      route: prepared.route,
      store: prepared.store,
      sandbox: prepared.sandbox,
      network: prepared.network,
      yes: flags.yes === true,
      plugins: telemetry !== undefined ? [telemetry.plugin] : [],
      warn,
      env: process.env,
      defaultRoot: prepared.root,
      version: packageVersion(),
    },
    ndJsonStream(output, input),
  )
  let code: number = EXIT.ok
  const stop = (signal: NodeJS.Signals): void => {
    code = signal === 'SIGTERM' ? EXIT_TERMINATED : EXIT.interrupted
    // Logged as `run` logs them: a SIGTERM by its name, a Ctrl-C as the user's cancel.
    void agent.close(signal === 'SIGTERM' ? { kind: 'hook', reason: 'SIGTERM' } : { kind: 'user' })
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  try {
    await agent.finished
  } finally {
    process.off('SIGTERM', stop)
    process.off('SIGINT', stop)
    try {
      await prepared.store.close()
    } finally {
      await telemetry?.shutdown()
      if (prepared.scratchRoot) removeScratch(prepared.root)
    }
  }
  return code
}

/**
 * Takes stdout for JSON-RPC alone: the returned stream writes to it, and `process.stdout.write` from then on
 * goes to stderr, so no other output can corrupt the protocol stream.
 */
function reserveStdout(): WritableStream<Uint8Array> {
  const stdout = process.stdout
  const write = stdout.write.bind(stdout) as (chunk: Uint8Array, done: (error?: Error | null) => void) => boolean
  const toStderr = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
  stdout.write = toStderr
  return new WritableStream<Uint8Array>({
    write: (chunk) => new Promise<void>((done, fail) => void write(chunk, (error) => (error ? fail(error) : done()))),
  })
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return 'unknown'
  }
}
