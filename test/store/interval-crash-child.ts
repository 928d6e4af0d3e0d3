/**
 * The process the interval-mode kill test kills: scripted sessions on a `JsonlStore({ fsync: 'interval' })`,
 * in a loop until SIGKILLed. `interval-crash-child <dir> <seed>`: prints `READY`, starts on a `go` line.
 */
import { createInterface } from 'node:readline'
import { z } from 'zod'
import { createHarness, defineTool, scriptedAdapter, type ScriptStep } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { prng } from '../support/child-process-kit.js'

const [dir, seedText] = process.argv.slice(2) as [string, string]
const random = prng(Number(seedText))
let calls = 0
const model = scriptedAdapter({
  script: (request: GenerateOptions): ScriptStep => {
    const last = request.messages[request.messages.length - 1]
    // Some steps wait a millisecond: the interval timer then fires inside turns, not only between them.
    const delayMs = random() < 0.5 ? 1 : 0
    if (last?.content[0]?.type === 'tool-result' && random() < 0.5) return { text: ['all', ' done', ' here', ' now'], delayMs }
    return { reasoning: ['let', ' me', ' see'], text: ['one', ' moment'], toolCalls: [{ id: `c${calls++}`, name: 'note', arguments: { text: 'x'.repeat(Math.floor(random() * 300)) } }], delayMs }
  },
  models: { m1: { contextWindow: 1_000_000, defaultMaxTokens: 100 } },
})
const note = defineTool({ name: 'note', description: 'Takes a note', parameters: z.object({ text: z.string() }), execute: () => 'noted' })
const store = new JsonlStore({ dir, fsync: 'interval', flushIntervalMs: 5 })
const harness = createHarness({ store, adapters: [model], tools: [note], onListenerError: () => {} })

async function work(): Promise<never> {
  for (;;) {
    const id = `s${Math.floor(random() * 4)}`
    const options = { provider: 'scripted', model: 'm1' }
    // Random kills may cut the same session's work off several times in a row: this test is about what the
    // kills leave on disk, not about poison turns, so quarantine (default after 3 in a row) is kept out of it.
    const agent = (await store.has(id)) ? await harness.resumeAgent(id, { ...options, quarantineAfter: 1_000_000 }) : await harness.createAgent({ ...options, sessionId: id })
    for (let t = 0; t < 3; t++) {
      agent.followup(`turn ${t}`)
      await agent.whenIdle()
    }
    await agent.dispose()
  }
}

process.stdout.write('READY\n')
createInterface({ input: process.stdin }).once('line', () => {
  work().catch((error: unknown) => {
    process.stdout.write(`ERROR ${String((error as Error)?.stack ?? error).replace(/\n/g, ' | ')}\n`)
    process.exit(3)
  })
})
