/**
 * Resume flat in session length (issue 30, target 2): `resumeAgent` of a 1M-event session ÷ that of a 10k-event
 * one, each in a FRESH process with its resume checkpoint beside the log (JSONL) or in the database (SQLite), for
 * time and for peak RSS. Target: ≤ 3× for both. The sessions have reopen's shape (each turn one step of 125
 * reasoning + 500 text deltas): `--small` turns (default 16: 10,210 events) and `--large` turns (default 1,600:
 * 1,020,802 events), recorded once by the loop through the public API into reopen's cache folder (the first run
 * of the large one takes minutes). The runs interleave small and large, so a noisy neighbour hits both alike.
 *
 *   npm run build && npx tsx bench/micro/resume-flat.ts [--small 16] [--large 1600] [--runs 5] [--cache /tmp/ll-reopen] [--json]
 */
import { execFileSync } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { median, RESULT_PREFIX } from './fixtures-shared.js'

const { values } = parseArgs({
  options: {
    small: { type: 'string', default: '16' },
    large: { type: 'string', default: '1600' },
    runs: { type: 'string', default: '5' },
    cache: { type: 'string', default: '/tmp/ll-reopen' },
    json: { type: 'boolean', default: false },
  },
})
const reopen = join(dirname(fileURLToPath(import.meta.url)), 'reopen.ts')
const shape = (turns: string): string[] => ['--turns', turns, '--cache', values.cache]

/** One fresh-process resume, as reopen's child measures it. */
interface Resume {
  readonly ms: number
  readonly rssMiB?: number
  readonly peakRssMiB?: number
  readonly events?: number
  readonly lazy?: boolean
}

function resume(store: 'jsonl' | 'sqlite', turns: string): Resume {
  const out = execFileSync(process.execPath, [...process.execArgv, reopen, '--child', store, ...shape(turns)], { encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').pop() as string) as Resume
}

// reopen records both stores' sessions when they are missing and leaves each with its checkpoint.
for (const turns of [values.small, values.large]) {
  execFileSync(process.execPath, [...process.execArgv, reopen, ...shape(turns), '--runs', '1', '--snapshots', 'on', '--no-dsh', '--json'], { stdio: ['ignore', 'ignore', 'inherit'] })
}
const runs = Number(values.runs)
const rows = new Map<string, Resume[]>()
for (let r = 0; r < runs; r++) {
  for (const store of ['jsonl', 'sqlite'] as const) {
    // The order flips between rounds.
    for (const turns of r % 2 === 0 ? [values.small, values.large] : [values.large, values.small]) {
      const key = `${store}:${turns}`
      rows.set(key, [...(rows.get(key) ?? []), resume(store, turns)])
    }
  }
}
const of = (store: string, turns: string): Resume[] => rows.get(`${store}:${turns}`) ?? []
const warnings: string[] = []
for (const [key, list] of rows) if (list.some((x) => x.lazy !== true)) warnings.push(`${key}: ${list.filter((x) => x.lazy !== true).length} of ${list.length} resumes did not use the checkpoint`)
for (const w of warnings) console.error(`warning: ${w}`)

const out = []
for (const store of ['jsonl', 'sqlite'] as const) {
  const small = of(store, values.small)
  const large = of(store, values.large)
  const at = `${(large[0]?.events ?? 0).toLocaleString('en')} ÷ ${(small[0]?.events ?? 0).toLocaleString('en')} events, fresh process, median of ${runs}`
  const name = store === 'jsonl' ? 'JSONL' : 'SQLite'
  const ms = (list: Resume[]): number => median(list.map((x) => x.ms))
  const rss = (list: Resume[]): number => median(list.map((x) => x.peakRssMiB ?? Number.NaN))
  const spread = (list: Resume[]): string => `${Math.min(...list.map((x) => x.ms)).toFixed(1)}–${Math.max(...list.map((x) => x.ms)).toFixed(1)} ms`
  out.push({ target: `${name} resume of a 1M-event session ≤ 3× a 10k-event one (time), with its checkpoint`, at, measured: ms(large) / ms(small), spread: `${spread(large)} vs ${spread(small)}`, limit: 3, notes: `${ms(large).toFixed(1)} ms vs ${ms(small).toFixed(1)} ms` })
  out.push({ target: `${name} resume of a 1M-event session ≤ 3× a 10k-event one (peak RSS), with its checkpoint`, at, measured: rss(large) / rss(small), limit: 3, notes: `${rss(large).toFixed(0)} MiB vs ${rss(small).toFixed(0)} MiB` })
}
if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: warnings.length === 0, rows: out, ...(warnings.length > 0 ? { error: warnings.join('; ') } : {}) }))
else for (const row of out) console.log(`${row.target}: ${row.measured.toFixed(2)}× (${row.notes}; ${row.at})`)
