/**
 * The in-memory loop against pi and against the serialise floor (issue 30, target 5), paired in fresh
 * processes: every round runs, for each N, one process per row back to back (the order reversed every other
 * round, as the bench's chains are), each doing the bench's warm-up and then `--steps-per-run` steps in turns of
 * N (one turn for N ≥ that figure). Each process reports its own CPU time and wall time per step (loop-profile.ts);
 * the figures are per-round ratios, ledgerloop ÷ peer, and their median with the min–max spread. CPU time is the
 * steadier figure on a shared machine (another process's load inflates wall time, not this process's CPU).
 *
 *   npx tsx bench/micro/loop-pair.ts [--rounds 9] [--sizes 10,100,1000] [--metric cpu|wall] [--json]
 *   npx tsx bench/micro/loop-pair.ts --a ledgerloop:memory@/tmp/ll-before/dist --b ledgerloop:memory --no-floor
 *
 * `--a`/`--b` name drivers as paired-peers.ts does (`file:variant`); `@DIST` points a ledgerloop driver at another
 * build of the library (e.g. a copy of an earlier `dist/`, with `node_modules` linked beside it) for a
 * before/after pair. `--json` ends with one `@@bench-result` line holding the target rows (bench/src/micro-targets.ts).
 */
import { spawn } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { compileEntries } from '../src/build.js'

const RESULT_PREFIX = '@@bench-result '
const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '9' },
    sizes: { type: 'string', default: '10,100,1000' },
    a: { type: 'string', default: 'ledgerloop:memory' },
    b: { type: 'string', default: 'pi:async' },
    floor: { type: 'string', default: 'floor:serialise' },
    'no-floor': { type: 'boolean', default: false },
    'steps-per-run': { type: 'string', default: '2000' },
    metric: { type: 'string', default: 'cpu' },
    json: { type: 'boolean', default: false },
  },
})
const benchDir = resolve(import.meta.dirname, '..')
const metric = values.metric === 'wall' ? 'wall' : 'cpu'
const log = (line: string): void => void (values.json ? process.stderr : process.stdout).write(`${line}\n`)

/** Compiles the profile script and the drivers named; a driver at another build gets a bundle of its own. */
async function prepare(specs: readonly string[]): Promise<Map<string, string>> {
  const files = new Set(specs.map((s) => (s.split('@')[0] as string).split(':')[0] as string))
  await compileEntries(benchDir, [
    { source: 'micro/loop-profile.ts', output: '.build/loop-profile.mjs' },
    ...[...files].map((f) => ({ source: `drivers/${f}.ts`, output: `.build/${f}.mjs` })),
  ])
  const driverArg = new Map<string, string>()
  let other = 0
  for (const spec of specs) {
    const [name, dist] = spec.split('@') as [string, string?]
    if (dist === undefined) {
      driverArg.set(spec, name)
      continue
    }
    const [file, variant = ''] = name.split(':') as [string, string?]
    const bundle = `${file}-other${++other}`
    const text = readFileSync(join(benchDir, '.build', `${file}.mjs`), 'utf8').replaceAll(resolve(benchDir, '..', 'dist'), resolve(dist))
    writeFileSync(join(benchDir, '.build', `${bundle}.mjs`), text)
    driverArg.set(spec, `${bundle}:${variant}`)
  }
  return driverArg
}

interface Run {
  readonly cpu: number
  readonly wall: number
}

function runOnce(driver: string, steps: number): Promise<Run> {
  const turns = Math.max(1, Math.round(Number(values['steps-per-run']) / steps))
  const args = ['--expose-gc', join(benchDir, '.build', 'loop-profile.mjs'), '--driver', driver, '--steps', String(steps), '--turns', String(turns), '--json']
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd: benchDir, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.on('error', fail)
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('@@loop-profile '))
      if (code !== 0 || line === undefined) return fail(new Error(`${driver} N=${steps} exited ${code}: ${out.slice(-500)}`))
      done(JSON.parse(line.slice('@@loop-profile '.length)) as Run)
    })
  })
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((p, q) => p - q)
  const m = s.length >> 1
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2
}
const spreadOf = (xs: readonly number[]): string => `${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}`

async function main(): Promise<void> {
  const rows = [values.a, values.b, ...(values['no-floor'] ? [] : [values.floor])]
  const driverArg = await prepare(rows)
  const sizes = values.sizes.split(',').map(Number)
  const rounds = Number(values.rounds)
  const load0 = loadavg()[0] as number
  const runs = new Map<string, Run[]>()
  for (let r = 0; r < rounds; r++) {
    for (const n of r % 2 === 0 ? sizes : [...sizes].reverse()) {
      for (const row of r % 2 === 0 ? rows : [...rows].reverse()) {
        const key = `${row}|${n}`
        const run = await runOnce(driverArg.get(row) as string, n)
        runs.set(key, [...(runs.get(key) ?? []), run])
      }
    }
    log(`round ${r + 1}/${rounds} done (load ${loadavg()[0]?.toFixed(1)})`)
  }
  const load1 = loadavg()[0] as number
  const ratios = (x: string, y: string, n: number, k: 'cpu' | 'wall'): number[] => {
    const xs = runs.get(`${x}|${n}`) as Run[]
    const ys = runs.get(`${y}|${n}`) as Run[]
    return xs.map((run, i) => run[k] / (ys[i] as Run)[k])
  }
  log(`${values.a} ÷ ${values.b}${values['no-floor'] ? '' : ` and ÷ ${values.floor}`}: ms/step (${metric} is the verdict figure), ${rounds} paired rounds, fresh processes; load ${load0.toFixed(1)} → ${load1.toFixed(1)}`)
  const targetRows: object[] = []
  for (const n of sizes) {
    const med = (row: string, k: 'cpu' | 'wall'): string => median((runs.get(`${row}|${n}`) as Run[]).map((x) => x[k])).toFixed(4)
    const vsB = ratios(values.a, values.b, n, metric)
    let line = `N=${String(n).padStart(5)}  ${metric} ${med(values.a, metric)} vs ${med(values.b, metric)} → ${median(vsB).toFixed(2)}× (${spreadOf(vsB)})`
    line += `   wall ${median(ratios(values.a, values.b, n, 'wall')).toFixed(2)}× (${spreadOf(ratios(values.a, values.b, n, 'wall'))})`
    targetRows.push({ target: `in memory ≤ 0.9× pi, both doubles \`async *\` generators (${metric} time per step)`, at: `N=${n}`, measured: median(vsB), spread: `${spreadOf(vsB)}×, ${rounds} rounds`, limit: 0.9, notes: `load ${load0.toFixed(1)}→${load1.toFixed(1)}` })
    if (!values['no-floor']) {
      const vsFloor = ratios(values.a, values.floor, n, metric)
      line += `   floor ${med(values.floor, metric)} → ${median(vsFloor).toFixed(2)}× (${spreadOf(vsFloor)})`
      targetRows.push({ target: `in memory ≤ 2× the serialise floor (${metric} time per step)`, at: `N=${n}`, measured: median(vsFloor), spread: `${spreadOf(vsFloor)}×, ${rounds} rounds`, limit: 2, notes: `load ${load0.toFixed(1)}→${load1.toFixed(1)}` })
    }
    log(line)
  }
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: true, rows: targetRows }))
}

main().catch((error: unknown) => {
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: false, error: error instanceof Error ? error.message : String(error) }))
  else console.error(error)
  process.exitCode = 1
})
