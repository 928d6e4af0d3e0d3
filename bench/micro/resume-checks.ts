/**
 * What it would cost a resume to run `verify`'s content checks (issue 22 item 6), against what the store's load
 * costs today and against hashing the file. Records a session of `--turns` turns, each one step streaming
 * `--text` text deltas and `--reasoning` reasoning deltas (default 200 × (500 + 125): about 127k events), once
 * into a cache folder; then times, in this process, median of `--runs`:
 *
 * - `read()`: the store's load (the one judgement, and the content witness where the store keeps one);
 * - the file read and every line `JSON.parse`d (the floor a later issue measures reopen against);
 * - `faithfulnessProblems` and `reconstructionProblems` on the loaded events (what `verify` adds);
 * - SHA-256 of the file's bytes.
 *
 *   npm run build && npx tsx bench/micro/resume-checks.ts [--turns 200] [--text 500] [--reasoning 125] [--runs 5] [--cache /tmp/ll-resume-checks]
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createHarness, scriptedAdapter, type ScriptStep } from '../../src/index.js'
import { faithfulnessProblems } from '../../src/session/verify.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { reconstructionProblems } from '../../src/views/request-reconstruction.js'

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '200' },
    text: { type: 'string', default: '500' },
    reasoning: { type: 'string', default: '125' },
    runs: { type: 'string', default: '5' },
    cache: { type: 'string', default: '/tmp/ll-resume-checks' },
  },
})
const turns = Number(values.turns)
const textDeltas = Number(values.text)
const reasoningDeltas = Number(values.reasoning)
const dir = join(values.cache, `${turns}x${textDeltas}+${reasoningDeltas}`)
const id = 'big'

async function build(): Promise<void> {
  if (existsSync(join(dir, `${id}.jsonl`))) return
  console.error(`recording ${turns} turns into ${dir} …`)
  const step: ScriptStep = {
    reasoning: Array.from({ length: reasoningDeltas }, (_, i) => `thinking ${i} `),
    text: Array.from({ length: textDeltas }, (_, i) => `word${i} `),
  }
  const model = scriptedAdapter({ script: Array.from({ length: turns }, () => step), models: { m1: { contextWindow: 10_000_000 } } })
  const harness = createHarness({ store: new JsonlStore({ dir, fsync: 'interval' }), adapters: [model] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: id })
  for (let t = 0; t < turns; t++) {
    agent.followup(`prompt ${t}`)
    await agent.whenIdle()
  }
  await agent.dispose()
  await harness.close()
}

function time<T>(f: () => T): [number, T] {
  const t0 = performance.now()
  const value = f()
  return [performance.now() - t0, value]
}

await build()
const path = join(dir, `${id}.jsonl`)
const rows: Record<string, number[]> = {}
const note = (name: string, ms: number): void => {
  ;(rows[name] ??= []).push(ms)
}
let events = 0
for (let r = 0; r < Number(values.runs); r++) {
  const store = new JsonlStore({ dir })
  const t0 = performance.now()
  const stored = await store.read(id)
  note('read() (the store load)', performance.now() - t0)
  await store.close()
  const [materialise, all] = time(() => stored.events)
  note('  materialise stored.events', materialise)
  events = all.length
  note('faithfulnessProblems', time(() => faithfulnessProblems(all))[0])
  note('reconstructionProblems', time(() => reconstructionProblems(all))[0])
  note('readFile + JSON.parse every line', time(() => {
    const text = readFileSync(path, 'utf8')
    let n = 0
    for (let p = 0, q = text.indexOf('\n'); q >= 0; p = q + 1, q = text.indexOf('\n', p)) n += JSON.parse(text.slice(p, q)) === null ? 0 : 1
    return n
  })[0])
  const bytes = readFileSync(path)
  note('sha256 of the file', time(() => createHash('sha256').update(bytes).digest('hex'))[0])
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
console.log(`${events.toLocaleString('en')} events, ${(readFileSync(path).length / 1e6).toFixed(1)} MB, median of ${values.runs} (ms):`)
for (const [name, xs] of Object.entries(rows)) console.log(`  ${name.padEnd(36)} ${median(xs).toFixed(1).padStart(9)}`)
