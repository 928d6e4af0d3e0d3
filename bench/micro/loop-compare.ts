/**
 * Paired before/after figures for the loop: the loop-steps workload (20 text chunks + one tool call per step,
 * no plugins) run against two builds in ONE process, back to back in every round, so both see the same machine
 * state. Reports, per store and N, each build's median ms/step and the median of the per-round ratios
 * (after ÷ before) with their spread. The clock is the process's CPU time by default (`--clock wall`). Builds
 * run in fresh agents; the order alternates by round.
 *
 * `--before`/`--after` take a build's `dist` folder (as `load-1m.ts --dist`) or its `index.js`. `--stores`
 * picks the stores: `memory` (default) and `jsonl` (a fresh `JsonlStore` folder per run, default write policy,
 * so every step's flush before the tool body is in the figure).
 *
 *   npm run build && cp -r dist /tmp/ll-before/dist   # (on the old commit; link node_modules beside it)
 *   npx tsx bench/micro/loop-compare.ts --before /tmp/ll-before/dist --after dist [--rounds 9] [--sizes 100,1000] [--stores memory,jsonl]
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { isAbsolute, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { loopModel } from './loop-model.js'

type Lib = typeof import('../../src/index.js')

const { values } = parseArgs({
  options: { before: { type: 'string' }, after: { type: 'string', default: 'dist/index.js' }, rounds: { type: 'string', default: '9' }, sizes: { type: 'string', default: '10,100,1000' }, clock: { type: 'string', default: 'cpu' }, stores: { type: 'string', default: 'memory' } },
})
if (values.before === undefined) throw new Error('--before PATH (a build of the old commit) is required')
const rounds = Number(values.rounds)
const sizes = values.sizes.split(',').map(Number)
const stores = values.stores.split(',') as ('memory' | 'jsonl')[]
for (const s of stores) if (s !== 'memory' && s !== 'jsonl') throw new Error(`--stores: unknown store '${s}' (memory, jsonl)`)
// A build's dist folder or its index.js.
const resolve = (p: string): string => {
  const abs = isAbsolute(p) ? p : join(process.cwd(), p)
  return pathToFileURL(existsSync(abs) && statSync(abs).isDirectory() ? join(abs, 'index.js') : abs).href
}
const before = (await import(resolve(values.before))) as Lib
const after = (await import(resolve(values.after))) as Lib
const K = 20
// On a shared machine the process's own CPU time (user + system) is steadier than wall time: `--clock wall` for the latter.
const useCpu = values.clock !== 'wall'
const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000

async function once(lib: Lib, steps: number, store: 'memory' | 'jsonl' = 'memory'): Promise<number> {
  let toolRuns = 0
  const noop = lib.defineTool({ name: 'noop', description: 'does nothing', parameters: { type: 'object' }, execute: () => (toolRuns++, 'ok') })
  const m = loopModel(lib, steps)
  const dir = store === 'jsonl' ? mkdtempSync(join(tmpdir(), 'll-loop-compare-')) : undefined
  const harness = lib.createHarness({ adapters: [m], tools: [noop], ...(dir !== undefined ? { store: new lib.JsonlStore({ dir }) } : {}) })
  const agent = await harness.createAgent({ provider: 'bench', model: 'b' })
  const c0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  agent.followup('go')
  await agent.whenIdle()
  const ms = useCpu ? cpuMs(process.cpuUsage(c0)) : Number(process.hrtime.bigint() - t0) / 1e6
  if (m.calls !== steps || toolRuns !== steps - 1) throw new Error(`ran ${m.calls} steps / ${toolRuns} tools, expected ${steps}`)
  await harness.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  return ms / steps
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
for (let i = 0; i < 20; i++) {
  await once(before, 100)
  await once(after, 100)
}
console.log(`loop, ${useCpu ? 'CPU' : 'wall'} ms/step (K=${K} chunks + 1 tool call per step), ${rounds} paired rounds per store and N`)
console.log(`  before ${values.before}\n  after  ${values.after}`)
async function compare(store: 'memory' | 'jsonl', n: number): Promise<void> {
  const b: number[] = []
  const a: number[] = []
  const ratios: number[] = []
  for (let r = 0; r < rounds; r++) {
    const first = r % 2 === 0 ? before : after
    const x = await once(first, n, store)
    const y = await once(first === before ? after : before, n, store)
    const [tb, ta] = first === before ? [x, y] : [y, x]
    b.push(tb)
    a.push(ta)
    ratios.push(ta / tb)
  }
  const sorted = [...ratios].sort((p, q) => p - q)
  console.log(
    `${store.padEnd(6)} N=${String(n).padStart(5)}  before ${median(b).toFixed(4)}  after ${median(a).toFixed(4)}  after/before ${median(ratios).toFixed(2)}× (spread ${(sorted[0] as number).toFixed(2)}–${(sorted[sorted.length - 1] as number).toFixed(2)})`,
  )
}
for (const store of stores) for (const n of sizes) await compare(store, n)
