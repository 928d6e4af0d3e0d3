/**
 * One worker process of the fleet poison test:
 *
 *   poison-child <database-url> <schema> <tag> <lease-ms> <quarantine-after> <concurrency>
 *
 * Runs `runWorker` with a scripted model: in a session whose conversation mentions "poison" it calls the
 * `crash` tool, whose body SIGKILLs this process (a segfault, an OOM kill) — in the first turn and in every
 * continuation of it, so the same work kills its worker every time; everywhere else a turn is several steps
 * long (`note` three times, a model delay each, then an answer), so bystanders are mid-turn when the poison
 * kills the process they share with it. Every worker event is printed as one JSON line on stdout.
 */
import { z } from 'zod'
import { defineTool, scriptedAdapter } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { PostgresStore, runWorker } from '../../src/postgres.js'

const [url, schema, tag, leaseText, quarantineText, concurrencyText] = process.argv.slice(2) as [string, string, string, string, string, string]

function say(value: object): void {
  process.stdout.write(JSON.stringify(value) + '\n')
}

const crash = defineTool({
  name: 'crash',
  description: 'Kills the process running it',
  parameters: z.object({}),
  execute: () => {
    say({ type: 'crashing', tag })
    process.kill(process.pid, 'SIGKILL')
    return new Promise<string>(() => {})
  },
})
const note = defineTool({ name: 'note', description: 'Takes a note', parameters: z.object({ text: z.string() }), execute: ({ text }) => `noted ${text}` })

/** Notes taken in the current turn: assistant messages since the last prompt (a user message of text). */
function stepsSoFar(request: GenerateOptions): number {
  let steps = 0
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i]
    if (m?.role === 'assistant') steps++
    else if (m?.role === 'user' && m.content.some((c) => c.type === 'text')) break
  }
  return steps
}

function script(request: GenerateOptions) {
  const said = JSON.stringify(request.messages)
  if (said.includes('poison')) return { text: 'Trying.', toolCalls: [{ name: 'crash', arguments: {} }] }
  if (stepsSoFar(request) >= 3) return { text: ['Noted', ' it.'], delayMs: 20 }
  return { text: 'Let me note that.', toolCalls: [{ name: 'note', arguments: { text: 'work' } }], delayMs: 60 }
}

const store = new PostgresStore({ connectionString: url, schema, leaseMs: Number(leaseText), ownerId: `${tag}:${process.pid}` })
const stop = new AbortController()
process.once('SIGTERM', () => stop.abort())
say({ type: 'ready', tag, pid: process.pid })
await runWorker({
  store,
  adapters: [scriptedAdapter({ recordRequests: false, script })],
  tools: [crash, note],
  provider: 'scripted',
  model: 'scripted',
  concurrency: Number(concurrencyText),
  idleGraceMs: 300,
  pollMs: 100,
  shutdownGraceMs: 2000,
  quarantineAfter: Number(quarantineText),
  signal: stop.signal,
  onEvent: (event) => say(event),
  onListenerError: () => {},
})
await store.close()
