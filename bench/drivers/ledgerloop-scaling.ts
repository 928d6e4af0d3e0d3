// ledgerloop at session sizes: variant 'STORE:EVENTS' (e.g. 'memory:100000') or 'STORE:EVENTS:resident'.
// 'STORE:EVENTS' (the per-step scaling rows): prepare() pre-fills a fresh session by running the same
// workload until the log holds at least EVENTS events (untimed), after a JIT warm-up on a separate session;
// then the timed turn runs N more steps on that long session. A step must cost the same at 100k events as
// at 1k (deriveMessages() folds only what is new: README.md, "How fast").
// 'STORE:EVENTS:resident' (the memory row): no separate warm-up session. The driver builds the one long
// session through the loop while it is created (100-step turns, the way a long session grows; this is the
// process's warm-up), the child then forces a GC as it does after every row's warm-up, and the measured turn
// runs N more steps on that session. The process's peak RSS is what holding and working on a session of
// EVENTS events costs, with nothing else in the process.
import type { CreateDriver, Driver } from '../src/driver.ts'
import { Workload } from '../src/workload.ts'
import { openHarness, parseVariant, runTurn, type BenchHarness, type LedgerAgent } from './ledgerloop-common.ts'

/** Steps per pre-fill turn (a session is many turns, not one giant turn). */
const PREFILL_TURN_STEPS = 100

/** Steps run on a throwaway session before pre-filling (the same warm-up the other rows get). */
const WARMUP_STEPS = 3000

/** Runs 100-step turns of the workload on `agent` until its log holds at least `target` events. */
async function fill(bench: BenchHarness, agent: LedgerAgent, target: number): Promise<void> {
  while (agent.session.length < target) {
    const prefill = new Workload(PREFILL_TURN_STEPS)
    bench.current = prefill
    await runTurn(agent)
    const problem = prefill.problem()
    if (problem) throw new Error(`pre-fill turn did not do the work: ${problem}`)
  }
}

/** The memory row: the long session is built while the driver is created; one measured turn follows. */
async function residentDriver(bench: BenchHarness, target: number): Promise<Driver> {
  const agent = await bench.newAgent()
  await fill(bench, agent, target)
  let prepared = false
  return {
    async prepare(workload) {
      if (prepared) throw new Error('the resident row runs one measured turn (run it with --warmup-runs 0)')
      prepared = true
      const startEvents = agent.session.length
      bench.current = workload
      return {
        go: () => runTurn(agent),
        async after() {
          await bench.release(agent)
          return { sessionEventsAtStart: startEvents }
        },
      }
    },
    close: () => bench.close(),
  }
}

export const createDriver: CreateDriver = async (variant, options) => {
  const [store = '', size = '', mode = ''] = variant.split(':')
  const target = Number(size)
  if (!Number.isSafeInteger(target) || target < 1 || (mode !== '' && mode !== 'resident')) throw new Error(`bad scaling variant '${variant}'`)
  const bench = await openHarness(parseVariant(store), options.tmpDir)
  if (mode === 'resident') return residentDriver(bench, target)
  // Warm the JIT on a separate session first, so a small pre-fill (1k events is ~30 steps) does not leave the
  // timed steps half-compiled while a large one is fully optimised: sizes must differ only in session length.
  const warm = await bench.newAgent()
  for (let done = 0; done < WARMUP_STEPS; done += PREFILL_TURN_STEPS) {
    bench.current = new Workload(PREFILL_TURN_STEPS)
    await runTurn(warm)
  }
  await bench.release(warm)
  return {
    async prepare(workload) {
      const agent = await bench.newAgent()
      await fill(bench, agent, target)
      const startEvents = agent.session.length
      bench.current = workload
      return {
        go: () => runTurn(agent),
        async after() {
          await bench.release(agent)
          return { sessionEventsAtStart: startEvents }
        },
      }
    },
    close: () => bench.close(),
  }
}
