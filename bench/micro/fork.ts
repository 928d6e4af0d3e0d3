/**
 * Forking a long session (issue 30, target 7): the original harness takes ~20 s to fork an 84,467-event
 * session. Builds, once per store into a cache folder, a session through the loop (scripted model, turns of one
 * step streaming 125 reasoning and 500 text deltas: the original's benchmark shape) of about `--events` events,
 * then times in FRESH processes, alternating: the floor — reading the session and parsing every event (JSONL:
 * `readFileSync` + `JSON.parse` of each line; SQLite: `SELECT` of its rows with better-sqlite3 + `JSON.parse`) —
 * and `harness.forkSession(id)` end to end (read what the fork needs, check the point, write the child durably:
 * the stores copy the prefix's stored records, see docs/stores.md "Fork"). With `--path events` the fork is
 * made event by event instead (the store's copy capability hidden), the path every store had before.
 * Target: fork ≤ 1.5× the floor.
 *
 *   npm run build && npx tsx bench/micro/fork.ts [--events 84467] [--runs 5] [--store jsonl|sqlite|both] [--path copy|events] [--json]
 */
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { builtLibrary, median, readJsonlFloor, readSqliteFloor, recordLongSession, RESULT_PREFIX, runFresh, spread } from './fixtures-shared.js'

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '84467' },
    runs: { type: 'string', default: '5' },
    store: { type: 'string', default: 'both' },
    path: { type: 'string', default: 'copy' },
    cache: { type: 'string', default: '/tmp/ll-fork' },
    json: { type: 'boolean', default: false },
    child: { type: 'string' },
  },
})
const size = Number(values.events)
const cache = join(values.cache, String(size))
const built = builtLibrary()
type Kind = 'jsonl' | 'sqlite'
type Store = import('../../src/index.js').SessionStore
const jsonlDir = join(cache, 'jsonl')
const dbPath = join(cache, 'sessions.db')

async function open(kind: Kind): Promise<Store> {
  return kind === 'jsonl' ? new (await built.lib()).JsonlStore({ dir: jsonlDir }) : new (await built.sqlite()).SqliteStore({ path: dbPath })
}

// Turns of one step: 125 reasoning deltas, 500 text deltas, no tool call (≈ 632 events a turn with the envelope).
async function build(kind: Kind): Promise<void> {
  const store = await open(kind)
  if (await store.has('long')) return store.close()
  console.error(`recording ~${size} events into ${kind} under ${cache} …`)
  await recordLongSession(await built.lib(), store, 'long', { turns: Math.max(1, Math.round(size / 632)), reasoning: 125, text: 500 })
}

/** The store without its copy capability: forkSession reads the parent and re-encodes its events. */
function eventByEvent(store: Store): Store {
  return { create: (h, s) => store.create(h, s), open: (id) => store.open(id), read: (id) => store.read(id), has: (id) => store.has(id), list: (o) => store.list(o), close: () => store.close() }
}

/** One measurement in this fresh process; prints `{ms}`. */
async function child(kind: Kind, what: 'floor' | 'fork'): Promise<void> {
  if (what === 'floor') {
    // Module loading is process start, not work: both sides load what they use before the clock starts.
    const { ms } = kind === 'jsonl' ? readJsonlFloor(join(jsonlDir, 'long.jsonl')) : await readSqliteFloor(dbPath, 'long')
    console.log(JSON.stringify({ ms }))
    return
  }
  const { createHarness } = await built.lib()
  await open(kind).then((s) => s.close())
  const t0 = performance.now()
  const store = await open(kind)
  const harness = createHarness({ store: values.path === 'events' ? eventByEvent(store) : store })
  const id = await harness.forkSession('long')
  await harness.close()
  const ms = performance.now() - t0
  // Remove the child so the fixture stays one session (untimed): JSONL by its files, SQLite by its rows.
  if (kind === 'jsonl') {
    for (const f of readdirSync(jsonlDir)) if (f.startsWith(id)) rmSync(join(jsonlDir, f), { force: true })
  } else {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(dbPath)
    db.prepare('DELETE FROM events WHERE session_id = ?').run(id)
    db.prepare('DELETE FROM sessions WHERE id = ?').run(id)
    db.close()
  }
  console.log(JSON.stringify({ ms }))
}

if (values.child !== undefined) {
  const [kind, what] = values.child.split(':') as [Kind, 'floor' | 'fork']
  await child(kind, what)
} else {
  const kinds: Kind[] = values.store === 'both' ? ['jsonl', 'sqlite'] : [values.store as Kind]
  const runs = Number(values.runs)
  const rows: object[] = []
  for (const kind of kinds) {
    if (!existsSync(cache)) mkdirSync(cache, { recursive: true })
    await build(kind)
    const measure = (what: string): number => runFresh<{ ms: number }>(['--events', String(size), '--cache', values.cache, '--path', values.path, '--child', `${kind}:${what}`]).ms
    measure('floor')
    measure('fork')
    const floors: number[] = []
    const forks: number[] = []
    const ratios: number[] = []
    // Alternating which goes first, so a noisy neighbour on the shared machine hits both alike.
    for (let r = 0; r < runs; r++) {
      const [floor, fork] = r % 2 === 0 ? [measure('floor'), measure('fork')] : (([k, f]) => [f, k])([measure('fork'), measure('floor')])
      floors.push(floor as number)
      forks.push(fork as number)
      ratios.push((fork as number) / (floor as number))
    }
    const how = values.path === 'events' ? 'forkSession, event by event' : 'forkSession'
    if (!values.json) console.log(`${kind.padEnd(6)} ~${size} events: floor (read + parse) ${median(floors).toFixed(0)} ms (${spread(floors, 0)}) · ${how} ${median(forks).toFixed(0)} ms (${spread(forks, 0)}) · fork ÷ floor ${median(ratios).toFixed(2)}× (${spread(ratios)}, ${runs} runs)`)
    rows.push({
      target: `fork of a long session ≤ 1.5× reading it (${kind}${values.path === 'events' ? ', event by event' : ''})`,
      at: `~${size.toLocaleString('en-US')} events, fresh processes`,
      measured: median(ratios),
      spread: spread(ratios),
      limit: 1.5,
      notes: `floor ${median(floors).toFixed(0)} ms, fork ${median(forks).toFixed(0)} ms`,
    })
  }
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: true, rows }))
}
