// ledgerloop: createHarness + a model adapter + defineTool, one fresh agent per
// run, set up as the variant says (see parseVariant in ledgerloop-common.ts):
// the store (memory, jsonl, sqlite), then +replay (scriptedAdapter's fast path
// instead of a plain async* generator), +scope (initiatorScope), +interval
// (JSONL fsync 'interval'). No plugins: the invariant plugin is off.
import type { CreateDriver } from '../src/driver.ts'
import { openHarness, parseVariant, runTurn } from './ledgerloop-common.ts'

export const createDriver: CreateDriver = async (variant, options) => {
  const bench = await openHarness(parseVariant(variant), options.tmpDir)
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
