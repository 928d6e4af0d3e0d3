import type { Command } from 'commander'
import { existsSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import type { SessionEvent } from '../../session/events.js'
import { LogGrammar } from '../../session/log-grammar.js'
import { verifySessionLog } from '../../session/verify.js'
import { CliError, EXIT } from '../cli-error.js'
import { openForReading } from '../read-only-store.js'
import { describeStoreSpec, refuseLiveSession } from '../store-spec.js'
import { addStoreOption } from './agent-options.js'
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

/** Every problem of a log read from a store (stores other than a JSONL folder refuse a damaged log on read). */
function verifyEvents(events: readonly SessionEvent[]): { problems: string[]; events: number; requests: number } {
  const problems = [...verifySessionLog(events).problems, ...reconstructionProblems(events)]
  return { problems, events: events.length, requests: loggedRequests(events).length }
}

/**
 * `ledgerloop verify ID|FILE [--json]`: exit 0 when everything holds, else 1 with one line per problem. A FILE is
 * any path with a slash or ending in `.jsonl`; an ID (or a unique prefix) is looked up in the `--store`. A session
 * another process is writing is reported as in use, not checked: its open turn is not a defect.
 */
export async function verifyCommand(target: string, flags: { json?: boolean; store?: string } = {}): Promise<number> {
  let where: string
  let result: { problems: string[]; events: number; requests: number }
  if (target.includes('/') || target.endsWith('.jsonl')) {
    where = resolve(target)
    if (!existsSync(where)) throw new CliError(`no file ${where}`, EXIT.usage)
    const id = basename(where, '.jsonl')
    refuseLiveSession({ kind: 'jsonl', dir: dirname(where) }, id, 'verify')
    result = verifyLogFile(where)
  } else {
    const { spec, store, id } = await openForReading(flags.store, target)
    try {
      refuseLiveSession(spec, id, 'verify')
      if (spec.kind === 'jsonl') {
        // Read line by line, so every problem of a damaged file is listed (the store stops at the first).
        where = join(spec.dir, `${id}.jsonl`)
        result = verifyLogFile(where)
      } else {
        where = `${describeStoreSpec(spec)} session ${id}`
        result = verifyEvents((await store.read(id)).events)
      }
    } finally {
      await store.close()
    }
  }
  const { problems, events, requests } = result
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify({ ok: problems.length === 0, log: where, events, requests, problems }, null, 2)}\n`)
    return problems.length === 0 ? EXIT.ok : EXIT.failed
  }
  const style = styleFor(process.stdout)
  if (problems.length === 0) {
    process.stdout.write(`${style.green('ok')} ${where}: ${events} events, ${requests} request${requests === 1 ? '' : 's'} rebuilt from the log\n`)
    return EXIT.ok
  }
  process.stdout.write(`${style.red(`${problems.length} problem${problems.length === 1 ? '' : 's'}`)} in ${where}:\n`)
  for (const problem of problems) process.stdout.write(`  ${problem}\n`)
  return EXIT.failed
}

/** Registers `verify`. */
export function registerVerify(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('verify').description('check the log grammar and rebuild every request from the log (exit 1 listing each problem)'))
    .argument('<id-or-file>', 'a session id (or a unique prefix), or the path of a session .jsonl file')
    .option('--json', '{ok, log, events, requests, problems}')
    .action(async (target: string, flags: { json?: boolean; store?: string }) => {
      exit.code = await verifyCommand(target, flags)
    })
}
