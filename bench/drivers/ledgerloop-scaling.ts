// ledgerloop at session sizes: variant 'STORE:EVENTS' (e.g. 'memory:100000').
// prepare() pre-fills a fresh session by running the same workload until the
// log holds at least EVENTS events (untimed; it also warms the JIT), then the
// timed turn runs N more steps on that long session. A step must cost the same
// at 100k events as at 1k (DESIGN.md, "Performance design").
import type { CreateDriver } from '../src/driver.ts'
import { Workload } from '../src/workload.ts'
import { openHarness, runTurn, storeKind } from './ledgerloop-common.ts'

/** Steps per pre-fill turn (a session is many turns, not one giant turn). */
const PREFILL_TURN_STEPS = 100

export const createDriver: CreateDriver = async (variant, options) => {
  const [store = '', size = ''] = variant.split(':')
  const target = Number(size)
  if (!Number.isSafeInteger(target) || target < 1) throw new Error(`bad scaling variant '${variant}'`)
  const bench = await openHarness(storeKind(store), options.tmpDir)
  return {
    async prepare(workload) {
      const agent = await bench.newAgent()
      while (agent.session.events.length < target) {
        const prefill = new Workload(PREFILL_TURN_STEPS)
        bench.current = prefill
        await runTurn(agent)
        const problem = prefill.problem()
        if (problem) throw new Error(`pre-fill turn did not do the work: ${problem}`)
      }
      const startEvents = agent.session.events.length
      bench.current = workload
      return {
        go: () => runTurn(agent),
        async after() {
          await agent.dispose()
          return { sessionEventsAtStart: startEvents }
        },
      }
    },
    close: () => bench.close(),
  }
}
