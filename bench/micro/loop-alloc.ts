/**
 * Where a step's allocations go: runs the in-memory N-step loop (20 text chunks + one tool call per step, as
 * loop-steps.ts) under V8's sampling heap profiler with a 1-byte mean interval, which samples every allocation,
 * short-lived ones included. Prints allocations per step (count and bytes) and the top allocating functions;
 * `--out FILE` also writes the `.heapprofile` (open it in Chrome DevTools → Memory).
 *
 *   npx tsx bench/micro/loop-alloc.ts [--lib dist/index.js] [--steps 1000] [--top 15] [--out after.heapprofile]
 *
 * `--cpu RUNS` instead runs the N-step turn RUNS times after the same warm-up, with no heap sampler, for a CPU
 * profile of the loop alone (summarise it with cpu-summary.ts):
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/micro/loop-alloc.ts --lib dist/index.js --cpu 10
 *
 * `--jsonl DIR` runs on a JSONL store in DIR (fsync per tool call and turn end) instead of the memory store.
 *
 * `--plain` builds every chunk unfrozen as it is yielded (the bench's verdict-row model) instead of replaying
 * prebuilt frozen ones.
 *
 * `--retained` (with `node --expose-gc`) prints the heap the finished turn keeps alive per step (session log,
 * store, history), measured after a full GC with the harness still open.
 */
import { writeFileSync } from 'node:fs'
import { Session as Inspector } from 'node:inspector/promises'
import { isAbsolute, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { loopModel } from './loop-model.js'

type Lib = typeof import('../../src/index.js')
interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number }
  selfSize: number
  id: number
  children: ProfileNode[]
}
interface Profile {
  head: ProfileNode
  samples: { size: number; nodeId: number }[]
}

const { values } = parseArgs({
  options: { plain: { type: 'boolean', default: false }, jsonl: { type: 'string' }, lib: { type: 'string', default: 'dist/index.js' }, steps: { type: 'string', default: '1000' }, top: { type: 'string', default: '15' }, out: { type: 'string' }, cpu: { type: 'string' }, retained: { type: 'boolean', default: false } },
})
const steps = Number(values.steps)
const lib = (await import(pathToFileURL(isAbsolute(values.lib) ? values.lib : join(process.cwd(), values.lib)).href)) as Lib

async function once(n: number, around?: { start(): Promise<void>; stop(): Promise<void> }, beforeClose?: () => void): Promise<void> {
  const noop = lib.defineTool({ name: 'noop', description: 'does nothing', parameters: { type: 'object' }, execute: () => 'ok' })
  const m = loopModel(lib, n, values.plain)
  const harness = lib.createHarness({ adapters: [m], tools: [noop], ...(values.jsonl !== undefined ? { store: new lib.JsonlStore({ dir: values.jsonl }) } : {}) })
  const agent = await harness.createAgent({ provider: 'bench', model: 'b' })
  await around?.start()
  agent.followup('go')
  await agent.whenIdle()
  await around?.stop()
  if (m.calls !== n) throw new Error(`ran ${m.calls} steps, expected ${n}`)
  beforeClose?.()
  await harness.close()
}

for (let i = 0; i < 30; i++) await once(100)
if (values.retained) {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('--retained needs node --expose-gc')
  gc()
  const base = process.memoryUsage().heapUsed
  await once(steps, undefined, () => {
    gc()
    const kept = process.memoryUsage().heapUsed - base
    console.log(`${values.lib}: a finished N=${steps} turn keeps ${(kept / 1024 / 1024).toFixed(2)} MiB alive, ${(kept / steps / 1024).toFixed(2)} KiB per step`)
  })
  process.exit(0)
}
if (values.cpu !== undefined) {
  const started = performance.now()
  for (let i = 0; i < Number(values.cpu); i++) await once(steps)
  console.log(`${values.lib}: ${values.cpu} turns of N=${steps}: ${((performance.now() - started) / Number(values.cpu) / steps).toFixed(4)} ms/step (wall)`)
  process.exit(0)
}
const inspector = new Inspector()
inspector.connect()
let profile: Profile | undefined
await once(steps, {
  start: async () => {
    await inspector.post('HeapProfiler.startSampling', { samplingInterval: 1, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  },
  stop: async () => {
    profile = ((await inspector.post('HeapProfiler.stopSampling')) as unknown as { profile: Profile }).profile
  },
})
inspector.disconnect()
if (profile === undefined) throw new Error('no profile')
if (values.out !== undefined) writeFileSync(values.out, JSON.stringify(profile))

const byNode = new Map<number, ProfileNode>()
const walk = (node: ProfileNode): void => {
  byNode.set(node.id, node)
  for (const c of node.children) walk(c)
}
walk(profile.head)
const perFunction = new Map<string, { count: number; bytes: number }>()
let count = 0
let bytes = 0
for (const s of profile.samples) {
  const node = byNode.get(s.nodeId)
  const f = node === undefined ? '?' : `${node.callFrame.functionName || '(anonymous)'} ${node.callFrame.url.replace(/^.*\/(src|dist|node_modules)\//, '$1/')}:${node.callFrame.lineNumber + 1}`
  const entry = perFunction.get(f) ?? { count: 0, bytes: 0 }
  entry.count++
  entry.bytes += s.size
  perFunction.set(f, entry)
  count++
  bytes += s.size
}
console.log(`${values.lib}: N=${steps}, ${(count / steps).toFixed(1)} allocations and ${(bytes / steps / 1024).toFixed(2)} KiB per step (every allocation sampled)`)
const top = [...perFunction.entries()].sort((a, b) => b[1].count - a[1].count).slice(0, Number(values.top))
for (const [f, e] of top) console.log(`  ${(e.count / steps).toFixed(2).padStart(7)} /step  ${(e.bytes / steps).toFixed(0).padStart(6)} B/step  ${f}`)
