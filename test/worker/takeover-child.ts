/**
 * One worker process of the takeover test (and `npm run crash:pg`):
 *
 *   takeover-child <database-url> <schema> <side-file> <tag> <lease-ms> [<request-delay-ms> <concurrency>]
 *
 * Runs `runWorker` with a scripted model that replays a two-step script in every turn (a `record` tool call,
 * then a short answer, each chunk after a small delay) until SIGTERM. The `record` tool appends
 * `<session> <callId> <tag>` to the side file (append + fsync) while its body runs, so the parent can prove no
 * body ran twice. Every worker event is printed as one JSON line on stdout. With a request delay (the
 * benchmark), chunks stream without delay and each request first waits that long, like a model's latency.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { defineTool, scriptedAdapter } from '../../src/index.js'
import { PostgresStore, runWorker, turnScript } from '../../src/postgres.js'

const [url, schema, sideFile, tag, leaseText, requestDelayText, concurrencyText] = process.argv.slice(2) as [string, string, string, string, string, string?, string?]
const requestDelayMs = Number(requestDelayText ?? '0')
const chunkDelayMs = requestDelayMs > 0 ? 0 : 15

function say(value: object): void {
  process.stdout.write(JSON.stringify(value) + '\n')
}

const record = defineTool({
  name: 'record',
  description: 'Records that its body ran',
  parameters: z.object({ note: z.string() }),
  async execute(args, ctx) {
    await sleep(10)
    const fd = openSync(sideFile, 'a')
    try {
      writeSync(fd, `${ctx.agent.id} ${ctx.callId} ${tag}\n`)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    await sleep(10)
    return `recorded ${args.note}`
  },
})

const scripted = scriptedAdapter({
  recordRequests: false,
  script: turnScript([
    { text: ['Let me ', 'write ', 'that down.'], toolCalls: [{ name: 'record', arguments: { note: 'work' } }], delayMs: chunkDelayMs },
    { text: ['Done', ' with', ' it.'], delayMs: chunkDelayMs },
  ]),
})
const model =
  requestDelayMs > 0
    ? {
        ...scripted,
        async *stream(request: Parameters<typeof scripted.stream>[0]) {
          await sleep(requestDelayMs, undefined, { signal: request.signal })
          yield* scripted.stream(request)
        },
      }
    : scripted

const store = new PostgresStore({ connectionString: url, schema, leaseMs: Number(leaseText), ownerId: `${tag}:${process.pid}` })
const stop = new AbortController()
process.once('SIGTERM', () => stop.abort())
say({ type: 'ready', tag, pid: process.pid })
const summary = await runWorker({
  store,
  adapters: [model],
  tools: [record],
  provider: 'scripted',
  model: 'scripted',
  concurrency: Number(concurrencyText ?? '4'),
  idleGraceMs: 300,
  pollMs: 200,
  shutdownGraceMs: 5000,
  // Random kills can interrupt the same work several times in a row by chance: only a poison turn should stop.
  quarantineAfter: 50,
  signal: stop.signal,
  onEvent: (event) => say(event),
  onListenerError: () => {},
})
await store.close()
say({ type: 'stopped', ...summary })
