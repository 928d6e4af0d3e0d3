/**
 * The long crash run: `npm run crash -- --kills 2000 [--seed 42] [--sessions 3] [--max-run-ms 250]`.
 * Same checks as test/store/crash.test.ts, with more kills.
 */
import { parseArgs } from 'node:util'
import { runCrashTest } from '../test/store/crash-runner.js'

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '2000' },
    seed: { type: 'string', default: '42' },
    sessions: { type: 'string', default: '3' },
    'max-run-ms': { type: 'string', default: '250' },
  },
})

const report = await runCrashTest({
  kills: Number(values.kills),
  seed: Number(values.seed),
  sessions: Number(values.sessions),
  maxRunMs: Number(values['max-run-ms']),
  log: (line) => console.log(line),
})
console.log(JSON.stringify(report, null, 2))
