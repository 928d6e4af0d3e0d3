/**
 * Listing cost against the number of stored sessions: `JsonlStore.list({ limit: 20 })` through the session
 * index, a search, and the whole `sessions` page (the index plus reading the 20 listed logs), at 100, 10,000
 * and 100,000 sessions. Not a test; numbers depend on the disk and the machine's load.
 *
 *   npx tsx bench/micro/session-list.ts [--sizes 100,10000,100000] [--runs 7] [--fixtures DIR]
 *
 * Fixtures are built once and cached in `--fixtures` (default: $TMPDIR/ll-session-list-bench): each session
 * a small log (a header, one turn with a prompt, a few chunks and a turn end), its index built by a reindex.
 * Building them is not timed. Timings are the median of `--runs`, each with a fresh store instance (nothing
 * cached in memory between runs; the page cache is warm, as for a person who lists twice).
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { listSessionsPage } from '../../src/cli/commands/sessions.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'

const { values } = parseArgs({
  options: { sizes: { type: 'string', default: '100,10000,100000' }, runs: { type: 'string', default: '7' }, fixtures: { type: 'string', default: join(tmpdir(), 'll-session-list-bench') } },
})
const sizes = values.sizes.split(',').map(Number)
const runs = Number(values.runs)

function logText(id: string, i: number, createdAt: number): string {
  const t = createdAt
  const lines = [
    { ledgerloop: 'session', version: 1, id, createdAt: t, cwd: '/work' },
    { type: 'turn/start', seq: 0, time: t + 1, data: { turn: 1 } },
    { type: 'user/message', seq: 1, time: t + 2, data: { role: 'user', content: [{ type: 'text', text: `task number ${i}: tidy module ${i % 97}` }], source: { kind: 'user' } } },
    { type: 'text-chunks', seq0: 2, time0: t + 3, data: { turn: 1, step: 1, index: 0, dt: [1, 1], texts: ['done', ' with', ' it'] } },
    { type: 'turn/end', seq: 5, time: t + 6, data: { turn: 1, reason: { kind: 'completed' } } },
  ]
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n'
}

async function fixture(size: number): Promise<string> {
  const dir = join(values.fixtures, String(size))
  if (existsSync(join(dir, '.ready'))) return dir
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  chmodSync(values.fixtures, 0o700)
  chmodSync(dir, 0o700)
  const base = Date.now() - size * 1000
  for (let i = 0; i < size; i++) {
    const id = `s${String(i).padStart(7, '0')}`
    writeFileSync(join(dir, `${id}.jsonl`), logText(id, i, base + i * 1000), { mode: 0o600 })
  }
  const store = new JsonlStore({ dir })
  await store.reindex()
  await store.close()
  writeFileSync(join(dir, '.ready'), '')
  return dir
}

async function time(dir: string, what: (store: JsonlStore) => Promise<unknown>): Promise<number> {
  const samples: number[] = []
  for (let r = 0; r < runs + 1; r++) {
    const store = new JsonlStore({ dir })
    const t0 = performance.now()
    await what(store)
    const ms = performance.now() - t0
    await store.close()
    if (r > 0) samples.push(ms) // the first run warms the JIT
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)] as number
}

const pricing = { models: {} } as unknown as Parameters<typeof listSessionsPage>[1]
console.log(`session listing, JsonlStore with its session index (median of ${runs} runs, fresh store each):`)
console.log('sessions     list({limit:20})   list({search})   sessions page (index + 20 logs read)')
for (const size of sizes) {
  const dir = await fixture(size)
  const check = await new JsonlStore({ dir }).list({ limit: 20 })
  if (check.length !== Math.min(20, size) || check.total !== size || check.indexNote !== undefined) throw new Error(`fixture ${size}: listed ${check.length} of ${check.total} (${check.indexNote ?? 'no note'})`)
  const page = await time(dir, (s) => s.list({ limit: 20 }))
  const search = await time(dir, (s) => s.list({ search: 'module 42', limit: 20 }))
  const cli = await time(dir, (s) => listSessionsPage(s, pricing, { limit: 20 }))
  console.log(`${String(size).padStart(8)}  ${page.toFixed(2).padStart(12)} ms  ${search.toFixed(1).padStart(12)} ms  ${cli.toFixed(2).padStart(14)} ms`)
}
