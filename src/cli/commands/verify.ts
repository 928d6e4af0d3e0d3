import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { LogGrammar } from '../../session/log-grammar.js'
import { verifySessionLog } from '../../session/verify.js'
import { CliError, EXIT } from '../cli-error.js'
import { sessionsDir } from '../cli-harness.js'
import { resolveConfig } from '../config.js'
import { reconstructionProblems, loggedRequests } from '../../views/request-reconstruction.js'
import { readLenientLog, seqProblems } from '../session-log-file.js'
import { styleFor } from '../style.js'

/** Every problem of a session file: unreadable lines, seq gaps, grammar, surface, and request reconstruction. */
export function verifyLogFile(path: string): { problems: string[]; events: number; requests: number } {
  const log = readLenientLog(path)
  const problems = [...log.problems]
  const gaps = seqProblems(log.events)
  if (gaps.length === 0) {
    problems.push(...verifySessionLog(log.events).problems)
    problems.push(...reconstructionProblems(log.events))
  } else {
    // Folds index events by seq, so they cannot run over a log with holes; the grammar still can.
    problems.push(...gaps)
    const grammar = new LogGrammar()
    for (const event of log.events) {
      const problem = grammar.check(event)
      if (problem !== undefined) problems.push(problem)
    }
    const end = grammar.end()
    if (end !== undefined) problems.push(end)
  }
  return { problems, events: log.events.length, requests: loggedRequests(log.events).length }
}

/** A session id, or a path to a session file (anything with a slash or ending in .jsonl). */
export function sessionFileOf(target: string): string {
  if (target.includes('/') || target.endsWith('.jsonl')) {
    const path = resolve(target)
    if (!existsSync(path)) throw new CliError(`no file ${path}`, EXIT.usage)
    return path
  }
  const path = join(sessionsDir(resolveConfig()), `${target}.jsonl`)
  if (!existsSync(path)) throw new CliError(`no session '${target}' (no file ${path}); ledgerloop sessions lists them`, EXIT.usage)
  return path
}

/** `ledgerloop verify ID|FILE`: exit 0 when everything holds, else 1 with one line per problem. */
export async function verifyCommand(target: string): Promise<number> {
  const path = sessionFileOf(target)
  const { problems, events, requests } = verifyLogFile(path)
  const style = styleFor(process.stdout)
  if (problems.length === 0) {
    process.stdout.write(`${style.green('ok')} ${path}: ${events} events, ${requests} request${requests === 1 ? '' : 's'} rebuilt from the log\n`)
    return EXIT.ok
  }
  process.stdout.write(`${style.red(`${problems.length} problem${problems.length === 1 ? '' : 's'}`)} in ${path}:\n`)
  for (const problem of problems) process.stdout.write(`  ${problem}\n`)
  return EXIT.failed
}
