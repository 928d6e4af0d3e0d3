/**
 * Forking a long session (issue 30, target 7): the original harness takes ~20 s to fork an 84,467-event
 * session. Builds, once per store into a cache folder, a session through the loop (scripted model, turns of one
 * step streaming 125 reasoning and 500 text deltas: the original's benchmark shape) of about `--events` events,
 * then times in FRESH processes, alternating: the floor — reading the session and parsing every event (JSONL:
 * `readFileSync` + `JSON.parse` of each line; SQLite: `SELECT` of its rows with better-sqlite3 + `JSON.parse`) —
 * and `harness.forkSession(id)` end to end (open the store, read, check, write the child durably, close).
 * Target: fork ≤ 1.5× the floor.
 *
 *   npm run build && npx tsx bench/micro/fork.ts [--events 84467] [--runs 5] [--store jsonl|sqlite|both] [--json]
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
// The full bench's result-line prefix (bench/src/protocol.ts; not imported: the root tsconfig checks this file).
const RESULT_PREFIX = '@@bench-result '

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '84467' },
    runs: { type: 'string', default: '5' },
    store: { type: 'string', default: 'both' },
    cache: { type: 'string', default: '/tmp/ll-fork' },
    json: { type: 'boolean', default: false },
    child: { type: 'string' },
  },
})
const size = Number(values.events)
const dist = join(process.cwd(), 'dist')
const cache = join(values.cache, String(size))
type Kind = 'jsonl' | 'sqlite'
type Lib = typeof import('../../src/index.js')
const lib = async (): Promise<Lib> => (await import(pathToFileURL(join(dist, 'index.js')).href)) as Lib
const sqliteStore = async (): Promise<typeof import('../../src/store/sqlite.js').SqliteStore> =>
  ((await import(pathToFileURL(join(dist, 'store/sqlite.js')).href)) as typeof import('../../src/store/sqlite.js')).SqliteStore

async function open(kind: Kind): Promise<import('../../src/index.js').SessionStore> {
  const l = await lib()
  return kind === 'jsonl' ? new l.JsonlStore({ dir: join(cache, 'jsonl') }) : new (await sqliteStore())({ path: join(cache, 'sessions.db') })
}

// Turns of one step: 125 reasoning deltas, 500 text deltas, no tool call (≈ 632 events a turn with the envelope).
async function build(kind: Kind): Promise<void> {
  const l = await lib()
  const store = await open(kind)
  if (await store.has('long')) return store.close()
  const reasoning = Array.from({ length: 125 }, (_, i) => `think${i} `)
  const text = Array.from({ length: 500 }, (_, i) => `word${i} `)
  const turns = Math.max(1, Math.round(size / 632))
  const script = Array.from({ length: turns }, () => ({ reasoning, text, usage: { inputTokens: 100, outputTokens: 50 } }))
  const harness = l.createHarness({ store, adapters: [l.scriptedAdapter({ recordRequests: false, script })] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'bench', sessionId: 'long' })
  for (let t = 0; t < turns; t++) await agent.run(`prompt ${t}`)
  await harness.close()
}

async function child(kind: Kind, what: 'floor' | 'fork'): Promise<void> {
  // Module loading is process start, not work: both sides load what they use before the clock starts.
  const { default: Database } = await import('better-sqlite3')
  if (what === 'fork') await open(kind).then((s) => s.close())
  const t0 = performance.now()
  let events = 0
  if (what === 'floor') {
    if (kind === 'jsonl') {
      const dir = join(cache, 'jsonl')
      const file = readdirSync(dir).find((f) => f.startsWith('long') && f.endsWith('.jsonl')) as string
      for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) if (line !== '') (JSON.parse(line), events++)
    } else {
      const db = new Database(join(cache, 'sessions.db'), { readonly: true })
      for (const row of db.prepare('SELECT line FROM events WHERE session_id = ? ORDER BY seq').iterate('long') as Iterable<{ line: string }>) (JSON.parse(row.line), events++)
      db.close()
    }
  } else {
    const l = await lib()
    const store = await open(kind)
    const harness = l.createHarness({ store })
    const id = await harness.forkSession('long')
    await harness.close()
    const t1 = performance.now()
    // Remove the child so the fixture stays one session (untimed): SQLite by its rows, JSONL by its files.
    if (kind === 'jsonl') {
      for (const f of readdirSync(join(cache, 'jsonl'))) if (f.startsWith(id)) rmSync(join(cache, 'jsonl', f), { force: true })
    } else {
      const db = new Database(join(cache, 'sessions.db'))
      db.prepare('DELETE FROM sessions WHERE id = ?').run(id)
      db.close()
    }
    console.log(JSON.stringify({ ms: t1 - t0, events }))
    return
  }
  console.log(JSON.stringify({ ms: performance.now() - t0, events }))
}

if (values.child !== undefined) {
  const [kind, what] = values.child.split(':') as [Kind, 'floor' | 'fork']
  await child(kind, what)
} else {
  const kinds: Kind[] = values.store === 'both' ? ['jsonl', 'sqlite'] : [values.store as Kind]
  const runs = Number(values.runs)
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
  const rows: object[] = []
  for (const kind of kinds) {
    if (!existsSync(cache)) mkdirSync(cache, { recursive: true })
    await build(kind)
    const measure = (what: string): number => JSON.parse(execFileSync(process.execPath, [...process.execArgv, process.argv[1] as string, '--events', String(size), '--cache', values.cache, '--child', `${kind}:${what}`], { encoding: 'utf8' }).trim().split('\n').at(-1) as string).ms as number
    measure('floor')
    measure('fork')
    const ratios: number[] = []
    const floors: number[] = []
    const forks: number[] = []
    for (let r = 0; r < runs; r++) {
      const [f, k] = r % 2 === 0 ? [measure('floor'), measure('fork')] : (([k2, f2]) => [f2, k2])([measure('fork'), measure('floor')])
      floors.push(f as number)
      forks.push(k as number)
      ratios.push((k as number) / (f as number))
    }
    const sorted = [...ratios].sort((a, b) => a - b)
    if (!values.json) console.log(`${kind.padEnd(6)} ~${size} events: floor (read + parse) ${median(floors).toFixed(0)} ms · forkSession ${median(forks).toFixed(0)} ms · fork ÷ floor ${median(ratios).toFixed(2)}× (${sorted[0]?.toFixed(2)}–${sorted.at(-1)?.toFixed(2)}, ${runs} runs)`)
    rows.push({ target: `fork of a long session ≤ 1.5× reading it (${kind})`, at: `~${size.toLocaleString('en-US')} events, fresh processes`, measured: median(ratios), spread: `${sorted[0]?.toFixed(2)}–${sorted.at(-1)?.toFixed(2)}`, limit: 1.5, notes: `floor ${median(floors).toFixed(0)} ms, fork ${median(forks).toFixed(0)} ms` })
  }
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: true, rows }))
}
