import { createDriver } from './node22/drivers/dsh.ts'
import { Workload } from './src/workload.ts'
const d = await createDriver('memory', { tmpDir: '/tmp/dshdbg' })
const out: string[] = []
for (let i = 0; i < 30; i++) {
  const w = new Workload(20)
  const run = await d.prepare(w)
  const t0 = performance.now()
  await run.go()
  out.push((performance.now() - t0).toFixed(0))
  await run.after?.()
}
console.log(out.join(' '))
