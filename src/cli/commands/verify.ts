import type { Command } from 'commander'
import { existsSync, readFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import type { SessionEvent } from '../../session/events.js'
import { faithfulnessProblems, verifySessionLog } from '../../session/verify.js'
import { committedEvidence } from '../../store/jsonl/jsonl-store.js'
import { LogJudgement } from '../../store/log-judgement.js'
import { judgeSessionFile } from '../../store/session-file.js'
import { verifyResumeCheckpoint } from '../../store/resume-verify.js'
import { SessionIndex } from '../../store/jsonl/session-index.js'
import { CliError, EXIT } from '../cli-error.js'
import { openForReading } from '../read-only-store.js'
import { describeStoreSpec, refuseLiveSession } from '../../app/store-spec.js'
import { addStoreOption } from './agent-options.js'
import { reconstructionProblems, loggedRequests } from '../../views/request-reconstruction.js'
import { styleFor } from '../style.js'

/** What `verify` found in a log: every problem, what loading would repair, and what it rebuilt. */
export interface VerifiedLog {
  readonly problems: string[]
  /** What loading repairs rather than refuses (a torn tail, a turn a crash left open): not problems. */
  readonly repairs: string[]
  readonly events: number
  readonly requests: number
}

/**
 * Every problem of a session file: the store's own judgement of it (`judgeSessionFile`: header, lines, seqs,
 * envelope, surface, grammar, citations, and what the session index says was committed), each problem listed
 * rather than the first thrown; then, on a log without seq gaps, what only `verify` checks: every message
 * against the chunks it cites, and every request rebuilt from the log; and the resume checkpoint beside it.
 */
export function verifyLogFile(path: string): VerifiedLog {
  const id = basename(path, '.jsonl')
  const judgement = new LogJudgement('list')
  // The index beside the file, when there is one, witnesses what was committed (as it does for loading).
  const committed = committedEvidence(new SessionIndex(dirname(path), () => undefined), id)
  const bytes = readFileSync(path)
  const log = judgeSessionFile(bytes, path, id, judgement, committed !== undefined ? { committed } : {})
  const problems = [...judgement.problems]
  const repairs = [...judgement.repairs]
  // Folds index events by seq, so they cannot run over a log with holes (the judgement named the holes).
  if (log.contiguous) problems.push(...faithfulnessProblems(log.events), ...reconstructionProblems(log.events))
  // The resume checkpoint an open would trust must fold like the log; one it would ignore is rewritten then.
  const checkpoint = verifyResumeCheckpoint(path, id, bytes)
  if (checkpoint.problem !== undefined) problems.push(checkpoint.problem)
  if (checkpoint.note !== undefined) repairs.push(checkpoint.note)
  return { problems, repairs, events: log.events.length, requests: loggedRequests(log.events).length }
}

/** Every problem of a log read from a store (stores other than a JSONL folder refuse a damaged log on read). */
function verifyEvents(events: readonly SessionEvent[]): VerifiedLog {
  const problems = [...verifySessionLog(events).problems, ...reconstructionProblems(events)]
  return { problems, repairs: [], events: events.length, requests: loggedRequests(events).length }
}

/**
 * `ledgerloop verify ID|FILE [--json]`: exit 0 when everything holds, else 1 with one line per problem. A FILE is
 * any path with a slash or ending in `.jsonl`; an ID (or a unique prefix) is looked up in the `--store`. A session
 * another process is writing is reported as in use, not checked: its open turn is not a defect.
 */
export async function verifyCommand(target: string, flags: { json?: boolean; store?: string } = {}): Promise<number> {
  let where: string
  let result: VerifiedLog
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
  const { problems, repairs, events, requests } = result
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify({ ok: problems.length === 0, log: where, events, requests, problems, repairs }, null, 2)}\n`)
    return problems.length === 0 ? EXIT.ok : EXIT.failed
  }
  const style = styleFor(process.stdout)
  // Repairs are what the next resume does by itself (a crash's traces): said, but not failures.
  const repaired = repairs.map((r) => `  ${style.yellow('repaired on resume:')} ${r}\n`).join('')
  if (problems.length === 0) {
    process.stdout.write(`${style.green('ok')} ${where}: ${events} events, ${requests} request${requests === 1 ? '' : 's'} rebuilt from the log\n${repaired}`)
    return EXIT.ok
  }
  process.stdout.write(`${style.red(`${problems.length} problem${problems.length === 1 ? '' : 's'}`)} in ${where}:\n`)
  // No "repaired on resume" here: a log with problems is refused, not repaired.
  for (const problem of problems) process.stdout.write(`  ${problem}\n`)
  return EXIT.failed
}

/** Registers `verify`. */
export function registerVerify(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('verify').description('check the log grammar and rebuild every request from the log (exit 1 listing each problem)'))
    .argument('<id-or-file>', 'a session id (or a unique prefix), or the path of a session .jsonl file')
    .option('--json', '{ok, log, events, requests, problems, repairs}')
    .action(async (target: string, flags: { json?: boolean; store?: string }) => {
      exit.code = await verifyCommand(target, flags)
    })
}
