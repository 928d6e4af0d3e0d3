// Many sessions in one JSONL folder: how long listing the 20 most recent takes.
//   build --count N --dir DIR   untimed fixture: N sessions, each one short turn (prompt "Session i: …", one
//                               text-only step) through the loop, 16 agents at a time, JsonlStore with
//                               fsync 'background' (durable, but the fsyncs overlap)
//   list  --dir DIR             timed, in a fresh process: `store.list({ limit: 20 })` (the options are
//                               ignored by a store without them: then the whole list is read and cut to 20
//                               here, and `limitHonoured` says so), then the same again (warm)
// Each prints one `@@bench-result {…}` line.
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { createHarness, defineTool, JsonlStore } from '../../dist/index.js'
import { RESULT_PREFIX } from '../src/protocol.ts'
import { SYSTEM_PROMPT, TOOL_DESCRIPTION, TOOL_NAME, Workload } from '../src/workload.ts'
import { plainAdapter, runTurn } from './ledgerloop-common.ts'

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { count: { type: 'string' }, dir: { type: 'string' }, limit: { type: 'string', default: '20' } },
})

const emit = (result: Record<string, unknown>) => process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`)
const PARALLEL = 16

async function build(dir: string, count: number): Promise<void> {
  const store = new JsonlStore({ dir, fsync: 'background' })
  const harness = createHarness({
    store,
    adapters: [plainAdapter('scripted', () => new Workload(1))],
    tools: [defineTool({ name: TOOL_NAME, description: TOOL_DESCRIPTION, parameters: { type: 'object', properties: {} }, execute: () => 'ok' })],
    system: SYSTEM_PROMPT,
  })
  const t0 = performance.now()
  let next = 0
  const worker = async () => {
    for (let i = next++; i < count; i = next++) {
      const agent = await harness.createAgent({ provider: 'scripted', model: 'bench' })
      await runTurn(agent, `Session ${i + 1}: run the benchmark turn.`)
      await agent.dispose()
    }
  }
  await Promise.all(Array.from({ length: PARALLEL }, worker))
  await harness.close()
  emit({ ok: true, count, buildMs: performance.now() - t0 })
}

type ListWithOptions = (options?: { limit?: number }) => Promise<{ id: string }[]>

async function list(dir: string, limit: number): Promise<void> {
  const t0 = performance.now()
  const store = new JsonlStore({ dir })
  const listed = await (store.list as ListWithOptions).call(store, { limit })
  const rows = listed.slice(0, limit)
  const listMs = performance.now() - t0
  const t1 = performance.now()
  await (store.list as ListWithOptions).call(store, { limit })
  const warmMs = performance.now() - t1
  await store.close()
  emit({ ok: true, listMs, warmMs, returned: listed.length, rows: rows.length, limitHonoured: listed.length <= limit, maxRssKiB: process.resourceUsage().maxRSS })
}

async function main(): Promise<void> {
  const [mode] = positionals
  const dir = values.dir ?? ''
  if (!dir) throw new Error('--dir is required')
  if (mode === 'build') await build(dir, Number(values.count))
  else if (mode === 'list') await list(dir, Number(values.limit))
  else throw new Error('usage: ledgerloop-sessions build|list --dir D [--count N]')
  process.exit(0)
}

main().catch((error: unknown) => {
  emit({ ok: false, stage: positionals[0] ?? 'start', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) })
  process.exit(1)
})
