/**
 * Load time of a big session. Builds a session of `--events` events (default 1,000,000; the store-throughput
 * mix: per 25 events a step/start, a request/context, 22 text chunks of one block and a step/end) once per
 * store into a cache folder, then times, each in a FRESH process (cold JIT, warm page cache), the store's
 * `read()` plus adopting the result into a Session (wall and the process's CPU time: the machine may be
 * shared), and `harness.resumeAgent()` end to end.
 *
 *   npm run build && npx tsx bench/micro/load-1m.ts [--events 1000000] [--runs 3] [--dist dist] [--cache /tmp/ll-load]
 *
 * `--dist` points at a build (e.g. main's dist copied to a temp folder, with node_modules linked beside it)
 * to measure another version on the same files.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { JsonValue, SessionEvent, SessionStore } from '../../src/index.js'

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    runs: { type: 'string', default: '3' },
    dist: { type: 'string', default: 'dist' },
    cache: { type: 'string', default: '/tmp/ll-load' },
    child: { type: 'string' },
  },
})
const size = Number(values.events)
const dist = isAbsolute(values.dist) ? values.dist : join(process.cwd(), values.dist)
const cache = join(values.cache, String(size))
type Kind = 'jsonl' | 'sqlite'
type Lib = typeof import('../../src/index.js')
const load = async (): Promise<{ lib: Lib; SqliteStore: typeof import('../../src/store/sqlite.js').SqliteStore }> => ({
  lib: (await import(pathToFileURL(join(dist, 'index.js')).href)) as Lib,
  SqliteStore: ((await import(pathToFileURL(join(dist, 'store/sqlite.js')).href)) as typeof import('../../src/store/sqlite.js')).SqliteStore,
})

async function open(kind: Kind): Promise<SessionStore> {
  const { lib, SqliteStore } = await load()
  return kind === 'jsonl' ? new lib.JsonlStore({ dir: join(cache, 'jsonl') }) : new SqliteStore({ path: join(cache, 'sessions.db') })
}

async function build(kind: Kind): Promise<void> {
  const { lib } = await load()
  const store = await open(kind)
  if (await store.has('big')) return store.close()
  const writer = await store.create(new lib.Session({ id: 'big' }).header)
  let seq = 0
  const push = (type: string, data: JsonValue): void => {
    writer.append(Object.freeze({ type, seq, time: 1_700_000_000_000 + seq, data }) as SessionEvent)
    seq++
  }
  push('turn/start', { turn: 1 })
  for (let step = 1; seq < size - 1; step++) {
    push('step/start', { turn: 1, step })
    push('request/context', { provider: 'p', model: 'm' })
    for (let i = 0; i < 22 && seq < size - 2; i++) push('assistant/chunk', { turn: 1, step, chunk: { type: 'text-delta', index: 0, text: 'some streamed words ' } })
    push('step/end', { turn: 1, step })
    if (step % 400 === 0) await writer.flush()
  }
  await writer.close()
  await store.close()
}

// One measurement in this (fresh) process: prints JSON {read, adopt, resume} in ms.
async function child(kind: Kind): Promise<void> {
  const { lib } = await load()
  const store = await open(kind)
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  const stored = await store.read('big')
  const t1 = performance.now()
  // The compact log when the store gives one (this version), else the events (older versions).
  const log = (stored as { log?: unknown }).log
  const session = new lib.Session({ id: 'big', header: stored.header, ...(log !== undefined ? { log } : { seed: stored.events }) } as never)
  const t2 = performance.now()
  const cpu = process.cpuUsage(c0)
  if (session.length < size - 1) throw new Error(`loaded ${session.length} events`)
  await store.close()
  const harness = lib.createHarness({ store: await open(kind) })
  const t3 = performance.now()
  const agent = await harness.resumeAgent('big', { provider: 'p', model: 'm' })
  const t4 = performance.now()
  const rss = process.memoryUsage().rss
  await agent.dispose()
  await harness.close()
  console.log(JSON.stringify({ read: t1 - t0, adopt: t2 - t0, adoptCpu: (cpu.user + cpu.system) / 1000, resume: t4 - t3, rssMiB: rss / 1048576, compact: log !== undefined }))
}

if (values.child !== undefined) {
  await child(values.child as Kind)
} else {
  mkdirSync(cache, { recursive: true })
  for (const kind of ['jsonl', 'sqlite'] as const) {
    if (!existsSync(join(cache, kind === 'jsonl' ? 'jsonl/big.jsonl' : 'sessions.db'))) console.error(`building the ${size.toLocaleString('en')}-event ${kind} session in ${cache} …`)
    await build(kind)
  }
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
  console.log(`load of a ${size.toLocaleString('en')}-event session, ${dist}, fresh process per run, median of ${values.runs}:`)
  for (const kind of ['jsonl', 'sqlite'] as const) {
    const rows: { read: number; adopt: number; adoptCpu: number; resume: number; rssMiB: number; compact: boolean }[] = []
    for (let r = 0; r < Number(values.runs); r++) {
      const out = execFileSync(process.execPath, [...process.execArgv, process.argv[1] as string, '--child', kind, '--events', String(size), '--dist', dist, '--cache', values.cache], { encoding: 'utf8' })
      rows.push(JSON.parse(out.trim().split('\n').pop() as string))
    }
    const m = (k: 'read' | 'adopt' | 'adoptCpu' | 'resume' | 'rssMiB'): string => median(rows.map((x) => x[k])).toFixed(0).padStart(6)
    console.log(`  ${kind.padEnd(6)} read ${m('read')} ms   read + adopt into a Session ${m('adopt')} ms (CPU ${m('adoptCpu')} ms)   resumeAgent ${m('resume')} ms   RSS after resume ${m('rssMiB')} MiB${rows[0]?.compact ? '' : '  (events path)'}`)
  }
}
