import { expect, it } from 'vitest'
import { runCrashTest } from './crash-runner.js'

// The kill -9 acceptance test of issue 5, at CI size; `npm run crash -- --kills 2000` runs it longer.
it('CRASH-TEST: 100 SIGKILLs at random moments lose nothing flushed, repair, continue the interrupted work and answer every prompt once, never run a never-tool twice (sub-agents included)', async () => {
  const report = await runCrashTest({ kills: 100, seed: 20240505 })
  console.log(`crash test: ${JSON.stringify(report)}`)
  expect(report.kills).toBe(100)
  // The run must have exercised what it claims to check.
  expect(report.flushReports).toBeGreaterThan(100)
  expect(report.toolExecutions).toBeGreaterThan(50)
  expect(report.repairedTurns).toBeGreaterThan(10)
  // Issue 17: sub-agents ran, were cut off, and were checked and resumed like any session.
  expect(report.childSessions).toBeGreaterThan(3)
  expect(report.childToolExecutions).toBeGreaterThan(3)
  expect(report.interruptedTaskCalls).toBeGreaterThan(0)
  expect(report.resumedChildren).toBeGreaterThan(0)
  // Issue 24: kills interrupted work that resume carried on; every prompt was checked answered once.
  expect(report.continuations).toBeGreaterThan(10)
  expect(report.promptsAnswered).toBeGreaterThan(100)
}, 600_000)

// Issue 22: the same kills on one SQLite database that every child shares (`npm run crash -- --store sqlite`
// runs it longer). Few kills, to keep the suite's time: each check also reads every session through the store,
// which refuses a next_seq that disagrees with the rows.
it('CRASH-TEST (SQLite): 12 SIGKILLs lose nothing flushed, resume cleanly, never run a tool twice', async () => {
  const report = await runCrashTest({ kills: 12, seed: 20261201, store: 'sqlite' })
  console.log(`crash test (sqlite): ${JSON.stringify(report)}`)
  expect(report.kills).toBe(12)
  expect(report.flushReports).toBeGreaterThan(12)
  expect(report.toolExecutions).toBeGreaterThan(6)
  expect(report.resumedTurns).toBeGreaterThan(12)
  expect(report.tornTails).toBe(0)
  expect(report.continuations).toBeGreaterThan(0)
}, 300_000)
