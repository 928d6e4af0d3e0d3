/**
 * One worker process of bench/micro/postgres-workers.ts (bundled by it; not a test):
 *
 *   postgres-workers-child <database-url> <schema> <tag> <request-ms> <concurrency> <idle-grace-ms> <poll-ms>
 *
 * `runWorker` with a model that waits `request-ms` before each reply (its latency; the chunks then stream without
 * delay) and a two-step turn: a `record` tool call, then a short answer. The tool's body only counts its runs,
 * so the I/O bound of a worker is the model's two waits per turn. Prints `{"type":"ready"}` once the store
 * listens (with the CPU time start-up took, `cpuMs`), then every worker event as one JSON line with `at` (ms since
 * the epoch) until SIGTERM, and last `{"type":"stopped"}` with the summary, the tool bodies run and `cpuMs`.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { defineTool, scriptedAdapter } from '../../src/index.js'
import { PostgresStore, runWorker, turnScript } from '../../src/postgres.js'

const [url, schema, tag, requestText, concurrencyText, idleGraceText, pollText] = process.argv.slice(2) as string[]
const requestMs = Number(requestText)

function cpuMs(): number {
  const cpu = process.cpuUsage()
  return (cpu.user + cpu.system) / 1000
}
const say = (value: object): void => void process.stdout.write(JSON.stringify({ ...value, at: Date.now() }) + '\n')

// A tool body that costs nothing of its own: the worker's overhead is what is measured, not the tool's I/O (a
// synchronous fsync here would stall every session of the process, as the takeover test's recording tool does).
let bodies = 0
const record = defineTool({
  name: 'record',
  description: 'Counts that its body ran',
  parameters: z.object({ note: z.string() }),
  execute(args) {
    bodies++
    return `recorded ${args.note}`
  },
})

const scripted = scriptedAdapter({
  recordRequests: false,
  script: turnScript([{ text: ['Let me ', 'write ', 'that down.'], toolCalls: [{ name: 'record', arguments: { note: 'work' } }] }, { text: ['Done', ' with', ' it.'] }]),
})
const model = {
  ...scripted,
  async *stream(request: Parameters<typeof scripted.stream>[0]) {
    await sleep(requestMs, undefined, { signal: request.signal })
    yield* scripted.stream(request)
  },
}

const concurrency = Number(concurrencyText)
const store = new PostgresStore({ connectionString: url as string, schema: schema as string, leaseMs: 10_000, ownerId: `${tag}:${process.pid}`, poolSize: concurrency + 4 })
await store.ready()
await store.listening()
const stop = new AbortController()
process.once('SIGTERM', () => stop.abort())
say({ type: 'ready', tag, cpuMs: cpuMs() })
const summary = await runWorker({
  store,
  adapters: [model],
  tools: [record],
  provider: 'scripted',
  model: 'scripted',
  concurrency,
  idleGraceMs: Number(idleGraceText),
  pollMs: Number(pollText),
  signal: stop.signal,
  onEvent: (event) => say(event),
})
await store.close()
say({ type: 'stopped', ...summary, bodies, cpuMs: cpuMs() })
