/**
 * Wall time per step of the loop itself: a scripted model streaming 20 text chunks and one tool call per
 * step, a trivial tool, N steps in one turn, in-memory store, invariant plugin off.
 *
 *   npx tsx bench/micro/loop-steps.ts [--runs 7] [--lib path/to/dist/index.js]
 *
 * `--lib` runs the same loop against another build (e.g. main's dist copied to a temp folder), for
 * before/after figures from the same machine state.
 */
import type { GenerateOptions, LlmAdapter, StreamChunk } from '../../src/index.js'

const libFlag = process.argv.indexOf('--lib')
const lib = (await import(libFlag > 0 ? String(process.argv[libFlag + 1]) : '../../src/index.js')) as typeof import('../../src/index.js')
const { createHarness, defineTool, scriptChunks } = lib

const K = 20
const runsFlag = process.argv.indexOf('--runs')
const runs = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : 7

// Chunks are built once per shape; the model only replays them (its own cost is not the loop's).
const toolStep = scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `), toolCalls: [{ id: 'c', name: 'noop', arguments: { n: 1 } }] })
const lastStep = scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `) })

function model(steps: number): LlmAdapter & { calls: number } {
  const adapter = {
    provider: 'bench',
    calls: 0,
    async *stream(_request: GenerateOptions): AsyncGenerator<StreamChunk> {
      const n = ++adapter.calls
      const chunks = n < steps ? toolStep : lastStep
      for (const c of chunks) yield c.type === 'tool-call-delta' || c.type === 'block-end' ? withId(c, n) : c
    },
  }
  return adapter
}

function withId(c: StreamChunk, n: number): StreamChunk {
  if (c.type === 'tool-call-delta') return { ...c, id: `call_${n}` }
  if (c.type === 'block-end' && c.block.type === 'tool-call') return { ...c, block: { ...c.block, id: `call_${n}` } }
  return c
}

async function once(steps: number): Promise<number> {
  let toolRuns = 0
  const noop = defineTool({ name: 'noop', description: 'does nothing', parameters: { type: 'object' }, execute: () => (toolRuns++, 'ok') })
  const m = model(steps)
  const harness = createHarness({ adapters: [m], tools: [noop] })
  const agent = await harness.createAgent({ provider: 'bench', model: 'b' })
  const t0 = process.hrtime.bigint()
  agent.followup('go')
  await agent.whenIdle()
  const ms = Number(process.hrtime.bigint() - t0) / 1e6
  if (m.calls !== steps || toolRuns !== steps - 1) throw new Error(`ran ${m.calls} steps / ${toolRuns} tools, expected ${steps}`)
  await harness.close()
  return ms / steps
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
console.log(`loop per-step wall time (K=${K} chunks + 1 tool call per step, memory store, ${runs} runs, median)`)
// Warm-up to steady state first (about 3,000 steps), as the side-by-side bench does for every framework.
for (let i = 0; i < 30; i++) await once(100)
for (const n of [10, 100, 1000]) {
  await once(n)
  const samples: number[] = []
  for (let i = 0; i < runs; i++) samples.push(await once(n))
  console.log(`N=${String(n).padStart(5)}  ${median(samples).toFixed(4)} ms/step  (${(median(samples) / (K + 6)).toFixed(5)} ms/chunk-event)`)
}
