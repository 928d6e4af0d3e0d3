// Render RESULTS.md: the targets (computed from the data), machine, versions, command, paired ratios, one
// table per figure, loading, many sessions, PostgreSQL.
import type { BenchConfig } from './configs.ts'
import type { LoadResult, PostgresResult, SessionsResult } from './extras.ts'
import type { MachineInfo } from './machine.ts'
import { pairedRatio, type RoundResult, type Summary } from './stats.ts'
import { CHUNKS_PER_STEP } from './workload.ts'
import { fmt, key, ratioCell, table } from './format.ts'
import { renderExtras, renderTargets, type Ratio } from './targets.ts'
import { renderMicro, type MicroResult } from './micro-targets.ts'

export { key }

export interface ReportInput {
  readonly date: string
  readonly command: string
  readonly mode: string
  readonly machine: MachineInfo
  readonly nodeVersions: Record<string, string>
  readonly packages: readonly { name: string; version: string }[]
  readonly steps: readonly number[]
  readonly runs: number
  readonly warmupMs: number
  readonly warmupSteps: number
  readonly scalingSteps: number
  readonly durationS: number
  readonly loadAtEnd: number
  readonly configs: readonly BenchConfig[]
  readonly scaling: readonly BenchConfig[]
  /** The memory target's row (`resident-memory-100000`), run every round. */
  readonly resident: readonly BenchConfig[]
  readonly summaries: ReadonlyMap<string, Summary>
  /** Every run, by `${id}@${N}`, with its round. */
  readonly results: ReadonlyMap<string, readonly RoundResult[]>
  /** Rows outside the chains run in this many rounds. */
  readonly peripheralRounds: number
  readonly loads: readonly LoadResult[]
  readonly loadEvents: number
  readonly listings: readonly SessionsResult[]
  readonly postgres: PostgresResult | undefined
  /** The targets the micro benches measured (issues 25, 29, 30). */
  readonly micro: readonly MicroResult[]
  /** The comparisons stated as paired ratios, and whether a pair ran back to back. */
  readonly pairs: readonly { readonly row: string; readonly ref: string }[]
  readonly isAdjacent: (a: string, b: string) => boolean
  /** Whether the full-size loading and many-sessions fixtures were used. */
  readonly heavy: boolean
  /** Why a (config, N) has no figure: key `${id}@${N}` or `${id}` for the whole row. */
  readonly failures: ReadonlyMap<string, string>
}

const rowName = (c: BenchConfig) => `${c.label}${c.runtime === 'node22' ? ' ¹' : ''}`

export function renderReport(input: ReportInput): string {
  const { configs, steps, summaries, failures } = input
  const get = (id: string, n: number) => summaries.get(key(id, n))
  const cell = (c: BenchConfig, n: number, value: (s: Summary) => string): string => {
    const s = get(c.id, n)
    if (s) return value(s)
    if (c.maxSteps !== undefined && n > c.maxSteps) return `not run (N ≤ ${c.maxSteps} only)`
    const why = failures.get(key(c.id, n)) ?? failures.get(c.id)
    if (!why) return '—'
    return why.startsWith('not built yet') ? 'not built yet' : why.startsWith('not available') ? 'not available ²' : 'failed ²'
  }
  const figureTable = (value: (s: Summary) => string) => table(
    ['framework', 'store', ...steps.map((n) => `N=${n}`)],
    configs.map((c) => [rowName(c), c.store, ...steps.map((n) => cell(c, n, value))]),
  )
  const ledgerRef = (c: BenchConfig) => (c.durable ? 'ledgerloop-jsonl' : 'ledgerloop-memory')
  const floorRef = (c: BenchConfig) => (c.durable ? 'floor-fsync-tool-turn' : 'floor-serialise')
  const pairedKeys: Ratio = (rowKey, refKey, figure) => pairedRatio(input.results.get(rowKey), input.results.get(refKey), figure)
  const paired = (row: string, ref: string, n: number) => pairedKeys(key(row, n), key(ref, n))
  const ratioTable = (ref: (c: BenchConfig) => string, skip: (c: BenchConfig) => boolean) => table(
    ['framework', 'store', 'compared with', ...steps.map((n) => `N=${n}`)],
    configs.filter((c) => !skip(c)).map((c) => [
      rowName(c), c.store, ref(c),
      ...steps.map((n) => ratioCell(paired(c.id, ref(c), n))),
    ]),
  )

  const out: string[] = []
  out.push('# Loop benchmark results', '')
  out.push(`Generated ${input.date} by \`${input.command}\` (${input.mode}; ${input.runs} rounds: the paired rows run in every round, the other rows in the first ${input.peripheralRounds} (fewer past the time budget); every run in a fresh process after a warm-up of ${input.warmupSteps} steps, cut at ${input.warmupMs} ms; total ${input.durationS.toFixed(0)} s).`)
  out.push('How it is measured: [README.md](README.md). Lower is better everywhere.', '')
  out.push(...renderTargets({ ...input, pairedKeys }))
  out.push('## Machine', '')
  out.push(table(['', ''], [
    ['CPU', `${input.machine.cpu} × ${input.machine.cores}`],
    ['memory', `${input.machine.memoryGiB} GiB (${input.machine.freeMemoryGiB} GiB free at start)`],
    ['OS', input.machine.os],
    ['load average (1 min)', `${input.machine.loadAtStart} at start, ${input.loadAtEnd} at end (${input.machine.cores} cores; above ~1 means other work shared the CPU and figures are noisier)`],
    ...Object.entries(input.nodeVersions).map(([k, v]) => [k, v]),
  ]), '')
  out.push('Packages: ' + input.packages.map((p) => `\`${p.name}@${p.version}\``).join(', ') + '.', '')
  out.push(`Workload: one turn of N steps; each step streams ${CHUNKS_PER_STEP} text chunks and one call of a trivial tool, the last step answers with text only. Every run is checked: N model calls, N−1 tool executions, N×${CHUNKS_PER_STEP} chunks, and a final request carrying the whole history.`, '')
  out.push('¹ runs on Node 22 (the original harness needs ≥ 22.19; the other `¹` rows are controls showing what Node 22 alone changes). ² see "Rows that did not run".', '')

  out.push('## Paired ratios (ledgerloop row ÷ the row it is compared with; median of per-round ratios (min–max, rounds))', '')
  out.push('Rows marked ↔ ran back to back in every round (fresh processes, the order flipping between rounds); the others are paired by round only.', '')
  out.push(table(['row', 'compared with', ...steps.map((n) => `N=${n}`)], input.pairs.map((p) => [
    `\`${p.row}\``, `\`${p.ref}\`${input.isAdjacent(p.row, p.ref) ? ' ↔' : ''}`, ...steps.map((n) => ratioCell(paired(p.row, p.ref, n))),
  ])), '')
  out.push('## Wall time per step (ms, median)', '')
  out.push(figureTable((s) => fmt(s.msPerStep)), '')
  out.push('## Spread of wall time per step (ms, min–max over runs, runs)', '')
  out.push(figureTable((s) => `${fmt(s.msPerStepMin)}–${fmt(s.msPerStepMax)} (${s.runs})`), '')
  out.push('## Wall time per streamed chunk (µs, median)', '')
  out.push(figureTable((s) => fmt(s.usPerChunk)), '')
  out.push('## Peak RSS of the run\'s process (MiB, median)', '')
  out.push(figureTable((s) => fmt(s.rssMiB)), '')
  out.push('## Peak V8 heap used (MiB, median)', '')
  out.push(figureTable((s) => fmt(s.heapMiB)), '')
  out.push('## Ratio to ledgerloop (per-step time ÷ ledgerloop\'s, median of per-round ratios (min–max, rounds); in-memory rows against the plain in-memory row, durable rows against the plain durable JSONL row; above 1× means ledgerloop is faster)', '')
  out.push(ratioTable(ledgerRef, (c) => c.group === 'ledgerloop' && c.id === ledgerRef(c)), '')
  out.push('## Ratio to the floor (per-step time ÷ the floor\'s, median of per-round ratios (min–max, rounds); in-memory rows against "serialise only", durable rows against "write + fsync before tool body and at turn end")', '')
  out.push(ratioTable(floorRef, (c) => c.group === 'floor'), '')

  if (input.scaling.length) {
    out.push(`## ledgerloop per-step time by session size (ms, median; ${input.scalingSteps} steps timed after pre-filling the session)`, '')
    const stores = [...new Set(input.scaling.map((c) => c.store))]
    const sizes = [...new Set(input.scaling.map((c) => Number(c.variant.split(':')[1])))]
    out.push(table(['store', ...sizes.map((s) => `${s.toLocaleString('en-US')} events`), `largest ÷ smallest`], stores.map((store) => {
      const row = sizes.map((size) => input.scaling.find((c) => c.store === store && c.variant.endsWith(`:${size}`))!)
      return [store, ...row.map((c) => cell(c, input.scalingSteps, (s) => fmt(s.msPerStep))), ratioCell(paired(row.at(-1)!.id, row[0]!.id, input.scalingSteps))]
    })), '')
  }

  out.push('## Events logged per step', '')
  out.push(table(['framework', 'store', ...steps.map((n) => `N=${n}`)], configs
    .filter((c) => steps.some((n) => get(c.id, n)?.notes['eventsPerStep'] !== undefined))
    .map((c) => [rowName(c), c.store, ...steps.map((n) => fmt(get(c.id, n)?.notes['eventsPerStep']))])), '')

  out.push(...renderExtras(input))
  out.push(...renderMicro(input.micro))
  out.push('## Rows that did not run', '')
  const failed = [...failures].map(([k, why]) => `- \`${k}\`: ${why.replace(/\n/g, ' ')}`)
  out.push(failed.length ? failed.join('\n') : 'None: every row ran and passed its work check.', '')
  return out.join('\n')
}
