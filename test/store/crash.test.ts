import { expect, it } from 'vitest'
import { runCrashTest } from './crash-runner.js'

// The kill -9 acceptance test of issue 5, at CI size; `npm run crash -- --kills 2000` runs it longer.
it('CRASH-TEST: 100 SIGKILLs at random moments lose nothing flushed, repair and resume cleanly, never run a tool twice (sub-agents included)', async () => {
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
}, 600_000)
