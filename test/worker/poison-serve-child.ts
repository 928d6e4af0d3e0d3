/**
 * One `serve` process of the JSONL poison test:
 *
 *   poison-serve-child <dir> <token>
 *
 * Serves the JSONL store in `dir` (LocalSessionHost: every session runs in this one process) with the poison
 * test's scripted model: in a session whose conversation mentions "poison" it calls `crash`, whose body SIGKILLs
 * this process; elsewhere a turn takes three `note` steps, with a model delay each, then answers. Prints
 * `{"type":"ready","base":URL}` once listening, and `{"type":"crashing"}` just before it kills itself.
 */
import { z } from 'zod'
import { defineTool, JsonlStore, scriptedAdapter } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { createLedgerServer } from '../../src/server/index.js'

const [dir, token] = process.argv.slice(2) as [string, string]

function say(value: object): void {
  process.stdout.write(JSON.stringify(value) + '\n')
}

const crash = defineTool({
  name: 'crash',
  description: 'Kills the process running it',
  parameters: z.object({}),
  execute: () => {
    say({ type: 'crashing' })
    process.kill(process.pid, 'SIGKILL')
    return new Promise<string>(() => {})
  },
})
const note = defineTool({ name: 'note', description: 'Takes a note', parameters: z.object({ text: z.string() }), execute: ({ text }) => `noted ${text}` })

function script(request: GenerateOptions) {
  if (JSON.stringify(request.messages).includes('poison')) return { text: 'Trying.', toolCalls: [{ name: 'crash', arguments: {} }] }
  let steps = 0
  for (let i = request.messages.length - 1; i >= 0; i--) {
    const m = request.messages[i]
    if (m?.role === 'assistant') steps++
    else if (m?.role === 'user' && m.content.some((c) => c.type === 'text')) break
  }
  if (steps >= 3) return { text: ['Noted', ' it.'], delayMs: 20 }
  return { text: 'Let me note that.', toolCalls: [{ name: 'note', arguments: { text: 'work' } }], delayMs: 80 }
}

const server = await createLedgerServer({
  store: new JsonlStore({ dir }),
  agents: {
    adapters: [scriptedAdapter({ recordRequests: false, script })],
    tools: [crash, note],
    defaults: { provider: 'scripted', model: 'scripted' },
    permissions: false,
    cwd: dir,
  },
  token,
  port: 0,
})
say({ type: 'ready', base: await server.listen() })
process.once('SIGTERM', () => void server.close().then(() => process.exit(0)))
