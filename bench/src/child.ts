// One measured run in a fresh process: load a driver, warm it up, time one
// turn of N steps, check the work was done, print one result line.
// Run by Node 20 through tsx, or by Node 22 directly (type stripping), so it
// uses erasable TypeScript only and imports node builtins and our own files.
import { mkdirSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import type { CreateDriver } from './driver.ts'
import { RESULT_PREFIX, type ChildResult } from './protocol.ts'
import { Workload } from './workload.ts'

const { values } = parseArgs({
  options: {
    driver: { type: 'string' },
    variant: { type: 'string', default: '' },
    steps: { type: 'string' },
    // Warm-up: turns of --warmup-steps steps until --warmup-total steps have run or
    // --warmup-ms has passed (at least one turn unless --warmup-runs is 0).
    'warmup-runs': { type: 'string', default: '1000' },
    'warmup-steps': { type: 'string', default: '20' },
    'warmup-total': { type: 'string', default: '200' },
    'warmup-ms': { type: 'string', default: '3000' },
    tmp: { type: 'string' },
  },
})

function emit(result: ChildResult): void {
  process.stdout.write(`${RESULT_PREFIX}${JSON.stringify(result)}\n`)
}

function fail(stage: string, error: unknown): never {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  emit({ ok: false, stage, error: message.split('\n').slice(0, 6).join('\n') })
  process.exit(1)
}

let stage = 'start'
process.on('unhandledRejection', (reason) => fail('unhandled rejection', reason))
// A framework promise that never settles leaves an empty event loop: say so instead of exiting silently.
process.on('beforeExit', () => fail(stage, new Error('event loop drained before this stage finished (a promise never settled)')))

async function main(): Promise<void> {
  if (!values.driver || !values.steps || !values.tmp) throw new Error('usage: child --driver FILE --steps N --tmp DIR')
  const steps = Number(values.steps)
  const warmupRuns = Number(values['warmup-runs'])
  const warmupSteps = Number(values['warmup-steps'])
  const warmupMs = Number(values['warmup-ms'])
  const warmupTotal = Number(values['warmup-total'])
  const tmpDir = resolve(values.tmp)
  rmSync(tmpDir, { recursive: true, force: true })
  mkdirSync(tmpDir, { recursive: true })

  let create: CreateDriver
  stage = 'load'
  try {
    const mod = (await import(pathToFileURL(resolve(values.driver)).href)) as { createDriver?: CreateDriver }
    if (typeof mod.createDriver !== 'function') throw new Error(`${values.driver} exports no createDriver`)
    create = mod.createDriver
  } catch (error) {
    fail('load', error)
  }
  let driver
  stage = 'create'
  try {
    driver = await create(values.variant ?? '', { tmpDir: join(tmpDir, 'store') })
  } catch (error) {
    fail('create', error)
  }

  const warmupStart = performance.now()
  const warming = (i: number) =>
    i < warmupRuns && (i === 0 || (i * warmupSteps < warmupTotal && performance.now() - warmupStart < warmupMs))
  for (let i = 0; warming(i); i++) {
    const w = new Workload(warmupSteps)
    stage = `warm-up run ${i + 1}`
    try {
      const run = await driver.prepare(w)
      await run.go()
      await run.after?.()
    } catch (error) {
      fail(`warm-up run ${i + 1}`, error)
    }
    const problem = w.problem()
    if (problem) fail(`warm-up run ${i + 1} check`, new Error(problem))
  }

  const gc = (globalThis as { gc?: () => void }).gc
  if (gc) gc()
  const workload = new Workload(steps)
  let notes: Record<string, number> = {}
  let wallMs: number
  stage = 'measured run'
  try {
    const run = await driver.prepare(workload)
    const t0 = performance.now()
    await run.go()
    wallMs = performance.now() - t0
    notes = (await run.after?.()) ?? {}
  } catch (error) {
    fail('measured run', error)
  }
  const problem = workload.problem()
  if (problem) fail('check', new Error(`did not do the work: ${problem}`))

  const usage = process.resourceUsage()
  const heapNow = process.memoryUsage().heapUsed
  stage = 'close'
  try {
    await driver.close?.()
  } catch (error) {
    fail('close', error)
  }
  rmSync(tmpDir, { recursive: true, force: true })
  emit({
    ok: true,
    node: process.version,
    counts: workload.counts(),
    wallMs,
    maxRssKiB: usage.maxRSS,
    peakHeapBytes: Math.max(workload.peakHeap, heapNow),
    notes,
  })
  // Some frameworks keep timers or handles alive; the result is out, so leave.
  process.exit(0)
}

main().catch((error: unknown) => fail('child', error))
