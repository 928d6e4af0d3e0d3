// Small formatting helpers shared by the report and the targets.
import type { PairedRatio } from './stats.ts'

export const key = (id: string, steps: number) => `${id}@${steps}`

export function fmt(x: number | undefined): string {
  if (x === undefined || !Number.isFinite(x)) return '—'
  if (x >= 100) return x.toFixed(0)
  if (x >= 10) return x.toFixed(1)
  if (x >= 1) return x.toFixed(2)
  return x.toPrecision(2)
}

/** `0.83× (0.71–0.95, 5)`: median of per-round ratios, their spread, and how many rounds. */
export function ratioCell(r: PairedRatio | undefined): string {
  if (!r) return '—'
  return r.rounds > 1 ? `${fmt(r.median)}× (${fmt(r.min)}–${fmt(r.max)}, ${r.rounds})` : `${fmt(r.median)}× (1 round)`
}

export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n')
}
