/**
 * Writes sessions into a JSONL folder for the session index's two-process test:
 * `index-writer-child <dir> <prefix> <count>` runs one turn in each of `count` sessions, then prints `DONE`.
 */
import { createHarness, scriptedAdapter } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'

const [dir, prefix, countText] = process.argv.slice(2) as [string, string, string]
const store = new JsonlStore({ dir })
const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: ['ok'] }) })] })
for (let i = 0; i < Number(countText); i++) {
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm', sessionId: `${prefix}${i}` })
  agent.followup(`prompt ${prefix}${i}`)
  await agent.whenIdle()
  await agent.dispose()
}
await harness.close()
process.stdout.write('DONE\n')
