/**
 * Embedding ledgerloop: a scripted model (no key, no network) calls a tool, streams its answer, and the
 * whole durable event log is printed at the end.
 *
 *   npx tsx examples/embed.ts
 */
import { z } from 'zod'
import { createHarness, defineTool, invariantPlugin, scriptedAdapter } from 'ledgerloop'

// A scripted model: the first request asks for a tool, the second streams the answer chunk by chunk.
const model = scriptedAdapter({
  script: [
    { reasoning: 'I should look the word up.', toolCalls: [{ name: 'define', arguments: { word: 'ledger' } }] },
    { text: ['A ledger ', 'is a book ', 'of accounts: ', 'every entry ', 'kept, none rewritten.'], delayMs: 30 },
  ],
})

const define = defineTool({
  name: 'define',
  description: 'Looks up a word in a tiny dictionary',
  parameters: z.object({ word: z.string() }),
  concurrencySafe: true,
  execute: ({ word }) => (word === 'ledger' ? 'ledger: a book in which accounts are recorded' : `no entry for ${word}`),
})

const harness = createHarness({
  adapters: [model],
  tools: [define],
  plugins: [invariantPlugin()],
  system: 'You are a concise assistant.',
})

// Stream text to the terminal as it is logged.
harness.hooks.on('session/event', ({ event }) => {
  const data = event.data as { chunk?: { type: string; text?: string }; name?: string }
  if (event.type === 'assistant/chunk' && data.chunk?.type === 'text-delta') process.stdout.write(data.chunk.text ?? '')
  if (event.type === 'tool/call') process.stdout.write(`[tool ${String(data.name)}]\n`)
})

const agent = await harness.createAgent({ provider: 'scripted', model: 'demo' })
agent.followup('What is a ledger?')
await agent.whenIdle()
process.stdout.write('\n\n--- the event log ---\n')
for (const event of agent.session.events) {
  const text = JSON.stringify(event.data)
  console.log(`${String(event.seq).padStart(3)} ${event.type.padEnd(20)} ${text.length > 100 ? `${text.slice(0, 97)}...` : text}`)
}
await harness.close()
