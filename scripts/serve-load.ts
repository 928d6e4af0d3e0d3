/**
 * The `serve` load test: `npm run load:serve -- [--clients 50] [--sessions 10] [--turns 6] [--fleet]`.
 *
 * Starts the server in a child process (scripts/serve-load-server.ts), opens `--clients` SSE tails spread over
 * `--sessions` live sessions before they start, runs `--turns` turns in every session at once, and checks that
 * every client received every event of its session exactly once and in order (compared with the stored log).
 * The server's memory (RSS and heap after a full GC) is sampled after each half of the turns: the streams
 * must not make it grow with the events they carry. Loopback only, bounded, a few tens of seconds.
 */
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { parseArgs } from 'node:util'
import { createParser } from 'eventsource-parser'

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '50' },
    sessions: { type: 'string', default: '10' },
    turns: { type: 'string', default: '6' },
    // The server over PostgreSQL with a worker process (needs the local test database, see docs/serve.md).
    fleet: { type: 'boolean', default: false },
  },
})
const CLIENTS = Number(values.clients)
const SESSIONS = Number(values.sessions)
const TURNS = Number(values.turns)

const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', new URL('./serve-load-server.ts', import.meta.url).pathname], {
  stdio: ['pipe', 'pipe', 'inherit'],
  env: { ...process.env, LOAD_FLEET: values.fleet === true ? '1' : '' },
})
const lines = createInterface({ input: child.stdout })
const waiting: ((line: string) => void)[] = []
lines.on('line', (line) => waiting.shift()?.(line))
const nextLine = (): Promise<string> => new Promise((resolve) => waiting.push(resolve))

const ready = (await nextLine()).split(' ')
const base = ready[1] as string
const auth = { authorization: `Bearer ${ready[2] as string}` }
const memory = async (): Promise<{ rss: number; heap: number }> => {
  child.stdin.write('mem\n')
  const [, rss, heap] = (await nextLine()).split(' ')
  return { rss: Number(rss), heap: Number(heap) }
}
const post = (path: string, body: unknown): Promise<Response> => fetch(`${base}${path}`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(body) })

interface Tail {
  readonly session: string
  readonly seqs: number[]
  readonly types: string[]
  done: Promise<void>
  stop: () => void
}

function tail(session: string): Tail {
  const controller = new AbortController()
  const t: Tail = { session, seqs: [], types: [], done: Promise.resolve(), stop: () => controller.abort() }
  t.done = (async () => {
    const res = await fetch(`${base}/api/sessions/${session}/stream`, { headers: auth, signal: controller.signal })
    const parser = createParser({
      onEvent: (m) => {
        if (m.id === undefined) return
        const event = JSON.parse(m.data) as { seq: number; type: string }
        t.seqs.push(event.seq)
        t.types.push(event.type)
      },
    })
    const reader = (res.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader()
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        parser.feed(value)
      }
    } catch {
      // Aborted by stop().
    }
  })()
  return t
}

async function turnsEnded(id: string): Promise<number> {
  const row = (await (await fetch(`${base}/api/sessions/${id}`, { headers: auth })).json()) as { turns: number; status: string }
  // With a worker fleet a finished session is `idle` while its worker keeps it, then `stored`.
  return row.status === 'idle' || row.status === 'stored' ? row.turns : -1
}

async function runTurns(ids: string[], from: number, to: number): Promise<void> {
  for (let turn = from; turn <= to; turn++) {
    await Promise.all(ids.map((id) => post(`/api/sessions/${id}/followup`, { text: `turn ${turn}` })))
    for (const id of ids) while ((await turnsEnded(id)) < turn) await new Promise((r) => setTimeout(r, 20))
  }
}

const started = Date.now()
const ids: string[] = []
for (let i = 0; i < SESSIONS; i++) ids.push(((await (await post('/api/sessions', {})).json()) as { id: string }).id)
const tails = Array.from({ length: CLIENTS }, (_, i) => tail(ids[i % SESSIONS] as string))
await new Promise((r) => setTimeout(r, 300))
const baseline = await memory()
const half = Math.max(1, Math.floor(TURNS / 2))
await runTurns(ids, 1, half)
const middle = await memory()
await runTurns(ids, half + 1, TURNS)
await new Promise((r) => setTimeout(r, 300))
const end = await memory()
const elapsed = Date.now() - started

let failures = 0
let delivered = 0
const logs = new Map<string, { seq: number; type: string }[]>()
for (const id of ids) logs.set(id, ((await (await fetch(`${base}/api/sessions/${id}/events?limit=10000`, { headers: auth })).json()) as { events: { seq: number; type: string }[] }).events)
for (const t of tails) {
  t.stop()
  await t.done
  const log = logs.get(t.session) ?? []
  delivered += t.seqs.length
  const inOrder = t.seqs.every((seq, i) => seq === i)
  const complete = t.seqs.length === log.length && t.types.every((type, i) => type === log[i]?.type)
  if (!inOrder || !complete) {
    failures++
    console.error(`client of ${t.session}: ${t.seqs.length} of ${log.length} events, in order: ${inOrder}`)
  }
}
const totalEvents = [...logs.values()].reduce((n, log) => n + log.length, 0)
child.stdin.end()
await new Promise((r) => child.on('close', r))

const mb = (n: number): string => `${(n / 1024 / 1024).toFixed(1)} MB`
console.log(`serve load test: ${CLIENTS} SSE clients × ${SESSIONS} live sessions × ${TURNS} turns in ${(elapsed / 1000).toFixed(1)} s`)
console.log(`  events logged: ${totalEvents} (${Math.round(totalEvents / SESSIONS)} per session); events delivered to clients: ${delivered} (${Math.round(delivered / (elapsed / 1000))}/s)`)
console.log(`  every client got every event of its session once, in order: ${failures === 0 ? 'yes' : `NO (${failures} clients failed)`}`)
console.log(`  server memory after GC  start: rss ${mb(baseline.rss)} heap ${mb(baseline.heap)}  ·  after ${half} turns: rss ${mb(middle.rss)} heap ${mb(middle.heap)}  ·  after ${TURNS}: rss ${mb(end.rss)} heap ${mb(end.heap)}`)
const why = values.fleet === true ? 'the server holds no session (a worker process runs them); the streams hold nothing per event' : "the hosted sessions' own in-memory logs grow with their events; the streams hold nothing per event"
console.log(`  heap growth over the second half: ${mb(end.heap - middle.heap)} (${why})`)
process.exit(failures === 0 ? 0 : 1)
