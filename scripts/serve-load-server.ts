/**
 * The server half of `npm run load:serve`: a `serve` server on a loopback port over a JSONL store in a temp
 * folder, with a scripted model that streams many chunks per reply and calls a tool every other step. Prints
 * `ready URL TOKEN`, then `mem RSS HEAP` (after a full GC) whenever a line `mem` arrives on stdin.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { z } from 'zod'
import { defineTool, JsonlStore, scriptedAdapter, type ScriptStep } from '../src/index.js'
import type { GenerateOptions } from '../src/llm/types.js'
import { createLedgerServer } from '../src/server/index.js'

const chunks = Number(process.env.LOAD_CHUNKS ?? '60')
const dir = mkdtempSync(join(tmpdir(), 'll-serve-load-'))

function script(request: GenerateOptions): ScriptStep {
  const last = request.messages[request.messages.length - 1]
  const afterTool = last?.content[0]?.type === 'tool-result'
  const usage = { inputTokens: 200, outputTokens: chunks, cacheReadTokens: 150 }
  if (!afterTool) return { text: Array.from({ length: chunks / 2 }, (_, i) => `w${i} `), toolCalls: [{ name: 'note', arguments: { text: 'x' } }], usage, delayMs: 2 }
  return { text: Array.from({ length: chunks }, (_, i) => `t${i} `), usage, delayMs: 2 }
}

const server = await createLedgerServer({
  store: new JsonlStore({ dir }),
  agents: {
    adapters: [scriptedAdapter({ script, recordRequests: false })],
    tools: [defineTool({ name: 'note', description: 'notes', parameters: z.object({ text: z.string() }), execute: () => 'noted' })],
    defaults: { provider: 'scripted', model: 'load' },
    permissions: false,
    cwd: dir,
  },
  port: 0,
})
await server.listen()
process.stdout.write(`ready ${new URL(server.pageUrl()).origin} ${server.token ?? ''}\n`)

const gc = (globalThis as { gc?: () => void }).gc
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'mem') return
  gc?.()
  const m = process.memoryUsage()
  process.stdout.write(`mem ${m.rss} ${m.heapUsed}\n`)
})
process.stdin.on('end', () => {
  void server.close().then(() => {
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })
})
