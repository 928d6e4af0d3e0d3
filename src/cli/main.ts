#!/usr/bin/env node
import { readFileSync } from 'node:fs'
import { Command, CommanderError } from 'commander'
import { HarnessError } from '../errors/harness-error.js'
import { CliError, EXIT } from './cli-error.js'
import { addAgentOptions, nonNegativeInteger, type AgentFlags } from './commands/agent-options.js'
import { chatCommand } from './commands/chat.js'
import { configCommand } from './commands/config.js'
import { forkCommand } from './commands/fork.js'
import { inspectCommand } from './commands/inspect.js'
import { replayCommand } from './commands/replay.js'
import { runCommand } from './commands/run.js'
import { sessionsCommand } from './commands/sessions.js'
import { addServeOptions, serveCommand, type ServeFlags } from './commands/serve.js'
import { verifyCommand } from './commands/verify.js'

// HarnessError codes that mean "you asked for something that is not there or not valid": usage, not failure.
const USAGE_CODES = new Set(['SESSION_NOT_FOUND', 'INVALID_SESSION_ID', 'INVALID_CONFIG', 'INVALID_BOUNDARY', 'OPEN_TURN'])

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return 'unknown'
  }
}

/** Builds the command tree; each action stores its exit code in `exit`. */
export function buildProgram(exit: { code: number }): Command {
  const program = new Command('ledgerloop')
    .description('A coding/ops agent whose every session can be inspected, verified, replayed and forked.')
    .version(version())
    .showHelpAfterError('(run ledgerloop help for usage)')
    .exitOverride()

  addAgentOptions(program.command('run').description('run one turn for PROMPT and exit with its outcome').argument('<prompt...>', 'what to ask'))
    .action(async (prompt: string[], flags: AgentFlags) => {
      exit.code = await runCommand(prompt.join(' '), flags)
    })

  addAgentOptions(program.command('chat').description('an interactive conversation (type /help inside)'))
    .action(async (flags: AgentFlags) => {
      exit.code = await chatCommand(flags)
    })

  program
    .command('sessions')
    .description('list stored sessions, newest first')
    .option('--json', 'an array of {id, title, updatedAt, turns, lastReason}')
    .action(async (flags: { json?: boolean }) => {
      exit.code = await sessionsCommand(flags)
    })

  program
    .command('inspect')
    .description('turn → step → request/tool tree of a session, with timings, usage and reasons')
    .argument('<id>', 'session id')
    .option('--json', 'the tree as JSON')
    .action(async (id: string, flags: { json?: boolean }) => {
      exit.code = await inspectCommand(id, flags)
    })

  program
    .command('verify')
    .description('check the log grammar and rebuild every request from the log (exit 1 listing each problem)')
    .argument('<id-or-file>', 'a session id, or the path of a session .jsonl file')
    .action(async (target: string) => {
      exit.code = await verifyCommand(target)
    })

  program
    .command('replay')
    .description('re-run the recorded model outputs through a fresh loop and compare every request')
    .argument('<id>', 'session id')
    .action(async (id: string) => {
      exit.code = await replayCommand(id)
    })

  program
    .command('fork')
    .description('copy a session up to a point into a new session; prints the new id')
    .argument('<id>', 'session id')
    .option('--at <seq>', 'seq of the last event to keep (default: the end)', nonNegativeInteger)
    .action(async (id: string, flags: { at?: number }) => {
      exit.code = await forkCommand(id, flags)
    })

  program
    .command('config')
    .description('show the effective configuration (secrets masked) and where each value came from')
    .option('--json', 'as JSON')
    .action(async (flags: { json?: boolean }) => {
      exit.code = await configCommand(flags)
    })

  addServeOptions(program.command('serve').description('the HTTP API and live web page over the session store (prints the page URL with its token)'))
    .action(async (flags: ServeFlags) => {
      exit.code = await serveCommand(flags)
    })

  return program
}

/** Runs the CLI with `argv` and resolves to the exit code. Never throws. */
export async function main(argv: readonly string[]): Promise<number> {
  const exit = { code: EXIT.ok as number }
  const program = buildProgram(exit)
  try {
    await program.parseAsync([...argv], { from: 'user' })
    return exit.code
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and version exit 0; every parse error is a usage error.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage
    }
    if (error instanceof CliError) {
      process.stderr.write(`ledgerloop: ${error.message}\n`)
      return error.exitCode
    }
    if (error instanceof HarnessError) {
      process.stderr.write(`ledgerloop: ${error.message} (${error.code})\n`)
      return USAGE_CODES.has(error.code) ? EXIT.usage : EXIT.failed
    }
    process.stderr.write(`ledgerloop: unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    return EXIT.failed
  }
}

const code = await main(process.argv.slice(2))
// Let piped stdout drain before exiting (an exit right after a write can cut it off).
process.stdout.write('', () => process.exit(code))
