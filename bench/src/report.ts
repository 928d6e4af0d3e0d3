// Render RESULTS.md: machine, versions, command, one table per figure, ratios, targets.
import type { BenchConfig } from './configs.ts'
import type { MachineInfo } from './machine.ts'
import type { Summary } from './stats.ts'
import { CHUNKS_PER_STEP } from './workload.ts'

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
  readonly summaries: ReadonlyMap<string, Summary>
  /** Why a (config, N) has no figure: key `${id}@${N}` or `${id}` for the whole row. */
  readonly failures: ReadonlyMap<string, string>
}

export const key = (id: string, steps: number) => `${id}@${steps}`

function fmt(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return '—'
  if (x >= 100) return x.toFixed(0)
  if (x >= 10) return x.toFixed(1)
  if (x >= 1) return x.toFixed(2)
  return x.toPrecision(2)
}

function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '—'
  return `${fmt(a / b)}×`
}

const rowName = (c: BenchConfig) => `${c.label}${c.runtime === 'node22' ? ' ¹' : ''}`

function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n')
}

export function renderReport(input: ReportInput): string {
  const { configs, steps, summaries, failures } = input
  const get = (id: string, n: number) => summaries.get(key(id, n))
  const cell = (c: BenchConfig, n: number, value: (s: Summary) => string): string => {
    const s = get(c.id, n)
    if (s) return value(s)
    if (c.maxSteps !== undefined && n > c.maxSteps) return `not run (N ≤ ${c.maxSteps} only)`
    const why = failures.get(key(c.id, n)) ?? failures.get(c.id)
    if (!why) return '—'
    return why.startsWith('not built yet') ? 'not built yet' : 'failed ²'
  }
  const figureTable = (value: (s: Summary) => string) => table(
    ['framework', 'store', ...steps.map((n) => `N=${n}`)],
    configs.map((c) => [rowName(c), c.store, ...steps.map((n) => cell(c, n, value))]),
  )
  const ledgerRef = (c: BenchConfig) => (c.durable ? 'ledgerloop-jsonl' : 'ledgerloop-memory')
  const floorRef = (c: BenchConfig) => (c.durable ? 'floor-fsync-tool-turn' : 'floor-serialise')
  const ratioTable = (ref: (c: BenchConfig) => string, skip: (c: BenchConfig) => boolean) => table(
    ['framework', 'store', 'compared with', ...steps.map((n) => `N=${n}`)],
    configs.filter((c) => !skip(c)).map((c) => [
      rowName(c), c.store, ref(c),
      ...steps.map((n) => ratio(get(c.id, n)?.msPerStep, get(ref(c), n)?.msPerStep)),
    ]),
  )

  const out: string[] = []
  out.push('# Loop benchmark results', '')
  out.push(`Generated ${input.date} by \`${input.command}\` (${input.mode}; ${input.runs} run(s) per cell, each in a fresh process after a warm-up of ${input.warmupSteps} steps, cut at ${input.warmupMs} ms; total ${input.durationS.toFixed(0)} s).`)
  out.push('How it is measured: [README.md](README.md). Lower is better everywhere.', '')
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

  out.push('## Wall time per step (ms, median)', '')
  out.push(figureTable((s) => fmt(s.msPerStep)), '')
  out.push('## Spread of wall time per step (ms, min–max over runs)', '')
  out.push(figureTable((s) => `${fmt(s.msPerStepMin)}–${fmt(s.msPerStepMax)}${s.runs < input.runs ? ` (${s.runs} run${s.runs > 1 ? 's' : ''}: time budget)` : ''}`), '')
  out.push('## Wall time per streamed chunk (µs, median)', '')
  out.push(figureTable((s) => fmt(s.usPerChunk)), '')
  out.push('## Peak RSS of the run\'s process (MiB, median)', '')
  out.push(figureTable((s) => fmt(s.rssMiB)), '')
  out.push('## Peak V8 heap used (MiB, median)', '')
  out.push(figureTable((s) => fmt(s.heapMiB)), '')
  out.push('## Ratio to ledgerloop (per-step time ÷ ledgerloop\'s; in-memory rows against ledgerloop in memory, durable rows against ledgerloop with its durable JSONL store)', '')
  out.push(ratioTable(ledgerRef, (c) => c.group === 'ledgerloop' && c.id === ledgerRef(c)), '')
  out.push('## Ratio to the floor (per-step time ÷ the floor\'s; in-memory rows against "serialise only", durable rows against "write + fsync before tool body and at turn end")', '')
  out.push(ratioTable(floorRef, (c) => c.group === 'floor'), '')

  if (input.scaling.length) {
    out.push(`## ledgerloop per-step time by session size (ms, median; ${input.scalingSteps} steps timed after pre-filling the session)`, '')
    const stores = [...new Set(input.scaling.map((c) => c.store))]
    const sizes = [...new Set(input.scaling.map((c) => Number(c.variant.split(':')[1])))]
    out.push(table(['store', ...sizes.map((s) => `${s.toLocaleString('en-US')} events`), `largest ÷ smallest`], stores.map((store) => {
      const row = sizes.map((size) => input.scaling.find((c) => c.store === store && c.variant.endsWith(`:${size}`))!)
      const vals = row.map((c) => get(c.id, input.scalingSteps)?.msPerStep)
      return [store, ...row.map((c) => cell(c, input.scalingSteps, (s) => fmt(s.msPerStep))), ratio(vals.at(-1), vals[0])]
    })), '')
  }

  out.push('## Events logged per step', '')
  out.push(table(['framework', 'store', ...steps.map((n) => `N=${n}`)], configs
    .filter((c) => steps.some((n) => get(c.id, n)?.notes['eventsPerStep'] !== undefined))
    .map((c) => [rowName(c), c.store, ...steps.map((n) => fmt(get(c.id, n)?.notes['eventsPerStep']))])), '')

  out.push('## Targets from issue 7 (reported, not asserted)', '')
  const ll = (id: string, n: number) => get(id, n)?.msPerStep
  const verdict = (ok: boolean | undefined) => (ok === undefined ? 'not measured' : ok ? 'met' : 'missed')
  const lt = (a?: number, b?: number) => (a === undefined || b === undefined ? undefined : a <= b)
  const n100 = 100
  const rssAt1000 = configs.filter((c) => c.group === 'peer').map((c) => get(c.id, 1000)?.rssMiB).filter((x): x is number => x !== undefined)
  const targets: string[][] = [
    ['ledgerloop in memory ≤ pi per step (N=100)', `${fmt(ll('ledgerloop-memory', n100))} vs ${fmt(ll('pi', n100))}`, verdict(lt(ll('ledgerloop-memory', n100), ll('pi', n100)))],
    ['ledgerloop JSONL ≤ 2× the floor with the same fsyncs (N=100)', `${fmt(ll('ledgerloop-jsonl', n100))} vs 2 × ${fmt(ll('floor-fsync-tool-turn', n100))}`, verdict(lt(ll('ledgerloop-jsonl', n100), (ll('floor-fsync-tool-turn', n100) ?? NaN) * 2))],
    ['ledgerloop JSONL ≥ 5× faster than the original harness with its JSONL store (N=100)', `${fmt(ll('ledgerloop-jsonl', n100))} vs ${fmt(ll('dsh-jsonl', n100))} / 5`, verdict(lt(ll('ledgerloop-jsonl', n100), (ll('dsh-jsonl', n100) ?? NaN) / 5))],
    ['per-step time at 100k events ≤ 1.2× that at 1k (memory)', `${fmt(ll('scaling-memory-100000', input.scalingSteps))} vs 1.2 × ${fmt(ll('scaling-memory-1000', input.scalingSteps))}`, verdict(lt(ll('scaling-memory-100000', input.scalingSteps), (ll('scaling-memory-1000', input.scalingSteps) ?? NaN) * 1.2))],
    ['peak RSS at N=1000 ≤ the lowest peer\'s', `${fmt(get('ledgerloop-memory', 1000)?.rssMiB)} vs ${fmt(rssAt1000.length ? Math.min(...rssAt1000) : undefined)} MiB`, verdict(lt(get('ledgerloop-memory', 1000)?.rssMiB, rssAt1000.length ? Math.min(...rssAt1000) : undefined))],
  ]
  out.push(table(['target', 'measured (ms/step or MiB)', 'verdict'], targets), '')

  out.push('## Rows that did not run', '')
  const failed = [...failures].map(([k, why]) => `- \`${k}\`: ${why.replace(/\n/g, ' ')}`)
  out.push(failed.length ? failed.join('\n') : 'None: every row ran and passed its work check.', '')
  return out.join('\n')
}
