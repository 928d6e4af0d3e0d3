/**
 * Embedding ledgerloop: a scripted model (no key, no network) calls a tool and streams its answer
 * (`agent.stream()`), a second question is asked with `agent.run()` and fails (the script has a failure for
 * it), each result printed as the answer or the failure, and the whole durable event log is printed at the end.
 *
 *   npx tsx examples/embed.ts
 */
import { z } from 'zod'
import { createHarness, defineTool, invariantPlugin, scriptedAdapter, type TurnResult } from 'ledgerloop'

// A scripted model: the first request asks for a tool, the second streams the answer chunk by chunk, the
// third fails as a provider would.
const model = scriptedAdapter({
  script: [
    { reasoning: 'I should look the word up.', toolCalls: [{ name: 'define', arguments: { word: 'ledger' } }], usage: { inputTokens: 120, outputTokens: 14 } },
    { text: ['A ledger ', 'is a book ', 'of accounts: ', 'every entry ', 'kept, none rewritten.'], delayMs: 30, usage: { inputTokens: 160, outputTokens: 12 } },
    { error: { code: 'RATE_LIMIT', message: 'slow down (scripted)', status: 429 } },
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

/** The answer of a completed turn, or how and why it did not complete. */
function report(result: TurnResult): void {
  const { inputTokens, outputTokens } = result.usage
  if (result.reason.kind === 'completed') {
    console.log(`answer (turn ${result.turn}, ${result.toolCalls.length} tool call(s), ${inputTokens} in · ${outputTokens} out): ${result.text}`)
  } else {
    const failure = result.failure !== undefined ? ` ${result.failure.code}: ${result.failure.message}` : ''
    console.log(`turn ${result.turn} ended ${result.reason.kind}${failure}`)
  }
}

const agent = await harness.createAgent({ provider: 'scripted', model: 'demo' })

// Stream the first turn to the terminal: each part is yielded once its event is in the log.
const turn = agent.stream('What is a ledger?')
for await (const part of turn) {
  if (part.type === 'tool-call') process.stdout.write(`[tool ${part.name}]\n`)
  if (part.type === 'text-delta') process.stdout.write(part.text)
}
process.stdout.write('\n')
report(await turn.result)

// Or just wait for the result: run() never rejects for a turn that failed, the reason says so.
report(await agent.run('And in one word?'))

process.stdout.write('\n--- the event log ---\n')
for (const event of agent.session.events) {
  const text = JSON.stringify(event.data)
  console.log(`${String(event.seq).padStart(3)} ${event.type.padEnd(20)} ${text.length > 100 ? `${text.slice(0, 97)}...` : text}`)
}
await harness.close()
