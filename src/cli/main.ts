#!/usr/bin/env node
import { readFileSync } from 'node:fs'
import { Command, CommanderError } from 'commander'
import { HarnessError } from '../errors/harness-error.js'
import { UsageError } from '../app/usage-error.js'
import { CliError, EXIT } from './cli-error.js'
import { cliDocsPath } from './demo.js'
import { registerChat } from './commands/chat.js'
import { registerConfig } from './commands/config.js'
import { registerDiff } from './commands/diff.js'
import { registerFork } from './commands/fork.js'
import { registerInspect } from './commands/inspect.js'
import { registerReplay } from './commands/replay.js'
import { registerRerun } from './commands/rerun.js'
import { registerRewind } from './commands/rewind.js'
import { registerRun } from './commands/run.js'
import { registerSessions } from './commands/sessions.js'
import { registerTools } from './commands/tools.js'
import { registerVerify } from './commands/verify.js'
import { registerCompactCommand } from './commands/compact.js'
import { registerTraceCommand } from './commands/trace.js'
import { registerWorkerCommand } from './commands/worker.js'
import { registerServe } from './commands/serve.js'
import { registerAcp } from './commands/acp.js'
import { registerResume } from './commands/resume.js'

// HarnessError codes that mean "you asked for something that is not there or not valid": usage, not failure.
const USAGE_CODES = new Set(['SESSION_NOT_FOUND', 'INVALID_SESSION_ID', 'INVALID_CONFIG', 'INVALID_BOUNDARY', 'OPEN_TURN'])

function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
  } catch {
    return 'unknown'
  }
}

const MAIN_HELP = `
Examples:
  ledgerloop                                   start a chat (on a terminal)
  ledgerloop run "explain src/main.ts"         one turn, exit with its outcome
  ledgerloop run -c "and now the tests"        continue the most recent session
  echo "summarise README.md" | ledgerloop run --print
  ledgerloop sessions --search tests           find a session
  ledgerloop inspect 56af                      a session by id prefix: turns, steps, requests, cost
  ledgerloop verify 56af && ledgerloop replay 56af
  ledgerloop run --demo                        offline demo: a scripted model, no key

Environment:
  DEEPSEEK_API_KEY, ANTHROPIC_API_KEY, OPENAI_API_KEY   provider keys (never written anywhere)
  LEDGERLOOP_HOME             sessions, config.json and chat history (default ~/.ledgerloop)
  LEDGERLOOP_PROVIDER         default provider            LEDGERLOOP_MODEL      default model
  LEDGERLOOP_BASE_URL         endpoint base URL           LEDGERLOOP_STORE      default --store
  LEDGERLOOP_IDLE_TIMEOUT     idle timeout in seconds     LEDGERLOOP_RETRIES    retries per request
  LEDGERLOOP_REASONING_EFFORT reasoning effort            NO_COLOR              no colours

Docs: ${cliDocsPath()}. Exit codes: 0 completed, 1 failed, 2 usage, 130 Ctrl-C, 141 stdout closed, 143 SIGTERM.`

/** Builds the command tree; each action stores its exit code in `exit`. */
export function buildProgram(exit: { code: number }): Command {
  const program = new Command('ledgerloop')
    .description('A coding/ops agent whose every session can be inspected, verified, replayed and forked.')
    .version(version())
    .showHelpAfterError('(run ledgerloop help for usage)')
    .exitOverride()

  registerRun(program, exit)
  registerChat(program, exit)
  registerResume(program, exit)
  registerSessions(program, exit)
  registerInspect(program, exit)
  registerVerify(program, exit)
  registerReplay(program, exit)
  registerFork(program, exit)
  registerDiff(program, exit)
  registerRerun(program, exit)
  registerRewind(program, exit)
  registerTools(program, exit)
  registerCompactCommand(program, exit)
  registerTraceCommand(program, exit)
  registerWorkerCommand(program, exit)
  registerServe(program, exit)
  registerAcp(program, exit)
  registerConfig(program, exit)
  program.addHelpText('after', MAIN_HELP)


  return program
}

/** Runs the CLI with `argv` and resolves to the exit code. Never throws. */
export async function main(argv: readonly string[]): Promise<number> {
  const exit = { code: EXIT.ok as number }
  const program = buildProgram(exit)
  // `ledgerloop` alone: a person at a terminal wants to talk; anywhere else, the help.
  const args = argv.length === 0 && process.stdin.isTTY === true && process.stdout.isTTY === true ? ['chat'] : [...argv]
  try {
    await program.parseAsync(args, { from: 'user' })
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
    if (error instanceof UsageError) {
      // app/'s usage errors are written for the person at the terminal, like a CliError (exit 2).
      process.stderr.write(`ledgerloop: ${error.message}\n`)
      return EXIT.usage
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
// Let piped stdout drain before exiting (an exit right after a write can cut it off); a closed stdout has
// nothing left to drain.
if (process.stdout.destroyed || !process.stdout.writable) process.exit(code)
else process.stdout.write('', () => process.exit(code))
