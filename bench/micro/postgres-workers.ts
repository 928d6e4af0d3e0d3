/**
 * PostgreSQL rows (issue 12). Not a test; numbers depend on the machine and on whatever else shares it.
 *
 *   npx tsx bench/micro/postgres-workers.ts [--workers 1,2,4] [--sessions 40] [--turns 5] [--steps 300]
 *     [--per-step-only] [--floor-first] [--json]
 *
 * 1. Turns per second against worker processes: `--sessions` sessions each get `--turns` followups through the
 *    inbox; N worker processes (concurrency 4 each) serve them with a scripted model that waits 50 ms per
 *    request (I/O-bound, as with a real model) and one tool call per turn (two requests per turn).
 * 2. Per-step cost of PostgresStore (append a step's ~25 events, flush: one statement with the epoch check)
 *    next to a floor of the same rows inserted directly with `pg` (one multi-row INSERT per step, autocommit).
 *    Both build their steps' events before the clock starts; the store's time includes encoding them, the
 *    floor's rows are encoded beforehand.
 *
 * `--per-step-only` skips part 1; `--floor-first` times the floor before the store (the bench runner alternates
 * it between rounds); `--json` ends with one `@@bench-result {"ok":true,"storeMs":…,"floorMs":…}` line.
 *
 * Needs PostgreSQL at 127.0.0.1:5432 (or LEDGERLOOP_TEST_PG_URL); creates and drops a scratch database.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { Session, type SessionEvent } from '../../src/index.js'
import { PostgresStore } from '../../src/postgres.js'
import { encodeRows } from '../../src/store/postgres/stored-events.js'
import { createScratchDatabase } from '../../test/store/postgres-scratch.js'
import { bundleChild } from '../../test/worker/takeover-runner.js'

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '1,2,4' },
    sessions: { type: 'string', default: '40' },
    turns: { type: 'string', default: '5' },
    steps: { type: 'string', default: '300' },
    'per-step-only': { type: 'boolean', default: false },
    'floor-first': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
})
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

async function turnsPerSecond(url: string, childFile: string, dir: string, workers: number): Promise<{ turns: number; seconds: number }> {
  const schema = `bench_w${workers}`
  const store = new PostgresStore({ connectionString: url, schema })
  await store.ready()
  const sessions = Number(values.sessions)
  const turns = Number(values.turns)
  for (let i = 0; i < sessions; i++) await store.createDetached(new Session({ id: `b${i}` }).header)
  const children = Array.from({ length: workers }, (_, n) =>
    spawn(process.execPath, [childFile, url, schema, join(dir, `side-${workers}.txt`), `w${n}`, '10000', '50', '4'], { stdio: ['ignore', 'pipe', 'inherit'] }),
  )
  await Promise.all(children.map((c) => new Promise<void>((r) => c.stdout.once('data', () => r()))))
  const started = Date.now()
  for (let t = 0; t < turns; t++) for (let i = 0; i < sessions; i++) await store.send(`b${i}`, { kind: 'followup', message: `turn ${t + 1}` })
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  let done = 0
  for (;;) {
    const r = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".events WHERE type = 'turn/end'`)
    done = (r.rows[0] as { n: number }).n
    if (done >= sessions * turns) break
    await sleep(20)
  }
  const seconds = (Date.now() - started) / 1000
  for (const c of children) c.kill('SIGTERM')
  await Promise.all(children.map((c) => new Promise<void>((r) => (c.exitCode !== null ? r() : c.once('exit', () => r())))))
  await pool.end()
  await store.close()
  return { turns: done, seconds }
}

/** A step's 25 events, as the session appended them (no copy of the whole log: `session.events` would be one). */
function stepEvents(session: Session, step: number): SessionEvent[] {
  const events = [session.append('session/title', { title: `step ${step}` })]
  for (let i = 0; i < 23; i++) events.push(session.append('session/title', { title: `chunk ${i}` }))
  events.push(session.append('session/title', { title: `end ${step}` }))
  return events
}

async function storePerStep(url: string, steps: number): Promise<number> {
  const store = new PostgresStore({ connectionString: url, schema: 'bench_step' })
  await store.ready()
  const session = new Session({ id: 'step' })
  const writer = await store.create(session.header)
  const warm = stepEvents(session, 0)
  for (const e of warm) writer.append(e)
  await writer.flush()
  // Built before the clock starts, as the floor's rows are: making the events is the session's work, not the store's.
  const batches = Array.from({ length: steps }, (_, s) => stepEvents(session, s + 1))
  const t = performance.now()
  for (const batch of batches) {
    for (const e of batch) writer.append(e)
    await writer.flush()
  }
  const storeMs = (performance.now() - t) / steps
  await writer.close()
  await store.close()
  return storeMs
}

async function floorPerStep(url: string, steps: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  await pool.query('CREATE TABLE floor_events (session_id text NOT NULL, seq integer NOT NULL, type text NOT NULL, data text NOT NULL, PRIMARY KEY (session_id, seq))')
  const floorSession = new Session({ id: 'floor' })
  const batches = Array.from({ length: steps }, (_, s) => encodeRows(stepEvents(floorSession, s), true))
  const t = performance.now()
  for (const rows of batches) {
    await pool.query('INSERT INTO floor_events (session_id, seq, type, data) SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[])', ['floor', rows.seqs, rows.types, rows.data])
  }
  const floorMs = (performance.now() - t) / steps
  await pool.end()
  return floorMs
}

async function perStep(url: string): Promise<{ store: number; floor: number }> {
  const steps = Number(values.steps)
  if (values['floor-first']) {
    const floor = await floorPerStep(url, steps)
    return { store: await storePerStep(url, steps), floor }
  }
  const store = await storePerStep(url, steps)
  return { store, floor: await floorPerStep(url, steps) }
}

const db = await createScratchDatabase('ll_bench')
const dir = mkdtempSync(join(tmpdir(), 'll-pg-bench-'))
try {
  console.log(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  if (!values['per-step-only']) {
    const childFile = await bundleChild(dir)
    console.log('| worker processes | turns | seconds | turns/s |')
    console.log('| ---: | ---: | ---: | ---: |')
    for (const n of values.workers.split(',').map(Number)) {
      const r = await turnsPerSecond(db.url, childFile, dir, n)
      console.log(`| ${n} | ${r.turns} | ${r.seconds.toFixed(2)} | ${(r.turns / r.seconds).toFixed(1)} |`)
    }
  }
  const step = await perStep(db.url)
  console.log('')
  console.log('| per step (25 events, one flush) | ms |')
  console.log('| --- | ---: |')
  console.log(`| PostgresStore append + flush (epoch-checked statement) | ${step.store.toFixed(3)} |`)
  console.log(`| floor: the same rows, one INSERT with pg | ${step.floor.toFixed(3)} |`)
  console.log(`load average at end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  if (values.json) console.log(`@@bench-result ${JSON.stringify({ ok: true, storeMs: step.store, floorMs: step.floor, steps: Number(values.steps) })}`)
} finally {
  rmSync(dir, { recursive: true, force: true })
  await db.drop()
}
