// ledgerloop: createHarness + scriptedAdapter + defineTool, one fresh agent per
// run, with the store named by the variant: memory, jsonl (durable) or sqlite.
// No plugins: the invariant plugin is off, as the targets in issue 7 specify.
import type { CreateDriver } from '../src/driver.ts'
import { openHarness, runTurn, storeKind } from './ledgerloop-common.ts'

export const createDriver: CreateDriver = async (variant, options) => {
  const bench = await openHarness(storeKind(variant), options.tmpDir)
  return {
    async prepare(workload) {
      bench.current = workload
      const agent = await bench.newAgent()
      return {
        go: () => runTurn(agent),
        async after() {
          const events = agent.session.length
          await bench.release(agent)
          return { eventsPerStep: events / workload.steps }
        },
      }
    },
    close: () => bench.close(),
  }
}
