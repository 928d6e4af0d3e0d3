import type { Command } from 'commander'
import { JsonlStore } from '../../store/jsonl/jsonl-store.js'
import type { SessionStore, SessionSummary } from '../../store/types.js'
import { listSessions, type SessionQuery } from '../../app/session-listing.js'
import { formatCost, type PricingCatalogue } from '../../views/cost.js'
import { EXIT } from '../cli-error.js'
import { cliPricing, cliStore } from '../cli-harness.js'
import { resolveConfig, type EffectiveConfig } from '../../app/config.js'
import type { LogSummary } from '../../views/session-summary.js'
import { sessionRowFacts, unreadableSessionRow, type SessionRowFacts } from '../../views/session-row.js'
import { isSubagentSession } from '../../views/child-sessions.js'
import { styleFor } from '../style.js'
import { emptyUsage } from '../../llm/token-usage.js'
import { addStoreOption, positiveInteger } from './agent-options.js'
import type { ContentMatch } from '../../store/content-search.js'

/** One row of `ledgerloop sessions --json`. */
export interface SessionRow extends LogSummary {
  readonly id: string
  /** ISO time of the last write. */
  readonly updatedAt: string
  readonly sizeBytes?: number
  readonly parentSession?: string
  /** Set on a rerun's session: the recorded session it reran. */
  readonly forkedFrom?: string
  /** Set on a sub-agent's session: the parent's tool call that started it. */
  readonly parentCallId?: string
  /** A sub-agent's profile. */
  readonly agentProfile?: string
  /** Why the session could not be read, when it could not. */
  readonly problem?: string
  /** What the session cost from its logged usage, when its model has published prices. */
  readonly cost?: { readonly total: number; readonly currency: 'USD' | 'CNY'; readonly pricesAsOf?: string }
  /** Set while the session is quarantined (the same work crashed too often): why. Resume it with `--force`. */
  readonly quarantined?: string
  /** With `--grep`: where the text was found (the earliest matching prompt, answer or tool output) and a snippet. */
  readonly match?: ContentMatch
}

/** One page of `sessions`: its rows, how many sessions matched in all, and the store's note about its index. */
export interface SessionsPage {
  readonly rows: SessionRow[]
  readonly total: number
  readonly indexNote?: string
}

/**
 * Lists stored sessions newest first through the store's listing (app/session-listing.ts: one page when `limit`
 * is given; `search` over titles, first prompts and id prefixes; `keep` a filter of the matches), then reads
 * each listed log for its turns, usage and cost: the work grows with the page, not with the number of stored
 * sessions.
 */
export async function listSessionsPage(store: SessionStore, pricing: PricingCatalogue, query: SessionQuery = {}): Promise<SessionsPage> {
  const matches = await listSessions(store, query)
  const rows: SessionRow[] = []
  for (const s of matches.sessions) rows.push(await sessionRow(store, pricing, s))
  return { rows, total: matches.total, ...(matches.indexNote !== undefined ? { indexNote: matches.indexNote } : {}) }
}

async function sessionRow(store: SessionStore, pricing: PricingCatalogue, s: SessionSummary): Promise<SessionRow> {
  let facts: SessionRowFacts
  try {
    const { events } = await store.read(s.id)
    facts = sessionRowFacts(s, events, pricing)
  } catch (error) {
    facts = unreadableSessionRow(s, (error as Error).message)
  }
  // The store's listing says whether a quarantine is in force (from the log's quarantine marks).
  const row = s.status === 'quarantined' ? { ...cliRow(facts), quarantined: s.quarantineReason ?? 'quarantined' } : cliRow(facts)
  return s.match !== undefined ? { ...row, match: s.match } : row
}

/**
 * The shared row facts under the names `sessions --json` has always printed, in its order: the ISO time, the
 * store's fields, usage on every row (empty when the log could not be read), the cost's date as `pricesAsOf`.
 */
function cliRow(f: SessionRowFacts): SessionRow {
  return {
    id: f.id,
    updatedAt: new Date(f.updatedAt).toISOString(),
    ...(f.sizeBytes !== undefined ? { sizeBytes: f.sizeBytes } : {}),
    ...(f.parentSession !== undefined ? { parentSession: f.parentSession } : {}),
    ...(f.forkedFrom !== undefined ? { forkedFrom: f.forkedFrom } : {}),
    ...(f.parentCallId !== undefined ? { parentCallId: f.parentCallId } : {}),
    ...(f.agentProfile !== undefined ? { agentProfile: f.agentProfile } : {}),
    title: f.title,
    turns: f.turns,
    lastReason: f.lastReason,
    usage: f.usage ?? emptyUsage(),
    ...(f.cost !== undefined ? { cost: { total: f.cost.total, currency: f.cost.currency, ...(f.cost.asOf !== undefined ? { pricesAsOf: f.cost.asOf } : {}) } } : {}),
    ...(f.problem !== undefined ? { problem: f.problem } : {}),
  }
}

/** Formats rows as the `sessions` table. */
export function sessionsTable(rows: readonly SessionRow[], dim: (s: string) => string = (s) => s): string {
  if (rows.length === 0) return 'no sessions yet (ledgerloop run "…" starts one)\n'
  const idWidth = Math.max(...rows.map((r) => r.id.length))
  // The same widths as the rows below, so each name stands over its column.
  const header = dim(`${'ID'.padEnd(idWidth)}  ${'UPDATED'.padEnd(19)}  ${'TURNS'.padEnd(9)}  ${'LAST REASON'.padEnd(11)} ${'SIZE'.padStart(7)} ${'COST'.padStart(10)}  TITLE`)
  const lines = rows.map((r) => {
    const when = r.updatedAt.replace('T', ' ').slice(0, 19)
    const size = r.sizeBytes === undefined ? '' : r.sizeBytes < 10_240 ? `${r.sizeBytes} B` : `${Math.round(r.sizeBytes / 1024)} KB`
    const title = (r.problem !== undefined ? `(unreadable: ${r.problem})` : r.title === '' ? '(no prompt)' : r.title) + (r.quarantined !== undefined ? `  [quarantined: ${r.quarantined}]` : '')
    const cost = r.cost !== undefined ? formatCost(r.cost.total, r.cost.currency) : ''
    const child = isSubagentSession(r)
      ? dim(`↳ sub-agent of ${String(r.parentSession).slice(0, 8)} (${r.agentProfile ?? '?'}) `)
      : r.forkedFrom !== undefined
        ? dim(`↳ rerun of ${r.forkedFrom.slice(0, 8)} `)
        : r.parentSession !== undefined
          ? dim(`↳ fork of ${r.parentSession.slice(0, 8)} `)
        : ''
    const line = `${r.id.padEnd(idWidth)}  ${dim(when)}  ${String(r.turns).padStart(3)} turn${r.turns === 1 ? ' ' : 's'}  ${(r.lastReason ?? '-').padEnd(11)} ${size.padStart(7)} ${cost.padStart(10)}  ${child}${title}`
    // `--grep`: the match under its row, indented past the id.
    return r.match === undefined ? line : `${line}\n${' '.repeat(idWidth + 2)}${dim(`${r.match.part} #${r.match.seq}:`)} ${r.match.snippet}`
  })
  return `${[header, ...lines].join('\n')}\n`
}

/** Flags of `sessions`. */
export interface SessionsFlags {
  readonly json?: boolean
  readonly limit?: number
  readonly all?: boolean
  readonly search?: string
  /** Only sessions whose prompts, answers or tool output contain this text. */
  readonly grep?: string
  /** Hide sub-agents' sessions. */
  readonly roots?: boolean
  /** Rebuild the JSONL session index from the logs first. */
  readonly reindex?: boolean
  readonly store?: string
}

/** How many sessions `sessions` shows on a terminal unless `--all` or `--limit` says otherwise. */
export const DEFAULT_SESSIONS_LIMIT = 20

/**
 * How many rows `sessions` shows: `--all` every one, `--limit N` N; otherwise {@link DEFAULT_SESSIONS_LIMIT}
 * when a person reads the output on a terminal, every one when it goes to a pipe or a file (a script that
 * greps or parses the list must not silently see only the newest 20).
 */
export function sessionsLimit(flags: Pick<SessionsFlags, 'all' | 'limit'>, stdoutIsTerminal: boolean): number | undefined {
  if (flags.all === true) return undefined
  if (flags.limit !== undefined) return flags.limit
  return stdoutIsTerminal ? DEFAULT_SESSIONS_LIMIT : undefined
}

/** `ledgerloop sessions [--json] [--limit N] [--all] [--search TEXT] [--grep TEXT] [--roots] [--reindex]`. */
export async function sessionsCommand(flags: SessionsFlags): Promise<number> {
  const config = resolveConfig(flags.store !== undefined ? { store: flags.store } : {}, process.env, process.cwd(), { lenient: true })
  warnIgnoredConfig(config)
  const store = await cliStore(config)
  let page: SessionsPage
  const limit = sessionsLimit(flags, process.stdout.isTTY === true)
  try {
    if (flags.reindex === true && store instanceof JsonlStore) {
      const rebuilt = await store.reindex()
      process.stderr.write(`ledgerloop: rebuilt the session index ${store.indexPath} from ${rebuilt.length} session${rebuilt.length === 1 ? '' : 's'}\n`)
    }
    // Which sessions are sub-agents' is in every summary (the header's links): `--roots` filters the matches, then pages.
    page = await listSessionsPage(store, cliPricing(config), {
      ...(flags.search !== undefined ? { search: flags.search } : {}),
      ...(flags.grep !== undefined ? { grep: flags.grep } : {}),
      ...(limit !== undefined ? { limit } : {}),
      ...(flags.roots === true ? { keep: (s: SessionSummary) => !isSubagentSession(s) } : {}),
    })
    if (page.indexNote !== undefined) process.stderr.write(`ledgerloop: note: ${page.indexNote}\n`)
  } finally {
    await store.close()
  }
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify(page.rows, null, 2)}\n`)
  } else {
    const style = styleFor(process.stdout)
    if (page.rows.length === 0 && flags.grep !== undefined) process.stdout.write(`no session's prompts, answers or tool output contain ${JSON.stringify(flags.grep.trim())}\n`)
    else process.stdout.write(sessionsTable(page.rows, style.dim))
    if (page.rows.length < page.total) {
      const more = `showing ${page.rows.length} of ${page.total}${flags.search !== undefined || flags.grep !== undefined ? ' matching' : ''}; --all for all, --limit N for more`
      process.stdout.write(`${style.dim(more)}\n`)
    }
  }
  return EXIT.ok
}

/** A read-only command ran past a broken config file: say so once, on stderr. */
export function warnIgnoredConfig(config: EffectiveConfig): void {
  if (config.ignoredConfigProblem !== undefined) process.stderr.write(`ledgerloop: warning: ignoring the config file: ${config.ignoredConfigProblem}\n`)
}

/** Registers `sessions`. */
export function registerSessions(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('sessions').description('list stored sessions, newest first'))
    .option('--json', 'an array of {id, title, updatedAt, turns, lastReason, usage, cost?, sizeBytes?, parentSession?, forkedFrom?, parentCallId?, agentProfile?, problem?, quarantined?, match?: {seq, part, snippet}}')
    .option('--limit <n>', `show at most N sessions (default: ${DEFAULT_SESSIONS_LIMIT} on a terminal, all when piped)`, positiveInteger)
    .option('--all', 'show every session')
    .option('--search <text>', 'only sessions whose title or first prompt contains TEXT (case-insensitive), or whose id starts with it')
    .option('--grep <text>', 'only sessions whose prompts, answers or tool output contain TEXT (case-insensitive substring), each shown with a snippet of its first match')
    .option('--roots', "hide sub-agents' sessions (shown marked ↳ otherwise)")
    .option('--reindex', 'rebuild the session index of a JSONL folder from the logs first')
    .action(async (flags: SessionsFlags) => {
      exit.code = await sessionsCommand(flags)
    })
}
