/**
 * The server half of `npm run load:serve`: a `serve` server on a loopback port over a JSONL store in a temp
 * folder (or, with LOAD_FLEET=1, over a scratch PostgreSQL database with a worker process running the sessions), with a scripted model that streams many chunks per reply and calls a tool every other step. Prints
 * `ready URL TOKEN`, then `mem RSS HEAP` (after a full GC) whenever a line `mem` arrives on stdin.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { z } from 'zod'
import { defineTool, JsonlStore, scriptedAdapter, type ScriptStep } from '../src/index.js'
import type { GenerateOptions } from '../src/llm/types.js'
import { spawn } from 'node:child_process'
import { createLedgerServer, PostgresSessionPort, type LedgerServer } from '../src/server/index.js'

const chunks = Number(process.env.LOAD_CHUNKS ?? '60')
const dir = mkdtempSync(join(tmpdir(), 'll-serve-load-'))

function script(request: GenerateOptions): ScriptStep {
  const last = request.messages[request.messages.length - 1]
  const afterTool = last?.content[0]?.type === 'tool-result'
  const usage = { inputTokens: 200, outputTokens: chunks, cacheReadTokens: 150 }
  if (!afterTool) return { text: Array.from({ length: chunks / 2 }, (_, i) => `w${i} `), toolCalls: [{ name: 'note', arguments: { text: 'x' } }], usage, delayMs: 2 }
  return { text: Array.from({ length: chunks }, (_, i) => `t${i} `), usage, delayMs: 2 }
}

if (process.env.LOAD_WORKER !== undefined && process.env.LOAD_WORKER !== '') {
  // The worker process of LOAD_FLEET: serves every session until its stdin ends.
  const { PostgresStore, runWorker } = await import('../src/postgres.js')
  const store = new PostgresStore({ connectionString: process.env.LOAD_WORKER, poolSize: 20 })
  const stop = new AbortController()
  process.stdin.on('end', () => stop.abort())
  process.stdin.resume()
  await runWorker({
    store,
    adapters: [scriptedAdapter({ script, recordRequests: false })],
    tools: [defineTool({ name: 'note', description: 'notes', parameters: z.object({ text: z.string() }), execute: () => 'noted' })],
    provider: 'scripted',
    model: 'load',
    concurrency: 16,
    pollMs: 200,
    signal: stop.signal,
  })
  await store.close()
  process.exit(0)
}

const tools = [defineTool({ name: 'note', description: 'notes', parameters: z.object({ text: z.string() }), execute: () => 'noted' })]
const fleet = process.env.LOAD_FLEET === '1' ? await startFleet() : undefined
const server =
  fleet?.server ??
  (await createLedgerServer({
    store: new JsonlStore({ dir }),
    agents: { adapters: [scriptedAdapter({ script, recordRequests: false })], tools, defaults: { provider: 'scripted', model: 'load' }, permissions: false, cwd: dir },
    port: 0,
  }))
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
  void server.close().then(async () => {
    await fleet?.close()
    rmSync(dir, { recursive: true, force: true })
    process.exit(0)
  })
})

// LOAD_FLEET=1: the server over a scratch PostgreSQL database (see test/store/postgres-scratch.ts), writing only
// the inbox and following the log, while a worker in a separate process (this file with LOAD_WORKER) runs the turns.
async function startFleet(): Promise<{ server: LedgerServer; close: () => Promise<void> }> {
  const { createScratchDatabase } = await import('../test/store/postgres-scratch.js')
  const { PostgresStore } = await import('../src/postgres.js')
  const db = await createScratchDatabase('ll_load')
  const store = new PostgresStore({ connectionString: db.url, poolSize: 20 })
  await store.ready()
  const port = new PostgresSessionPort({ store, cwd: dir })
  const worker = spawn(process.execPath, ['--import', 'tsx', new URL(import.meta.url).pathname], { env: { ...process.env, LOAD_FLEET: '', LOAD_WORKER: db.url }, stdio: ['pipe', 'ignore', 'inherit'] })
  const fleetServer = await createLedgerServer({ store, sessions: { input: port, feed: port, close: () => port.close() }, port: 0 })
  return {
    server: fleetServer,
    close: async () => {
      worker.stdin?.end()
      await new Promise((r) => worker.on('close', r))
      await store.close()
      await db.drop()
    },
  }
}
