/**
 * Summarises a `.cpuprofile` (from `node --cpu-prof`): total sampled time, and the functions with the most self
 * time (with their share), so a before/after pair of profiles can be compared in text.
 *
 *   npx tsx bench/micro/cpu-summary.ts PROFILE.cpuprofile [--top 20]
 */
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

interface Node {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
}
interface CpuProfile {
  nodes: Node[]
  samples: number[]
  timeDeltas: number[]
}

const { values, positionals } = parseArgs({ options: { top: { type: 'string', default: '20' } }, allowPositionals: true })
const file = positionals[0]
if (file === undefined) throw new Error('usage: cpu-summary.ts PROFILE.cpuprofile [--top N]')
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const self = new Map<string, number>()
let total = 0
profile.samples.forEach((id, i) => {
  const node = byId.get(id)
  const dt = profile.timeDeltas[i] ?? 0
  total += dt
  const f = node === undefined ? '?' : `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.replace(/^.*\/(src|dist|node_modules)\//, '$1/')}:${node.callFrame.lineNumber + 1}`
  self.set(f, (self.get(f) ?? 0) + dt)
})
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`)
for (const [f, us] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) {
  console.log(`  ${(us / 1000).toFixed(1).padStart(8)} ms  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${f}`)
}
