/**
 * The long crash run: `npm run crash -- --kills 2000 [--seed 42] [--sessions 3] [--max-run-ms 250] [--store jsonl|sqlite]`.
 * Same checks as test/store/crash.test.ts, with more kills; `--store sqlite` runs every child on one SQLite database.
 */
import { parseArgs } from 'node:util'
import { runCrashTest } from '../test/store/crash-runner.js'

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '2000' },
    seed: { type: 'string', default: '42' },
    sessions: { type: 'string', default: '3' },
    'max-run-ms': { type: 'string', default: '250' },
    store: { type: 'string', default: 'jsonl' },
  },
})
if (values.store !== 'jsonl' && values.store !== 'sqlite') throw new Error(`--store ${values.store}: jsonl or sqlite`)

const report = await runCrashTest({
  kills: Number(values.kills),
  seed: Number(values.seed),
  sessions: Number(values.sessions),
  maxRunMs: Number(values['max-run-ms']),
  store: values.store,
  log: (line) => console.log(line),
})
console.log(JSON.stringify({ ...report, killToContinuationMs: undefined }, null, 2))
// The runner stops at the first flushed event missing after a kill or tool call run twice, so a finished run
// lost nothing and ran no body twice.
const sorted = [...report.killToContinuationMs].sort((a, b) => a - b)
const quantile = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
console.log(
  `continuations: ${report.continuations} (kill → first request median ${quantile(0.5)} ms, p99 ${quantile(0.99)} ms over ${sorted.length}), ` +
    `${report.promptsAnswered} prompts answered once by a completed turn, 0 swallowed, 0 left interrupted, ${report.restoredInputs} restored inputs, ${report.safeReruns} safe re-runs`,
)
console.log(
  `${values.store}: ${report.kills} kills, ${report.resumedTurns} turns resumed to completion (${report.repairedTurns} repaired), ` +
    `${report.flushReports} reported flushes checked, lost 0, double runs 0 of ${report.toolExecutions} tool runs, ${(report.elapsedMs / 1000).toFixed(1)} s`,
)
