/**
 * One worker process of bench/micro/postgres-workers.ts (bundled by it; not a test):
 *
 *   postgres-workers-child <database-url> <schema> <tag> <request-ms> <concurrency> <idle-grace-ms> <poll-ms>
 *
 * `runWorker` with a model that waits `request-ms` before each reply (its latency; the chunks then stream without
 * delay) and a two-step turn: a `record` tool call, then a short answer. The tool's body only counts its runs,
 * so the I/O bound of a worker is the model's two waits per turn. Prints `{"type":"ready"}` once the store
 * listens (with the CPU time start-up took, `cpuMs`), then every worker event as one JSON line with `at` (ms since
 * the epoch) until SIGTERM, and last `{"type":"stopped"}` with the summary, the tool bodies run, `cpuMs` and
 * `statements`: every statement the store sent, by what it does (`claim`, `open`, `flush`, …: see
 * {@link statementKind}), with its count and its summed round-trip time in ms.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
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
// Per claimed session, when its claim statement returned, when it was open, when its first request went out.
const claimedAt = new Map<string, number>()
const openedAt = new Map<string, number>()
const phases = { claims: 0, claimToOpenMs: 0, openToFirstRequestMs: 0 }
const model = {
  ...scripted,
  async *stream(request: Parameters<typeof scripted.stream>[0]) {
    const opened = request.sessionId === undefined ? undefined : openedAt.get(request.sessionId)
    if (opened !== undefined) {
      openedAt.delete(request.sessionId as string)
      phases.openToFirstRequestMs += performance.now() - opened
    }
    await sleep(requestMs, undefined, { signal: request.signal })
    yield* scripted.stream(request)
  },
}

/** What a statement of the store does, from its text (the bench's own names, for the breakdown). */
function statementKind(text: string, name: string | undefined): string {
  if (name?.startsWith('ll_flush_inbox') === true) return 'flush+inbox'
  if (name?.startsWith('ll_flush') === true) return 'flush'
  if (/^\s*(LISTEN|BEGIN|COMMIT|ROLLBACK|SET|CREATE|ALTER|SELECT pg_advisory|SELECT version|INSERT INTO \S+schema_version)/i.test(text)) return 'setup'
  if (/WITH (c|w) AS[\s\S]*SKIP LOCKED/i.test(text)) return 'claim'
  if (/count\(\*\)/i.test(text)) return 'claim: continuations waiting'
  if (/force_resume/i.test(text)) return 'open: forced-resume check'
  if (/SELECT epoch, header, head_seq/i.test(text)) return 'open: owned row'
  if (/FROM \S+events/i.test(text) && /^\s*SELECT/i.test(text)) return 'open: log read'
  if (/FROM \S+inbox i WHERE/i.test(text)) return 'inbox read'
  if (/^\s*SELECT i\.id::text AS id/i.test(text)) return 'inbox read'
  if (/SET owner = NULL/i.test(text)) return 'release'
  if (/unnest\(\$1::text\[\], \$2::int\[\]\) AS o/i.test(text)) return 'lease renewal'
  return text.replace(/\s+/g, ' ').slice(0, 60)
}
const statements = new Map<string, { count: number; ms: number }>()
const pool = new pg.Pool({ connectionString: url as string, max: Number(concurrencyText) + 4 })
pool.on('error', () => undefined)
const query = pool.query.bind(pool) as (...args: unknown[]) => Promise<unknown>
;(pool as unknown as { query: (...args: unknown[]) => Promise<unknown> }).query = async (...args: unknown[]) => {
  const config = args[0] as string | { text: string; name?: string }
  const kind = typeof config === 'string' ? statementKind(config, undefined) : statementKind(config.text, config.name)
  const started = performance.now()
  try {
    const result = await query(...args)
    if (kind === 'claim') for (const row of (result as { rows: { id: string }[] }).rows) claimedAt.set(row.id, performance.now())
    return result
  } finally {
    const tally = statements.get(kind) ?? { count: 0, ms: 0 }
    tally.count++
    tally.ms += performance.now() - started
    statements.set(kind, tally)
  }
}

const concurrency = Number(concurrencyText)
const store = new PostgresStore({ pool, schema: schema as string, leaseMs: 10_000, ownerId: `${tag}:${process.pid}` })
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
  onEvent: (event) => {
    const claimed = event.type === 'claimed' ? claimedAt.get(event.sessionId) : undefined
    if (claimed !== undefined && event.type === 'claimed') {
      claimedAt.delete(event.sessionId)
      openedAt.set(event.sessionId, performance.now())
      phases.claims++
      phases.claimToOpenMs += performance.now() - claimed
    }
    say(event)
  },
})
await store.close()
await pool.end()
say({ type: 'stopped', ...summary, bodies, cpuMs: cpuMs(), statements: Object.fromEntries(statements), phases })
