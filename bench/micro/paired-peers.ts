/**
 * Paired ratios of two bench drivers (default: ledgerloop's in-memory row against pi) on the shared workload:
 * both drivers load into ONE process and run back to back in every round (order alternating), each measured
 * turn preceded by a full GC. Per N it prints each driver's median and the median of the per-round ratios
 * (first ÷ second) with their spread, on the process's CPU time (steadier than wall time when other work shares
 * the machine) and on wall time.
 *
 *   cd bench && npm run bench -- --only ledgerloop-memory,pi --no-scaling   # compiles .build/*.mjs once
 *   node --expose-gc --import tsx bench/micro/paired-peers.ts [--rounds 9] [--sizes 10,100,1000]
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { CreateDriver, Driver } from '../src/driver.js'
import { Workload } from '../src/workload.js'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '9' },
    sizes: { type: 'string', default: '10,100,1000' },
    a: { type: 'string', default: 'ledgerloop:memory' },
    b: { type: 'string', default: 'pi:' },
  },
})
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc')
const benchDir = join(import.meta.dirname, '..')

async function load(spec: string): Promise<{ name: string; driver: Driver }> {
  const [file, variant = ''] = spec.split(':') as [string, string?]
  const mod = (await import(pathToFileURL(join(benchDir, '.build', `${file}.mjs`)).href)) as { createDriver: CreateDriver }
  return { name: spec, driver: await mod.createDriver(variant, { tmpDir: join(benchDir, '.tmp', 'paired', file) }) }
}

async function turn(driver: Driver, steps: number): Promise<{ cpu: number; wall: number }> {
  const workload = new Workload(steps)
  const run = await driver.prepare(workload)
  gc?.()
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  await run.go()
  const wall = performance.now() - t0
  const used = process.cpuUsage(c0)
  await run.after?.()
  const problem = workload.problem()
  if (problem) throw new Error(problem)
  return { cpu: (used.user + used.system) / 1000 / steps, wall: wall / steps }
}

const a = await load(values.a)
const b = await load(values.b)
for (let i = 0; i < 100; i++) {
  await turn(a.driver, 20)
  await turn(b.driver, 20)
}
const median = (xs: readonly number[]): number => [...xs].sort((p, q) => p - q)[Math.floor(xs.length / 2)] as number
const spread = (xs: readonly number[]): string => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`
console.log(`${a.name} ÷ ${b.name}, ms/step, ${values.rounds} paired rounds per N (median of per-round ratios, spread)`)
for (const n of values.sizes.split(',').map(Number)) {
  const rows = { a: [] as { cpu: number; wall: number }[], b: [] as { cpu: number; wall: number }[] }
  for (let r = 0; r < Number(values.rounds); r++) {
    if (r % 2 === 0) {
      rows.a.push(await turn(a.driver, n))
      rows.b.push(await turn(b.driver, n))
    } else {
      rows.b.push(await turn(b.driver, n))
      rows.a.push(await turn(a.driver, n))
    }
  }
  const ratios = (k: 'cpu' | 'wall') => rows.a.map((x, i) => x[k] / (rows.b[i] as { cpu: number; wall: number })[k])
  const fmt = (k: 'cpu' | 'wall') =>
    `${k} ${median(rows.a.map((x) => x[k])).toFixed(4)} vs ${median(rows.b.map((x) => x[k])).toFixed(4)} → ${median(ratios(k)).toFixed(2)}× (${spread(ratios(k))})`
  console.log(`N=${String(n).padStart(5)}  ${fmt('cpu')}   ${fmt('wall')}`)
}
await a.driver.close?.()
await b.driver.close?.()
