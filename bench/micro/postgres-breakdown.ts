/**
 * Where a PostgresStore step goes (issue 15). Not a test; numbers depend on the machine and on whatever else
 * shares it. Every variant writes the same 25-event steps (built and, except for `store`, encoded before the
 * clock starts) through one pooled connection, one statement per step, autocommit:
 *
 *   npx tsx bench/micro/postgres-breakdown.ts [--steps 300] [--rounds 5] [--only floor,store,…]
 *
 * - `floor`: the rows in one INSERT into a table with the same primary key (what postgres-workers.ts times);
 *   `floor-named`: the same as a named (prepared) statement.
 * - `floor-fk`: the same INSERT into a table with schema 2's foreign key to `sessions` (checked per row).
 * - `flush-unnamed`: the store's flush statement sent unnamed (parsed and planned every time, as before);
 *   `flush`: named, as the store sends it; `flush-no-notify`: without `pg_notify`; `flush-hot`: without
 *   touching the indexed `updated_at` / `lease_until`, so the `sessions` update can be HOT.
 * - `store`: `PostgresStore` itself: append the step's events, flush (encoding included).
 *
 * For each: median wall time per step over the rounds, the client's CPU per step (`process.cpuUsage`), the
 * server backends' CPU per step (`/proc/<pid>/stat` of this database's backends: only when the server is
 * local; 10 ms ticks) and WAL bytes per step. Needs PostgreSQL at 127.0.0.1:5432 (or LEDGERLOOP_TEST_PG_URL);
 * creates and drops a scratch database.
 */
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { Session, type SessionEvent } from '../../src/index.js'
import { PostgresStore } from '../../src/postgres.js'
import { encodeRows, type EncodedRows } from '../../src/store/postgres/stored-events.js'
import { createScratchDatabase } from '../../test/store/postgres-scratch.js'

const { values } = parseArgs({
  options: { steps: { type: 'string', default: '300' }, rounds: { type: 'string', default: '5' }, only: { type: 'string' } },
})
const steps = Number(values.steps)
const rounds = Number(values.rounds)

interface Figures {
  wall: number
  client: number
  server: number
  wal: number
}

/** A step's 25 events, as the session appended them (no copy of the whole log: `session.events` would be one). */
function stepEvents(session: Session, step: number): SessionEvent[] {
  const events = [session.append('session/title', { title: `step ${step}` })]
  for (let i = 0; i < 23; i++) events.push(session.append('session/title', { title: `chunk ${i}` }))
  events.push(session.append('session/title', { title: `end ${step}` }))
  return events
}

function allSteps(id: string): SessionEvent[][] {
  const session = new Session({ id })
  return Array.from({ length: steps }, (_, s) => stepEvents(session, s))
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number

const db = await createScratchDatabase('ll_breakdown')
try {
  const pool = new pg.Pool({ connectionString: db.url, max: 1 })
  const admin = new pg.Pool({ connectionString: db.url, max: 1 })
  const store = new PostgresStore({ connectionString: db.url, schema: 'breakdown' })
  await store.ready()
  const t = store.tables
  const columns = 'seq integer NOT NULL, type text NOT NULL, data text NOT NULL, PRIMARY KEY (session_id, seq)'
  await pool.query(`CREATE TABLE floor_events (session_id text NOT NULL, ${columns})`)
  await pool.query(`CREATE TABLE floor_fk (session_id text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE, ${columns})`)
  let sessions = 0

  const serverTicks = async (): Promise<number> => {
    const pids = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')
    let ticks = 0
    for (const { pid } of pids.rows) {
      try {
        const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ')
        ticks += Number(fields[11]) + Number(fields[12])
      } catch {
        // not a local server, or the backend just left
      }
    }
    return ticks
  }
  const timed = async (body: () => Promise<void>): Promise<Figures> => {
    const lsn = (await admin.query<{ l: string }>('SELECT pg_current_wal_insert_lsn()::text AS l')).rows[0]?.l
    const ticks = await serverTicks()
    const cpu = process.cpuUsage()
    const started = performance.now()
    await body()
    const wall = (performance.now() - started) / steps
    const used = process.cpuUsage(cpu)
    const server = ((await serverTicks()) - ticks) * 10
    const wal = await admin.query<{ b: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::text AS b', [lsn])
    return { wall, client: (used.user + used.system) / 1000 / steps, server: server / steps, wal: Number(wal.rows[0]?.b) / steps }
  }
  const encoded = (id: string): EncodedRows[] => allSteps(id).map((events) => encodeRows(events, true))
  const newSession = async (): Promise<string> => {
    const id = `s${sessions++}`
    await store.createDetached(new Session({ id }).header)
    await pool.query(`UPDATE ${t.sessions} SET owner = 'breakdown', epoch = 1, lease_until = now() + interval '1 hour' WHERE id = $1`, [id])
    return id
  }
  const insert = (table: string, named: boolean) => async (): Promise<Figures> => {
    const id = await newSession()
    const batches = encoded(id)
    const text = `INSERT INTO ${table} (session_id, seq, type, data) SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[])`
    return timed(async () => {
      for (const r of batches) await pool.query(named ? { name: `insert_${table}`, text, values: [id, r.seqs, r.types, r.data] } : { text, values: [id, r.seqs, r.types, r.data] })
    })
  }
  // The store's flush statement (schema 3, no inbox rows), with the parts a variant leaves out.
  const flush = (name: string | undefined, notify: boolean, touchIndexed: boolean) => async (): Promise<Figures> => {
    const id = await newSession()
    const batches = encoded(id)
    const lease = touchIndexed ? `updated_at = now(), lease_until = now() + $4 * interval '1 millisecond',` : `lease_until = lease_until + 0 * $4 * interval '1 millisecond',`
    const text = `WITH f AS (
         UPDATE ${t.sessions} SET head_seq = $3, ${lease} status = COALESCE($5, status), title = COALESCE(title, $6)
         WHERE id = $1 AND epoch = $2 AND head_seq = $7 RETURNING id),
       e AS (INSERT INTO ${t.events} (session_id, seq, type, data)
         SELECT f.id, r.seq, r.type, r.data FROM f, unnest($8::int[], $9::text[], $10::text[]) AS r(seq, type, data))
       SELECT ${notify ? `pg_notify($11, f.id || ' ' || $3)` : '$11::text, $3::int'} FROM f`
    let head = 0
    return timed(async () => {
      for (const r of batches) {
        const first = head
        head += r.seqs.length
        const params = [id, 1, head, 30_000, null, null, first, r.seqs, r.types, r.data, t.eventsChannel]
        const done = await pool.query(name === undefined ? { text, values: params } : { name, text, values: params })
        if (done.rowCount !== 1) throw new Error('the flush statement matched no session row')
      }
    })
  }
  const viaStore = async (): Promise<Figures> => {
    const session = new Session({ id: `s${sessions++}` })
    const writer = await store.create(session.header)
    const batches = Array.from({ length: steps }, (_, s) => stepEvents(session, s))
    try {
      return await timed(async () => {
        for (const batch of batches) {
          for (const e of batch) writer.append(e)
          await writer.flush()
        }
      })
    } finally {
      await writer.close()
    }
  }

  const variants: Record<string, () => Promise<Figures>> = {
    floor: insert('floor_events', false),
    'floor-named': insert('floor_events', true),
    'floor-fk': insert('floor_fk', false),
    'flush-unnamed': flush(undefined, true, true),
    flush: flush('flush', true, true),
    'flush-no-notify': flush('flush_no_notify', false, true),
    'flush-hot': flush('flush_hot', true, false),
    store: viaStore,
  }
  const only = values.only?.split(',')
  const results = new Map<string, Figures[]>()
  console.log(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  for (let round = 0; round < rounds; round++) {
    for (const [name, run] of Object.entries(variants)) {
      if (only !== undefined && !only.includes(name)) continue
      const list = results.get(name) ?? []
      list.push(await run())
      results.set(name, list)
    }
  }
  console.log(`| per step (${steps} steps, median of ${rounds} rounds) | wall ms | client CPU ms | server CPU ms | WAL bytes |`)
  console.log('| --- | ---: | ---: | ---: | ---: |')
  for (const [name, list] of results) {
    const m = (pick: (f: Figures) => number): number => median(list.map(pick))
    console.log(`| ${name} | ${m((f) => f.wall).toFixed(3)} | ${m((f) => f.client).toFixed(3)} | ${m((f) => f.server).toFixed(3)} | ${m((f) => f.wal).toFixed(0)} |`)
  }
  console.log(`load average at end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  await store.close()
  await pool.end()
  await admin.end()
} finally {
  await db.drop()
}
