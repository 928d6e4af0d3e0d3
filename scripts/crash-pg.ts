/**
 * The long takeover run: `npm run crash:pg -- --kills 200 [--stalls 20] [--seed 12] [--sessions 30] [--workers 3]
 * [--lease-ms 2000]`. Same scenario and checks as test/worker/takeover.test.ts, with a worker SIGKILLed mid-turn
 * (and replaced) per kill, some SIGSTOPped past their lease, and new followups sent between disruptions.
 * Needs PostgreSQL at 127.0.0.1:5432 (or LEDGERLOOP_TEST_PG_URL); creates and drops a scratch database.
 */
import { parseArgs } from 'node:util'
import { runTakeover } from '../test/worker/takeover-runner.js'

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '200' },
    stalls: { type: 'string' },
    seed: { type: 'string', default: '12' },
    sessions: { type: 'string', default: '30' },
    workers: { type: 'string', default: '3' },
    'lease-ms': { type: 'string', default: '2000' },
  },
})

const kills = Number(values.kills)
const report = await runTakeover({
  kills,
  stalls: values.stalls !== undefined ? Number(values.stalls) : Math.max(1, Math.floor(kills / 10)),
  stallEvery: 5,
  seed: Number(values.seed),
  sessions: Number(values.sessions),
  workers: Number(values.workers),
  leaseMs: Number(values['lease-ms']),
  replace: true,
  log: (line) => console.log(line),
})
console.log(JSON.stringify({ ...report, killToContinuationMs: undefined, killToEachContinuationMs: undefined }, null, 2))
const sorted = [...report.killToContinuationMs].sort((a, b) => a - b)
const quantile = (q: number, of = sorted): number => of[Math.min(of.length - 1, Math.floor(q * of.length))] ?? 0
const each = [...report.killToEachContinuationMs].sort((a, b) => a - b)
console.log(
  `${report.kills} kills, ${report.stalls} stalls: ${report.prompts} prompts sent, each answered once by a completed turn ` +
    `(${report.problems.length} problems); ${report.interruptedTurns} turns interrupted, ${report.continuations} continuations; ` +
    `kill → continuation's first request median ${quantile(0.5)} ms, p99 ${quantile(0.99)} ms over ${sorted.length} kills (the lease is ${values['lease-ms']} ms); ` +
    `per session cut off: median ${quantile(0.5, each)} ms, p99 ${quantile(0.99, each)} ms over ${each.length}`,
)
process.exitCode = report.problems.length === 0 && report.leaseLostOnFlush > 0 ? 0 : 1
