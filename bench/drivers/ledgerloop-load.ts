// Loading a long session: what a user resuming it pays.
//   build --store jsonl|sqlite --events N --dir DIR   untimed fixture: 100-step turns of the bench workload
//                                                     through the loop (plain adapter) until the session holds
//                                                     at least N events; prints its id
//   load  --store jsonl|sqlite --dir DIR --id ID      timed, in a fresh process: open the store and
//                                                     `harness.resumeAgent(id)` (read, repair check, Session
//                                                     built), then, timed apart, `session.deriveMessages()`
// Each prints one `@@bench-result {…}` line with its figures and the process's peak RSS.
import { performance } from 'node:perf_hooks'
import { parseArgs } from 'node:util'
import { RESULT_PREFIX } from '../src/protocol.ts'
import { Workload } from '../src/workload.ts'
import { openHarness, parseVariant, runTurn } from './ledgerloop-common.ts'

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { store: { type: 'string' }, events: { type: 'string' }, dir: { type: 'string' }, id: { type: 'string' } },
})

const emit = (result: Record<string, unknown>) => process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`)
const TURN_STEPS = 100

async function build(store: string, dir: string, events: number): Promise<void> {
  const bench = await openHarness(parseVariant(store), dir)
  const agent = await bench.newAgent()
  const t0 = performance.now()
  while (agent.session.length < events) {
    const workload = new Workload(TURN_STEPS)
    bench.current = workload
    await runTurn(agent)
    const problem = workload.problem()
    if (problem) throw new Error(`fixture turn did not do the work: ${problem}`)
  }
  const result = { ok: true, id: agent.id, events: agent.session.length, buildMs: performance.now() - t0 }
  await agent.dispose()
  await bench.close()
  emit(result)
}

async function load(store: string, dir: string, id: string): Promise<void> {
  // Module loading is not part of the figure: load the SQLite module (and its native addon) first.
  if (store === 'sqlite') await import('../../dist/store/sqlite.js')
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  const t0 = performance.now()
  const bench = await openHarness(parseVariant(store), dir)
  const agent = await bench.harness.resumeAgent(id)
  const resumeMs = performance.now() - t0
  const t1 = performance.now()
  const messages = agent.session.deriveMessages().length
  const foldMs = performance.now() - t1
  const events = agent.session.length
  const heap = process.memoryUsage().heapUsed
  const maxRssKiB = process.resourceUsage().maxRSS
  await agent.dispose()
  await bench.close()
  emit({ ok: true, events, messages, resumeMs, foldMs, maxRssKiB, heapBytes: heap })
}

async function main(): Promise<void> {
  const [mode] = positionals
  const store = values.store ?? ''
  const dir = values.dir ?? ''
  if (!dir) throw new Error('--dir is required')
  if (mode === 'build') await build(store, dir, Number(values.events))
  else if (mode === 'load') await load(store, dir, values.id ?? '')
  else throw new Error(`usage: ledgerloop-load build|load --store S --dir D [--events N | --id ID]`)
  process.exit(0)
}

main().catch((error: unknown) => {
  emit({ ok: false, stage: positionals[0] ?? 'start', error: error instanceof Error ? `${error.name}: ${error.message}` : String(error) })
  process.exit(1)
})
