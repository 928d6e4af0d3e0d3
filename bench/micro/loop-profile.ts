/**
 * One bench driver alone in a process, for a CPU profile of exactly what a bench row runs: loads the driver's
 * compiled bundle (`bench/.build/<file>.mjs`, as paired-peers.ts does), warms it up with 20-step turns, then
 * runs `--turns` turns of `--steps` steps and prints the CPU and wall time per step. Under `node --cpu-prof`
 * the profile covers the warm-up too, which is small next to the measured turns at the default sizes. With
 * `--json` it prints one `@@loop-profile {"cpu":…,"wall":…}` line (ms per step), which loop-pair.ts reads.
 *
 *   cd bench && npm run bench -- --only ledgerloop-memory --runs 1 --no-extras   # compiles .build/*.mjs once
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/micro/loop-profile.ts [--driver ledgerloop:memory] [--turns 10] [--steps 1000]
 *   npx tsx bench/micro/cpu-summary.ts /tmp/prof/*.cpuprofile
 */
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { CreateDriver } from '../src/driver.js'
import { Workload } from '../src/workload.js'

const { values } = parseArgs({
  options: {
    driver: { type: 'string', default: 'ledgerloop:memory' },
    turns: { type: 'string', default: '10' },
    steps: { type: 'string', default: '1000' },
    warmup: { type: 'string', default: '150' },
    json: { type: 'boolean', default: false },
    settle: { type: 'string', default: '0' },
  },
})
const benchDir = join(import.meta.dirname, '..')
// With `node --expose-gc`, each measured turn starts after a full GC, as a bench child's does.
const gc = (globalThis as { gc?: () => void }).gc
const settle = Number(values.settle)
const [file, variant = ''] = values.driver.split(':') as [string, string?]
const mod = (await import(pathToFileURL(join(benchDir, '.build', `${file}.mjs`)).href)) as { createDriver: CreateDriver }
const driver = await mod.createDriver(variant, { tmpDir: join(benchDir, '.tmp', 'profile', file) })

async function turn(steps: number, measured: boolean): Promise<{ cpu: number; wall: number }> {
  const workload = new Workload(steps)
  const run = await driver.prepare(workload)
  if (measured) gc?.()
  if (measured && settle > 0) await new Promise((r) => setTimeout(r, settle))
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  await run.go()
  const wall = performance.now() - t0
  const used = process.cpuUsage(c0)
  await run.after?.()
  const problem = workload.problem()
  if (problem) throw new Error(problem)
  return { cpu: (used.user + used.system) / 1000, wall }
}

for (let i = 0; i < Number(values.warmup); i++) await turn(20, false)
const steps = Number(values.steps)
let cpu = 0
let wall = 0
for (let i = 0; i < Number(values.turns); i++) {
  const t = await turn(steps, true)
  cpu += t.cpu
  wall += t.wall
}
const per = Number(values.turns) * steps
if (values.json) console.log(`@@loop-profile ${JSON.stringify({ cpu: cpu / per, wall: wall / per })}`)
else console.log(`${values.driver}: ${values.turns} turns of N=${steps}: cpu ${(cpu / per).toFixed(4)} ms/step, wall ${(wall / per).toFixed(4)} ms/step`)
await driver.close?.()
