/**
 * Content search (issue 30, target 6): `store.list({ grep, limit: 20 })` over `--sessions` sessions of the
 * original harness's budget shape (`--turns` turns, each one step streaming 125 reasoning and 500 text deltas),
 * and what keeping the content index costs per step.
 *
 * Fixture (built once per store into `--cache`): one session recorded through the loop with the scripted
 * adapter, then stored `--sessions` times under new ids with `store.create(header, seed)` (the public store
 * API, so each store's own index is built the way a fork's seed is), each session's prompts saying which session
 * it is and one session's last prompt holding a rare word. Search is then timed in FRESH processes (open the
 * store, one `list`, as `ledgerloop sessions --grep` does), median of `--runs`:
 *
 * - rare: a word in one prompt of one session (the usual search: something remembered);
 * - common: a word in every answer of every session (every session matches; the first 20 are listed, all counted);
 * - absent: text made of words every session holds, in an order none does (each session must be read: the worst case).
 *
 * Index cost per step: `--steps` steps of the same shape written through the loop into a fresh store, with the
 * content index and without it (JSONL: its writer switched off; SQLite and PostgreSQL: their trigger dropped),
 * alternating, median ratio of ms per step.
 *
 * PostgreSQL (127.0.0.1:5432, trust, or LEDGERLOOP_TEST_PG_URL): the fixture lives in its own database named after
 * the shape (`ll_bench_grep_<sessions>x<turns>…`, kept as the cache is; drop it by hand to rebuild); each step
 * run uses a scratch database dropped after it. A PostgreSQL that cannot be reached is reported and skipped.
 *
 *   npm run build && npx tsx bench/micro/content-search.ts [--sessions 1000] [--turns 200] [--runs 5] [--steps 20] [--store jsonl,sqlite,postgres] [--json]
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { ADMIN_URL, createScratchDatabase } from '../../test/store/postgres-scratch.js'
// The full bench's result-line prefix (bench/src/protocol.ts; not imported: the root tsconfig checks this file).
const RESULT_PREFIX = '@@bench-result '

const { values } = parseArgs({
  options: {
    sessions: { type: 'string', default: '1000' },
    turns: { type: 'string', default: '200' },
    text: { type: 'string', default: '500' },
    reasoning: { type: 'string', default: '125' },
    runs: { type: 'string', default: '5' },
    steps: { type: 'string', default: '20' },
    store: { type: 'string', default: 'jsonl,sqlite,postgres' },
    cache: { type: 'string', default: '/tmp/ll-content-search' },
    json: { type: 'boolean', default: false },
    child: { type: 'string' },
  },
})
const sessions = Number(values.sessions)
const turns = Number(values.turns)
const textDeltas = Number(values.text)
const reasoningDeltas = Number(values.reasoning)
const dist = join(process.cwd(), 'dist')
const cache = join(values.cache, `${sessions}x${turns}x${textDeltas}+${reasoningDeltas}`)
type Kind = 'jsonl' | 'sqlite' | 'postgres'
type Lib = typeof import('../../src/index.js')
const lib = async (): Promise<Lib> => (await import(pathToFileURL(join(dist, 'index.js')).href)) as Lib
const sqliteStore = async (): Promise<typeof import('../../src/store/sqlite.js').SqliteStore> =>
  ((await import(pathToFileURL(join(dist, 'store/sqlite.js')).href)) as typeof import('../../src/store/sqlite.js')).SqliteStore
const postgresStore = async (): Promise<typeof import('../../src/store/postgres.js').PostgresStore> =>
  ((await import(pathToFileURL(join(dist, 'postgres.js')).href)) as typeof import('../../src/postgres.js')).PostgresStore
// The PostgreSQL fixture's database: one per shape, like the cache directory.
const PG_FIXTURE = `ll_bench_grep_${sessions}x${turns}x${textDeltas}_${reasoningDeltas}`
function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return url.toString()
}
async function onAdmin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL })
  await client.connect()
  try {
    return await run(client)
  } finally {
    await client.end()
  }
}
const RARE_SESSION = Math.floor(sessions * 0.37)
const NEEDLES = { rare: `quokka-${RARE_SESSION}`, common: 'word250 word251', absent: 'word499 word0 word1' } as const
type NeedleKind = keyof typeof NEEDLES

async function open(kind: Kind, root = cache): Promise<import('../../src/index.js').SessionStore> {
  const l = await lib()
  if (kind === 'postgres') return new (await postgresStore())({ connectionString: databaseUrl(PG_FIXTURE), poolSize: 2 })
  return kind === 'jsonl' ? new l.JsonlStore({ dir: join(root, 'jsonl'), fsync: 'interval' }) : new (await sqliteStore())({ path: join(root, 'sessions.db') })
}

function script(n: number): { reasoning: string[]; text: string[] }[] {
  const step = {
    reasoning: Array.from({ length: reasoningDeltas }, (_, i) => `thinking ${i} `),
    text: Array.from({ length: textDeltas }, (_, i) => `word${i} `),
  }
  return Array.from({ length: n }, () => step)
}

// The recorded session's events, as a seed for every fixture session (prompts rewritten per session).
async function recorded(): Promise<{ header: import('../../src/index.js').SessionHeader; events: import('../../src/index.js').SessionEvent[] }> {
  const l = await lib()
  const root = join(values.cache, `recorded-${turns}x${textDeltas}+${reasoningDeltas}`)
  const store = new l.JsonlStore({ dir: root, fsync: 'interval' })
  if (!(await store.has('big'))) {
    console.error(`recording ${turns} turns …`)
    const harness = l.createHarness({ store, adapters: [l.scriptedAdapter({ script: script(turns), models: { m1: { contextWindow: 10_000_000 } } })] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'big' })
    for (let t = 0; t < turns; t++) await agent.run(`prompt ${t}`)
    await harness.close()
  }
  const read = await new l.JsonlStore({ dir: root }).read('big')
  return { header: read.header, events: read.events }
}

async function build(kind: Kind): Promise<void> {
  const marker = join(cache, `${kind}.done`)
  if (kind === 'postgres') {
    const exists = await onAdmin(async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [PG_FIXTURE])).rowCount === 1)
    if (!exists) {
      rmSync(marker, { force: true })
      await onAdmin((c) => c.query(`CREATE DATABASE "${PG_FIXTURE}"`))
    }
  }
  if (existsSync(marker)) return
  mkdirSync(cache, { recursive: true })
  const { header, events } = await recorded()
  const store = await open(kind)
  const t0 = performance.now()
  for (let i = 0; i < sessions; i++) {
    const id = `s${String(i).padStart(5, '0')}`
    if (await store.has(id)) continue
    let turn = 0
    const seed = events.map((e) => {
      if (e.type !== 'user/message') return e
      const t = turn++
      const extra = i === RARE_SESSION && t === turns - 1 ? ` about the Quokka-${i} plan` : ''
      return { ...e, data: { ...e.data, content: [{ type: 'text' as const, text: `prompt ${t} of session ${i}${extra}` }] } } as typeof e
    })
    const writer = await store.create({ ...header, id }, seed)
    await writer.close()
    if (i % 50 === 49) console.error(`${kind}: ${i + 1}/${sessions} sessions (${((performance.now() - t0) / 1000).toFixed(0)} s)`)
  }
  await store.close()
  execFileSync('touch', [marker])
}

// One search in this fresh process: open the store, one list, close; prints {ms, total, first}.
async function searchChild(kind: Kind, needle: NeedleKind): Promise<void> {
  await lib()
  if (kind === 'sqlite') await sqliteStore()
  if (kind === 'postgres') await postgresStore()
  const t0 = performance.now()
  const store = await open(kind)
  const rows = await store.list({ grep: NEEDLES[needle], limit: 20 })
  const ms = performance.now() - t0
  await store.close()
  console.log(JSON.stringify({ ms, total: rows.total, first: rows[0]?.id, part: rows[0]?.match?.part }))
}

// ms per step of `--steps` steps of the shape, in a fresh store, with or without the content index.
async function stepChild(kind: Kind, indexing: boolean): Promise<void> {
  const l = await lib()
  const root = mkdtempSync(join(tmpdir(), 'll-content-step-'))
  const cleanups: (() => Promise<unknown>)[] = []
  try {
    if (!indexing && kind === 'jsonl') {
      const { ContentIndex } = (await import(pathToFileURL(join(dist, 'store/jsonl/content-index.js')).href)) as typeof import('../../src/store/jsonl/content-index.js')
      ContentIndex.prototype.start = () => undefined
      ContentIndex.prototype.resume = () => undefined
    }
    const scratch = kind === 'postgres' ? await createScratchDatabase('ll_bench_grep_step') : undefined
    cleanups.push(async () => scratch?.drop())
    const store =
      scratch !== undefined
        ? new (await postgresStore())({ connectionString: scratch.url, poolSize: 2 })
        : kind === 'jsonl'
          ? new l.JsonlStore({ dir: join(root, 'jsonl') })
          : new (await sqliteStore())({ path: join(root, 'sessions.db') })
    if (!indexing && scratch !== undefined) {
      // The store makes its schema on first use: list once, then drop the trigger that keeps the content table.
      await store.list({ limit: 1 })
      const client = new pg.Client({ connectionString: scratch.url })
      await client.connect()
      await client.query('DROP TRIGGER events_content ON "ledgerloop".events')
      await client.end()
    }
    if (!indexing && kind === 'sqlite') {
      // The store writes the texts itself (schema version 5): once it has made its schema, its content table
      // becomes a view whose inserts do nothing, so no text is stored or indexed. What is left of the index's
      // cost on this side is the texts' extraction in JS and one no-op insert per searchable event.
      await store.list({ limit: 1 })
      const { default: Database } = await import('better-sqlite3')
      const db = new Database(join(root, 'sessions.db'))
      db.exec(`
        DROP TRIGGER events_content_delete; DROP TRIGGER content_text_insert; DROP TRIGGER content_text_delete;
        DROP TABLE content_fts; DROP TABLE content_text;
        CREATE VIEW content_text (session_id, seq, part, body) AS SELECT NULL, NULL, NULL, NULL WHERE 0;
        CREATE TRIGGER content_text_discard INSTEAD OF INSERT ON content_text BEGIN SELECT 1; END;
      `)
      db.close()
    }
    const steps = Number(values.steps)
    const harness = l.createHarness({ store, adapters: [l.scriptedAdapter({ recordRequests: false, script: script(steps + 1), models: { m1: { contextWindow: 10_000_000 } } })] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'steps' })
    await agent.run('warm up')
    const t0 = performance.now()
    for (let s = 0; s < steps; s++) await agent.run(`prompt ${s}`)
    const ms = (performance.now() - t0) / steps
    await harness.close()
    console.log(JSON.stringify({ ms }))
  } finally {
    for (const cleanup of cleanups) await cleanup()
    rmSync(root, { recursive: true, force: true })
  }
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
const spread = (xs: readonly number[], digits = 1): string => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`

function run(child: string): Record<string, unknown> {
  const args = [...process.execArgv, process.argv[1] as string, '--sessions', String(sessions), '--turns', String(turns), '--text', String(textDeltas), '--reasoning', String(reasoningDeltas), '--steps', values.steps, '--cache', values.cache, '--child', child]
  return JSON.parse(execFileSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 1 << 24 }).trim().split('\n').at(-1) as string) as Record<string, unknown>
}

if (values.child !== undefined) {
  const [what, kind, arg] = values.child.split(':') as ['search' | 'step', Kind, string]
  if (what === 'search') await searchChild(kind, arg as NeedleKind)
  else await stepChild(kind, arg === 'on')
} else {
  const kinds = values.store.split(',') as Kind[]
  const runs = Number(values.runs)
  const rows: object[] = []
  const at = `${sessions.toLocaleString('en-US')} sessions × ${turns} turns (${reasoningDeltas} reasoning + ${textDeltas} text deltas each), fresh process`
  for (const kind of kinds) {
    if (kind === 'postgres' && !(await onAdmin(async () => true).catch(() => false))) {
      console.error(`postgres: ${ADMIN_URL} cannot be reached; its rows are skipped`)
      continue
    }
    await build(kind)
    for (const needle of Object.keys(NEEDLES) as NeedleKind[]) {
      run(`search:${kind}:${needle}`) // page cache and first-search rebuilds out of the way
      const results = Array.from({ length: runs }, () => run(`search:${kind}:${needle}`))
      const ms = results.map((r) => r['ms'] as number)
      const total = results[0]?.['total']
      if (!values.json) console.log(`${kind.padEnd(8)} grep ${needle.padEnd(6)} ${JSON.stringify(NEEDLES[needle]).padEnd(22)} ${median(ms).toFixed(1)} ms (${spread(ms)}, ${runs} runs), ${String(total)} match(es)`)
      rows.push({
        target: `content search ≤ 100 ms (${kind}, ${needle} needle)`,
        at,
        measured: median(ms),
        unit: 'ms',
        spread: spread(ms),
        limit: 100,
        notes: `grep ${JSON.stringify(NEEDLES[needle])}, limit 20, ${String(total)} matching session(s)`,
      })
    }
    const on: number[] = []
    const off: number[] = []
    const ratios: number[] = []
    run(`step:${kind}:on`)
    for (let r = 0; r < runs; r++) {
      const [a, b] = r % 2 === 0 ? [run(`step:${kind}:on`), run(`step:${kind}:off`)] : (([y, x]) => [x, y])([run(`step:${kind}:off`), run(`step:${kind}:on`)])
      on.push(a?.['ms'] as number)
      off.push(b?.['ms'] as number)
      ratios.push((a?.['ms'] as number) / (b?.['ms'] as number))
    }
    if (!values.json) console.log(`${kind.padEnd(8)} step with the content index ${median(on).toFixed(2)} ms, without ${median(off).toFixed(2)} ms: ${median(ratios).toFixed(3)}× (${spread(ratios, 3)}, ${runs} pairs)`)
    rows.push({
      target: `index cost per step (${kind}): step with the content index ÷ without`,
      at: `${values.steps} steps of 125 reasoning + 500 text deltas, durable default store, fresh process each`,
      measured: median(ratios),
      spread: spread(ratios, 3),
      limit: 1.1,
      notes: `with ${median(on).toFixed(2)} ms/step, without ${median(off).toFixed(2)} ms/step; the 1.1× limit is this bench's own, the issue sets none`,
    })
  }
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: true, rows }))
}
