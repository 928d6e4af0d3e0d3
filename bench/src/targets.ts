// The "Targets" section of RESULTS.md (issue 15), computed from the runs, and the tables of the rows that are
// not one agent turn (loading, many sessions, PostgreSQL). Nothing here is hard-coded but the limits.
import { fmt, key, table } from './format.ts'
import type { ReportInput } from './report.ts'
import { median, ratiosSummary, type PairedRatio, type RunFigures } from './stats.ts'

/** Paired ratio of two cells, by run key (`id@N`): per-round `row ÷ ref` of a figure (default ms/step). */
export type Ratio = (rowKey: string, refKey: string, figure?: (f: RunFigures) => number) => PairedRatio | undefined

export type TargetsInput = ReportInput & { readonly pairedKeys: Ratio }

interface TargetRow {
  readonly target: string
  readonly at: string
  readonly measured: string
  readonly spread: string
  readonly rounds: string
  readonly limit: string
  readonly verdict: string
  readonly note: string
}

const pct = (x: number) => `${(x * 100).toFixed(0)}%`

/** A target on a ratio: met when the median of the per-round ratios is at most `limit`. */
function ratioRow(target: string, at: string, r: PairedRatio | undefined, limit: number, missing: string, extra = '', speedUp = false): TargetRow {
  const limitText = speedUp ? `≤ ${fmt(limit)}× (≥ ${fmt(1 / limit)}× faster)` : `≤ ${fmt(limit)}×`
  if (!r) return { target, at, measured: '—', spread: '—', rounds: '0', limit: limitText, verdict: 'not measured', note: [missing, extra].filter(Boolean).join('; ') }
  const met = r.median <= limit
  const faster = speedUp ? ` = ${fmt(1 / r.median)}× faster` : ''
  const margin = met ? `${pct(1 - r.median / limit)} under the limit` : `missed by ${pct(r.median / limit - 1)} (the median ratio would have to fall ${pct(1 - limit / r.median)})`
  return {
    target, at, measured: `${fmt(r.median)}×${faster}`, spread: `${fmt(r.min)}–${fmt(r.max)}×`, rounds: String(r.rounds),
    limit: limitText, verdict: met ? (r.max <= limit ? 'met' : 'met (median; not every round)') : 'missed', note: [margin, extra].filter(Boolean).join('; '),
  }
}

export function renderTargets(input: TargetsInput): string[] {
  const { pairedKeys, steps, failures, summaries } = input
  const rows: TargetRow[] = []
  const fullSteps = [10, 100, 1000]
  const why = (ids: readonly string[], n: number): string => {
    if (!steps.includes(n)) return `not run in ${input.mode} mode (N = ${steps.join(', ')})`
    for (const id of ids) {
      if (!input.configs.some((c) => c.id === id)) return `\`${id}\` not selected (\`--only\`)`
      const f = failures.get(key(id, n)) ?? failures.get(id)
      if (f) return `\`${id}\`: ${f.split('\n')[0]!.slice(0, 160)}`
    }
    return 'no round measured both'
  }
  const loop = (target: string, row: string, ref: string, limit: number, extra: (n: number) => string = () => '', speedUp = false) => {
    for (const n of fullSteps) rows.push(ratioRow(target, `N=${n}`, pairedKeys(key(row, n), key(ref, n)), limit, why([row, ref], n), extra(n), speedUp))
  }
  const fast = (row: string, ref: string) => (n: number) => {
    const r = pairedKeys(key(row, n), key(ref, n))
    return r ? `fast path (\`${row}\`): ${fmt(r.median)}×` : ''
  }
  const cross = (n: number) => {
    const r = pairedKeys(key('ledgerloop-memory', n), key('pi', n))
    return [r ? `across shapes (ledgerloop async* ÷ pi eager): ${fmt(r.median)}×` : '', fast('ledgerloop-memory-replay', 'pi')(n)].filter(Boolean).join('; ')
  }
  loop('in memory ≤ 1.0× pi, both doubles `async *` generators', 'ledgerloop-memory', 'pi-async', 1.0, cross)
  loop("in memory ≤ 1.0× pi, both doubles eager (pi's shape)", 'ledgerloop-memory-queue', 'pi', 1.0)
  loop('durable JSONL ≤ 1.5× the floor with the same fsyncs', 'ledgerloop-jsonl', 'floor-fsync-tool-turn', 1.5, fast('ledgerloop-jsonl-replay', 'floor-fsync-tool-turn'))
  loop("JSONL `fsync: 'interval'` ≥ 5× faster than the original's JSONL store", 'ledgerloop-jsonl-interval', 'dsh-jsonl', 0.2, () => '', true)
  loop("JSONL fsync per tool ≥ 2× faster than the original's JSONL store", 'ledgerloop-jsonl', 'dsh-jsonl', 0.5, () => '', true)

  // Loading: the median of fresh-process resumes against 2 s, as a ratio to the limit.
  for (const load of input.loads) {
    const target = `load a 1M-event session from ${load.store === 'jsonl' ? 'JSONL' : 'SQLite'} (\`resumeAgent\`) < 2 s`
    const at = load.events !== undefined ? `${load.events.toLocaleString('en-US')} events` : `${load.targetEvents.toLocaleString('en-US')} events`
    if (load.error || load.runs.length === 0) {
      rows.push({ target, at, measured: '—', spread: '—', rounds: '0', limit: '< 2 s', verdict: 'not measured', note: load.error ?? 'no run' })
      continue
    }
    const times = load.runs.map((r) => r.resumeMs / 1000)
    const m = median(times)
    const small = (load.events ?? 0) < 1_000_000
    const met = m < 2
    rows.push({
      target, at, measured: `${fmt(m)} s`, spread: `${fmt(Math.min(...times))}–${fmt(Math.max(...times))} s`, rounds: String(times.length), limit: '< 2 s',
      verdict: small ? `not measured at 1M (${met ? 'under' : 'over'} 2 s at this size)` : met ? 'met' : 'missed',
      note: [
        small ? 'quick mode uses a smaller fixture: run full mode or `--heavy`' : met ? `${pct(1 - m / 2)} under the limit` : `missed by ${pct(m / 2 - 1)}`,
        `peak RSS ${fmt(median(load.runs.map((r) => r.rssMiB)))} MiB`,
        `then \`deriveMessages()\` ${fmt(median(load.runs.map((r) => r.foldMs)))} ms`,
      ].join('; '),
    })
  }

  // Memory: ledgerloop's peak RSS ÷ the lowest peer's at N=1000, paired by round.
  const peers = input.configs.filter((c) => c.group === 'peer')
  const lowest = peers
    .map((c) => ({ id: c.id, rss: summaries.get(key(c.id, 1000))?.rssMiB }))
    .filter((p): p is { id: string; rss: number } => p.rss !== undefined)
    .sort((a, b) => a.rss - b.rss)[0]
  const rss = (f: RunFigures) => f.rssMiB
  const missingPeer = lowest ? '' : why(peers.map((c) => c.id), 1000)
  const lowNote = lowest ? `lowest peer: \`${lowest.id}\` (${fmt(lowest.rss)} MiB)` : ''
  const llRss = summaries.get(key('ledgerloop-memory', 1000))?.rssMiB
  rows.push(ratioRow('peak RSS at N=1000 ≤ the lowest peer\'s at N=1000', 'N=1000', lowest ? pairedKeys(key('ledgerloop-memory', 1000), key(lowest.id, 1000), rss) : undefined, 1.0,
    missingPeer || why(['ledgerloop-memory'], 1000), [lowNote, llRss !== undefined ? `ledgerloop ${fmt(llRss)} MiB` : ''].filter(Boolean).join('; ')))
  // The session is built through the loop in the measuring process (its warm-up), then N steps run on it.
  const big = input.resident.find((c) => c.id === 'resident-memory-100000')
  const bigSummary = summaries.get(key('resident-memory-100000', input.scalingSteps))
  const bigFailure = failures.get(key('resident-memory-100000', input.scalingSteps)) ?? failures.get('resident-memory-100000')
  const events = bigSummary?.notes.sessionEventsAtStart
  rows.push(ratioRow('peak RSS with a 100k-event session ≤ the lowest peer\'s at N=1000', '100,000 events', lowest && big ? pairedKeys(key(big.id, input.scalingSteps), key(lowest.id, 1000), rss) : undefined, 1.0,
    missingPeer || (bigFailure ? `\`resident-memory-100000\`: ${bigFailure.split('\n')[0]!.slice(0, 160)}` : big ? 'no round measured both' : 'the memory row did not run'),
    [lowNote, bigSummary ? `ledgerloop ${fmt(bigSummary.rssMiB)} MiB${events !== undefined ? ` (${events.toLocaleString('en-US')} events, then ${input.scalingSteps} steps)` : ''}` : ''].filter(Boolean).join('; ')))

  // Many sessions: listing the 20 most recent at 10k sessions, and how it grows from 100 to 100k.
  const listing = (count: number) => input.listings.find((l) => l.count === count)
  const at10k = listing(10_000)
  const target = 'list the 20 most recent of 10,000 JSONL sessions < 100 ms of work'
  if (!at10k || at10k.runs.length === 0) {
    rows.push({ target, at: '10,000 sessions', measured: '—', spread: '—', rounds: '0', limit: '< 100 ms', verdict: 'not measured', note: at10k?.error ?? `not run (sessions measured: ${input.listings.map((l) => l.count.toLocaleString('en-US')).join(', ') || 'none'}; full mode or \`--heavy\`)` })
  } else {
    const ms = at10k.runs.map((r) => r.listMs)
    const m = median(ms)
    const small = listing(100)
    const large = listing(100_000)
    const growth = small && large ? ratiosSummary(large.runs.flatMap((r, i) => (small.runs[i] ? [r.listMs / small.runs[i]!.listMs] : []))) : undefined
    rows.push({
      target, at: '10,000 sessions', measured: `${fmt(m)} ms`, spread: `${fmt(Math.min(...ms))}–${fmt(Math.max(...ms))} ms`, rounds: String(ms.length), limit: '< 100 ms',
      verdict: m < 100 ? 'met' : 'missed',
      note: [
        m < 100 ? `${pct(1 - m / 100)} under the limit` : `missed by ${pct(m / 100 - 1)}`,
        growth ? `100,000 ÷ 100 sessions: ${fmt(growth.median)}× (${fmt(growth.min)}–${fmt(growth.max)}×)` : '100,000 ÷ 100: not measured',
        at10k.runs.every((r) => r.limitHonoured) ? '' : '`store.list` ignores `{ limit }` here: the whole list is read, then cut',
        `\`ledgerloop sessions --limit 20\` work ${fmt(median(at10k.runs.map((r) => r.cliWorkMs)))} ms`,
      ].filter(Boolean).join('; '),
    })
  }

  // PostgreSQL: store ÷ floor per run (the two back to back, order alternating).
  const pg = input.postgres
  const pgRatio = pg ? ratiosSummary(pg.runs.map((r) => r.storeMs / r.floorMs)) : undefined
  rows.push(ratioRow('PostgreSQL per step ≤ 1.5× the same inserts issued directly', pg ? `${pg.steps} steps` : '—', pgRatio, 1.5,
    pg?.skipped ? `not run: ${pg.skipped}` : 'not run (`--only` left it out, or `--no-extras`)',
    pg && pg.runs.length ? `store ${fmt(median(pg.runs.map((r) => r.storeMs)))} ms/step, floor ${fmt(median(pg.runs.map((r) => r.floorMs)))} ms/step` : ''))

  // Issue 7, kept: a step at 100k events costs what one at 1k does.
  rows.push(ratioRow('(issue 7) per-step time at 100k events ≤ 1.2× that at 1k (memory)', `${input.scalingSteps} steps`,
    pairedKeys(key('scaling-memory-100000', input.scalingSteps), key('scaling-memory-1000', input.scalingSteps)), 1.2, 'the scaling rows did not run'))

  const out: string[] = []
  out.push('## Targets (issue 15)', '')
  out.push('Computed from this run\'s data. A ratio is ledgerloop ÷ the comparison, taken per round from runs made back to back in fresh processes, then the median over rounds; "spread" is the lowest and highest per-round ratio; "rounds" how many rounds measured both. Loading and listing figures are medians of fresh-process runs. Why a target is missed is discussed in README.md.', '')
  out.push(table(['target', 'at', 'measured (median)', 'spread', 'rounds', 'limit', 'verdict', 'by how much / notes'],
    rows.map((r) => [r.target, r.at, r.measured, r.spread, r.rounds, r.limit, `**${r.verdict}**`, r.note])), '')
  return out
}

export function renderExtras(input: ReportInput): string[] {
  const out: string[] = []
  if (input.loads.length) {
    out.push('## Loading a long session (fresh process: open the store, `harness.resumeAgent(id)`; then `session.deriveMessages()`)', '')
    out.push(table(['store', 'events', 'resume (s, median)', 'spread (s)', 'runs', 'deriveMessages (ms)', 'peak RSS (MiB)', 'fixture'], input.loads.map((l) => {
      if (l.error || l.runs.length === 0) return [l.store, l.targetEvents.toLocaleString('en-US'), 'failed', '—', '0', '—', '—', (l.error ?? '').slice(0, 200)]
      const s = l.runs.map((r) => r.resumeMs / 1000)
      return [l.store, (l.events ?? 0).toLocaleString('en-US'), fmt(median(s)), `${fmt(Math.min(...s))}–${fmt(Math.max(...s))}`, String(s.length),
        fmt(median(l.runs.map((r) => r.foldMs))), fmt(median(l.runs.map((r) => r.rssMiB))), l.cached ? 'cached' : `built in ${fmt(l.buildS)} s (untimed)`]
    })), '')
  }
  if (input.listings.length) {
    out.push('## Listing many sessions (JSONL folder; fresh process per run)', '')
    out.push('`list` = `new JsonlStore({ dir })` + `store.list({ limit: 20 })`, first call in the process; `again` = the same call once more; `CLI` = `ledgerloop sessions --store DIR --limit 20 --json` wall time, `empty` = the same command on an empty folder (process start and module loading), `CLI work` = the difference (within a few tens of ms it is noise).', '')
    out.push(table(['sessions', 'list (ms, median)', 'spread (ms)', 'again (ms)', 'CLI (ms)', 'empty (ms)', 'CLI work (ms)', 'runs', 'limit honoured', 'fixture'], input.listings.map((l) => {
      if (l.error || l.runs.length === 0) return [l.count.toLocaleString('en-US'), 'failed', '—', '—', '—', '—', '—', '0', '—', (l.error ?? '').slice(0, 200)]
      const ms = l.runs.map((r) => r.listMs)
      return [l.count.toLocaleString('en-US'), fmt(median(ms)), `${fmt(Math.min(...ms))}–${fmt(Math.max(...ms))}`, fmt(median(l.runs.map((r) => r.warmMs))),
        fmt(median(l.runs.map((r) => r.cliMs))), fmt(median(l.runs.map((r) => r.cliEmptyMs))), fmt(median(l.runs.map((r) => r.cliWorkMs))), String(ms.length), l.runs.every((r) => r.limitHonoured) ? 'yes' : 'no (whole list read)', l.cached ? 'cached' : `built in ${fmt(l.buildS)} s (untimed)`]
    })), '')
  }
  const pg = input.postgres
  if (pg) {
    out.push('## PostgreSQL per step (`micro/postgres-workers.ts --per-step-only`: 25 events appended + one flush, against one multi-row INSERT with `pg`)', '')
    if (pg.skipped && pg.runs.length === 0) out.push(`Not run: ${pg.skipped}.`, '')
    else {
      out.push(table(['run', 'PostgresStore (ms/step)', 'floor (ms/step)', 'ratio'], pg.runs.map((r, i) => [String(i + 1), fmt(r.storeMs), fmt(r.floorMs), `${fmt(r.storeMs / r.floorMs)}×`])), '')
      if (pg.skipped) out.push(`Stopped early: ${pg.skipped}.`, '')
    }
  }
  return out
}
