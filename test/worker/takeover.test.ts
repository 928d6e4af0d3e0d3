import { expect, it } from 'vitest'
import { runTakeover } from './takeover-runner.js'

it('takeover: 3 workers, 30 sessions × 3 followups with tool calls; one worker SIGKILLed mid-turn, two stalls (SIGSTOP past the lease, then SIGCONT) — every turn closed and interrupted work continued, every prompt answered once, every log verifies, no body ran twice, the late flush got LEASE_LOST', async () => {
  const lines: string[] = []
  const report = await runTakeover({ kills: 1, stalls: 2, sessions: 30, followups: 3, workers: 3, leaseMs: 2000, replace: false, log: (l) => lines.push(l) })
  expect([...report.problems, ...(report.problems.length > 0 ? lines : [])].join('\n')).toBe('')
  expect(report.kills).toBe(1)
  expect(report.stalls).toBe(2)
  expect(report.prompts).toBe(90)
  // The kill hit an open turn: its new owner closed it `interrupted` and continued it (every prompt answered
  // once by a completed turn is checked per session in the report's problems).
  expect(report.interruptedTurns).toBeGreaterThanOrEqual(1)
  expect(report.continuations).toBeGreaterThanOrEqual(1)
  // A stalled worker finds out at its next flush or its next renewal, whichever its timers run first after
  // SIGCONT; two stalls make it very likely that at least one late flush reaches the database and is refused.
  expect(report.leaseLostOnFlush).toBeGreaterThanOrEqual(1)
}, 90_000)
