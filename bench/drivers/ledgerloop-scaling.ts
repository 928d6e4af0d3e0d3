// ledgerloop at session sizes: variant 'STORE:EVENTS' (e.g. 'memory:100000').
// prepare() pre-fills a fresh session by running the same workload until the
// log holds at least EVENTS events (untimed), after a JIT warm-up on a separate session; then the
// timed turn runs N more steps on that long session. A step must cost the same
// at 100k events as at 1k (DESIGN.md, "Performance design").
import type { CreateDriver } from '../src/driver.ts'
import { Workload } from '../src/workload.ts'
import { openHarness, parseVariant, runTurn } from './ledgerloop-common.ts'

/** Steps per pre-fill turn (a session is many turns, not one giant turn). */
const PREFILL_TURN_STEPS = 100

/** Steps run on a throwaway session before pre-filling (the same warm-up the other rows get). */
const WARMUP_STEPS = 3000

export const createDriver: CreateDriver = async (variant, options) => {
  const [store = '', size = ''] = variant.split(':')
  const target = Number(size)
  if (!Number.isSafeInteger(target) || target < 1) throw new Error(`bad scaling variant '${variant}'`)
  const bench = await openHarness(parseVariant(store), options.tmpDir)
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
      while (agent.session.length < target) {
        const prefill = new Workload(PREFILL_TURN_STEPS)
        bench.current = prefill
        await runTurn(agent)
        const problem = prefill.problem()
        if (problem) throw new Error(`pre-fill turn did not do the work: ${problem}`)
      }
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
