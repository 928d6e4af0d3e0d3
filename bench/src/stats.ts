// Per-run figures and their medians.
import type { ChildResult } from './protocol.ts'
import { CHUNKS_PER_STEP } from './workload.ts'

export type OkResult = Extract<ChildResult, { ok: true }>

export interface RunFigures {
  readonly msPerStep: number
  readonly usPerChunk: number
  readonly rssMiB: number
  readonly heapMiB: number
}

export function figures(r: OkResult): RunFigures {
  const steps = r.counts.steps
  return {
    msPerStep: r.wallMs / steps,
    usPerChunk: (r.wallMs * 1000) / (steps * CHUNKS_PER_STEP),
    rssMiB: r.maxRssKiB / 1024,
    heapMiB: r.peakHeapBytes / 2 ** 20,
  }
}

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

export interface Summary {
  readonly runs: number
  readonly msPerStep: number
  readonly msPerStepMin: number
  readonly msPerStepMax: number
  readonly usPerChunk: number
  readonly rssMiB: number
  readonly heapMiB: number
  readonly notes: Record<string, number>
  readonly node: string
}

export function summarise(results: readonly OkResult[]): Summary | undefined {
  if (results.length === 0) return undefined
  const f = results.map(figures)
  const noteKeys = new Set(results.flatMap((r) => Object.keys(r.notes)))
  const notes: Record<string, number> = {}
  for (const k of noteKeys) notes[k] = median(results.map((r) => r.notes[k] ?? Number.NaN))
  const steps = f.map((x) => x.msPerStep)
  return {
    runs: results.length,
    msPerStep: median(steps),
    msPerStepMin: Math.min(...steps),
    msPerStepMax: Math.max(...steps),
    usPerChunk: median(f.map((x) => x.usPerChunk)),
    rssMiB: median(f.map((x) => x.rssMiB)),
    heapMiB: median(f.map((x) => x.heapMiB)),
    notes,
    node: results[0]!.node,
  }
}

/** A run and the round it ran in (rows compared in a paired ratio must share the round). */
export type RoundResult = OkResult & { readonly round: number }

/** The median of per-round ratios `row ÷ ref`, their spread and how many rounds had both. */
export interface PairedRatio {
  readonly median: number
  readonly min: number
  readonly max: number
  readonly rounds: number
}

/** Per-round ratios of a figure; undefined when no round measured both. */
export function pairedRatio(
  row: readonly RoundResult[] | undefined,
  ref: readonly RoundResult[] | undefined,
  figure: (f: RunFigures) => number = (f) => f.msPerStep,
): PairedRatio | undefined {
  if (!row || !ref) return undefined
  const ratios: number[] = []
  for (const a of row) {
    const b = ref.find((r) => r.round === a.round)
    if (!b) continue
    const x = figure(figures(a))
    const y = figure(figures(b))
    if (Number.isFinite(x) && Number.isFinite(y) && y > 0) ratios.push(x / y)
  }
  return ratiosSummary(ratios)
}

/** Median, min and max of a list of ratios (undefined when empty). */
export function ratiosSummary(ratios: readonly number[]): PairedRatio | undefined {
  if (ratios.length === 0) return undefined
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), rounds: ratios.length }
}
