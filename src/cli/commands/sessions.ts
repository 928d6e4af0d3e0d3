import type { Command } from 'commander'
import type { SessionStore } from '../../store/types.js'
import { formatCost, sessionCost, type PricingCatalogue } from '../../views/cost.js'
import { EXIT } from '../cli-error.js'
import { cliPricing, cliStore } from '../cli-harness.js'
import { resolveConfig, type EffectiveConfig } from '../config.js'
import { summarizeLog, type LogSummary } from '../../views/session-summary.js'
import { isSubagentSession } from '../../views/child-sessions.js'
import { styleFor } from '../style.js'
import { emptyUsage } from '../../views/turn-outcome.js'
import { addStoreOption, positiveInteger } from './agent-options.js'

/** One row of `ledgerloop sessions --json`. */
export interface SessionRow extends LogSummary {
  readonly id: string
  /** ISO time of the last write. */
  readonly updatedAt: string
  readonly sizeBytes?: number
  readonly parentSession?: string
  /** Set on a sub-agent's session: the parent's tool call that started it. */
  readonly parentCallId?: string
  /** A sub-agent's profile. */
  readonly agentProfile?: string
  /** Why the session could not be read, when it could not. */
  readonly problem?: string
  /** What the session cost from its logged usage, when its model has published prices. */
  readonly cost?: { readonly total: number; readonly currency: 'USD' | 'CNY'; readonly pricesAsOf?: string }
}

/** Reads every stored session's summary, newest first (at most `limit`, when given). */
export async function listSessions(store: SessionStore, pricing: PricingCatalogue, limit?: number): Promise<SessionRow[]> {
  const rows: SessionRow[] = []
  const listed = await store.list()
  for (const s of limit !== undefined ? listed.slice(0, limit) : listed) {
    const base = {
      id: s.id,
      updatedAt: new Date(s.updatedAt).toISOString(),
      ...(s.sizeBytes !== undefined ? { sizeBytes: s.sizeBytes } : {}),
      ...(s.parentSession !== undefined ? { parentSession: s.parentSession } : {}),
      ...(s.parentCallId !== undefined ? { parentCallId: s.parentCallId } : {}),
      ...(s.agentProfile !== undefined ? { agentProfile: s.agentProfile } : {}),
    }
    try {
      const events = (await store.read(s.id)).events
      const cost = sessionCost(events, pricing)
      rows.push({
        ...base,
        ...summarizeLog(events),
        ...(cost.currency !== undefined ? { cost: { total: roundCost(cost.total), currency: cost.currency, ...(cost.asOf !== undefined ? { pricesAsOf: cost.asOf } : {}) } } : {}),
      })
    } catch (error) {
      rows.push({ ...base, title: '', turns: 0, lastReason: null, usage: emptyUsage(), problem: (error as Error).message })
    }
  }
  return rows
}

/** Six decimals: a cheap session must not read as zero, and JSON must not carry float noise. */
function roundCost(value: number): number {
  return Math.round(value * 1e6) / 1e6
}

/** Formats rows as the `sessions` table. */
export function sessionsTable(rows: readonly SessionRow[], dim: (s: string) => string = (s) => s): string {
  if (rows.length === 0) return 'no sessions yet (ledgerloop run "…" starts one)\n'
  const lines = rows.map((r) => {
    const when = r.updatedAt.replace('T', ' ').slice(0, 19)
    const size = r.sizeBytes === undefined ? '' : r.sizeBytes < 10_240 ? `${r.sizeBytes} B` : `${Math.round(r.sizeBytes / 1024)} KB`
    const title = r.problem !== undefined ? `(unreadable: ${r.problem})` : r.title === '' ? '(no prompt)' : r.title
    const cost = r.cost !== undefined ? formatCost(r.cost.total, r.cost.currency) : ''
    const child = isSubagentSession(r) ? dim(`↳ sub-agent of ${String(r.parentSession).slice(0, 8)} (${r.agentProfile ?? '?'}) `) : ''
    return `${r.id}  ${dim(when)}  ${String(r.turns).padStart(3)} turn${r.turns === 1 ? ' ' : 's'}  ${(r.lastReason ?? '-').padEnd(11)} ${size.padStart(7)} ${cost.padStart(10)}  ${child}${title}`
  })
  return `${lines.join('\n')}\n`
}

/** Flags of `sessions`. */
export interface SessionsFlags {
  readonly json?: boolean
  readonly limit?: number
  readonly all?: boolean
  readonly search?: string
  /** Hide sub-agents' sessions. */
  readonly roots?: boolean
  readonly store?: string
}

/** How many sessions `sessions` shows unless `--all` or `--limit` says otherwise. */
export const DEFAULT_SESSIONS_LIMIT = 20

/** `ledgerloop sessions [--json] [--limit N] [--all] [--search TEXT] [--roots]`. */
export async function sessionsCommand(flags: SessionsFlags): Promise<number> {
  const config = resolveConfig(flags.store !== undefined ? { store: flags.store } : {}, process.env, process.cwd(), { lenient: true })
  warnIgnoredConfig(config)
  const store = await cliStore(config)
  let rows: SessionRow[]
  try {
    const limit = flags.all === true ? undefined : (flags.limit ?? DEFAULT_SESSIONS_LIMIT)
    // A search or --roots looks through every session; the limit then applies to the matches.
    const filtering = flags.search !== undefined || flags.roots === true
    rows = await listSessions(store, cliPricing(config), filtering ? undefined : limit)
    if (flags.search !== undefined) {
      const needle = flags.search.toLowerCase()
      rows = rows.filter((r) => r.title.toLowerCase().includes(needle) || r.id.startsWith(needle))
    }
    if (flags.roots === true) rows = rows.filter((r) => !isSubagentSession(r))
    if (filtering && limit !== undefined) rows = rows.slice(0, limit)
  } finally {
    await store.close()
  }
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`)
  } else {
    process.stdout.write(sessionsTable(rows, styleFor(process.stdout).dim))
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
    .option('--json', 'an array of {id, title, updatedAt, turns, lastReason, usage, cost?, sizeBytes?, parentSession?, parentCallId?, agentProfile?, problem?}')
    .option('--limit <n>', `show at most N sessions (default ${DEFAULT_SESSIONS_LIMIT})`, positiveInteger)
    .option('--all', 'show every session')
    .option('--search <text>', 'only sessions whose first prompt contains TEXT (or whose id starts with it)')
    .option('--roots', "hide sub-agents' sessions (shown marked ↳ otherwise)")
    .action(async (flags: SessionsFlags) => {
      exit.code = await sessionsCommand(flags)
    })
}
