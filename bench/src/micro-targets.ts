// The targets measured by micro benches of their own (issues 25, 29, 30): each script runs in a fresh process
// from the main package with `--json`, does its own pairing, and prints one result line (RESULT_PREFIX + JSON)
// holding its rows. The full run lists them with a verdict beside the loop's targets, so RESULTS.md has one row
// per target whichever script measured it.
import { existsSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { runScript, type Log } from './extras.ts'

/** One measured target as a micro bench reports it. */
export interface MicroRow {
  /** What is promised, e.g. `replayAdapter ≤ 1.2× scriptedAdapter`. */
  readonly target: string
  /** The shape it was measured at (steps, events, sessions). */
  readonly at: string
  /** The measured figure (a median), in `unit`. */
  readonly measured: number
  /** `×` for a ratio (the default), or a unit such as `ms`. */
  readonly unit?: string
  /** Lowest–highest of what the median was taken over, as text. */
  readonly spread?: string
  /** The target's limit, in the same unit: met when `measured ≤ limit`. */
  readonly limit: number
  readonly notes?: string
}

/** A micro bench the full run calls. */
export interface MicroBench {
  readonly issue: number
  /** Script path relative to the main package. */
  readonly script: string
  readonly args: readonly string[]
  readonly timeoutMs: number
}

/** What one script gave: its rows, or why it gave none. */
export interface MicroResult {
  readonly bench: MicroBench
  readonly rows: readonly MicroRow[]
  readonly error?: string
}

/** The micro benches of the full run, in issue order. */
export const MICRO_BENCHES: readonly MicroBench[] = [
  { issue: 25, script: 'bench/micro/replay-adapter.ts', args: ['--rounds', '21', '--json'], timeoutMs: 300_000 },
  { issue: 30, script: 'bench/micro/fork.ts', args: ['--runs', '5', '--json'], timeoutMs: 600_000 },
  { issue: 30, script: 'bench/micro/postgres-workers.ts', args: ['--workers-only', '--workers', '1,4', '--rounds', '5', '--json'], timeoutMs: 900_000 },
  { issue: 30, script: 'bench/micro/reopen.ts', args: ['--runs', '5', '--json'], timeoutMs: 1_200_000 },
  { issue: 30, script: 'bench/micro/resume-flat.ts', args: ['--runs', '5', '--json'], timeoutMs: 1_800_000 },
  { issue: 30, script: 'bench/micro/sqlite-floor.ts', args: ['--runs', '7', '--json'], timeoutMs: 900_000 },
  { issue: 29, script: 'bench/micro/checkpoints.ts', args: ['--rounds', '21', '--json'], timeoutMs: 900_000 },
  { issue: 30, script: 'bench/micro/loop-pair.ts', args: ['--rounds', '7', '--json'], timeoutMs: 900_000 },
  { issue: 30, script: 'bench/micro/content-search.ts', args: ['--runs', '5', '--json'], timeoutMs: 3_600_000 },
]

/** Runs every micro bench once, in its own process (the scripts pair and repeat internally). */
export async function measureMicro(ctx: { benchDir: string; node: string; log: Log }, benches: readonly MicroBench[] = MICRO_BENCHES): Promise<MicroResult[]> {
  const root = resolve(ctx.benchDir, '..')
  const tsx = join(root, 'node_modules/tsx/dist/cli.mjs')
  const out: MicroResult[] = []
  for (const bench of benches) {
    if (!existsSync(tsx)) {
      out.push({ bench, rows: [], error: 'tsx missing in the main package (run npm ci at the top level)' })
      continue
    }
    const { result, wallMs } = await runScript({ node: ctx.node, args: [tsx, bench.script, ...bench.args], cwd: root, timeoutMs: bench.timeoutMs })
    if (result['ok'] !== true || !Array.isArray(result['rows'])) {
      out.push({ bench, rows: [], error: String(result['error'] ?? 'no rows in the result') })
      ctx.log(`micro ${bench.script}: FAILED ${String(result['error'])}`)
      continue
    }
    out.push({ bench, rows: result['rows'] as MicroRow[] })
    ctx.log(`micro ${bench.script}: ${(result['rows'] as MicroRow[]).length} row(s) in ${(wallMs / 1000).toFixed(0)} s`)
  }
  return out
}

const figure = (n: number, unit = '×'): string => `${n >= 10 ? n.toFixed(1) : n >= 1 ? n.toFixed(2) : n.toPrecision(2)}${unit === '×' ? '×' : ` ${unit}`}`

/** The RESULTS.md section for the micro benches: one row per target, with its verdict. */
export function renderMicro(results: readonly MicroResult[]): string[] {
  if (results.length === 0) return []
  const out = ['## Targets measured by micro benches (fresh process each, `npx tsx bench/micro/NAME.ts --json`)', '']
  out.push('| issue | target | at | measured (median) | spread | limit | verdict | notes | script |', '| --- | --- | --- | --- | --- | --- | --- | --- | --- |')
  for (const r of results) {
    const script = `\`${r.bench.script.replace(/^bench\//, '')}\``
    if (r.rows.length === 0) out.push(`| ${r.bench.issue} | — | — | failed | — | — | **not measured** | ${(r.error ?? '').replace(/\|/g, '/').slice(0, 200)} | ${script} |`)
    for (const row of r.rows) {
      const met = row.measured <= row.limit
      const by = met ? `${Math.round((1 - row.measured / row.limit) * 100)}% under the limit` : `missed by ${Math.round((row.measured / row.limit - 1) * 100)}%`
      out.push(`| ${r.bench.issue} | ${row.target} | ${row.at} | ${figure(row.measured, row.unit)} | ${row.spread ?? '—'} | ≤ ${figure(row.limit, row.unit)} | **${met ? 'met' : 'missed'}** | ${by}${row.notes ? `; ${row.notes}` : ''} | ${script} |`)
    }
  }
  out.push('')
  return out
}
