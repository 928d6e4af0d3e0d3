import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, type Command } from 'commander'
import { compose } from '../../app/compose.js'
import { rerunSession, type RerunReport } from '../../app/rerun-session.js'
import type { SessionStore } from '../../store/types.js'
import { formatCost } from '../../views/cost.js'
import type { TurnFacts } from '../../views/compare-sessions.js'
import { resolveConfig } from '../../app/config.js'
import { cliPricing, cliStore } from '../cli-harness.js'
import { CliError, EXIT } from '../cli-error.js'
import { openForReading } from '../read-only-store.js'
import { styleFor, type Style } from '../style.js'
import { addAgentOptions, positiveInteger, prepareRun, type AgentFlags, type AgentOptionName } from './agent-options.js'
import { renderTurn } from './diff.js'
import { removeScratch } from './run.js'

/** Flags of `ledgerloop rerun`. */
export interface RerunFlags extends Omit<AgentFlags, 'system'> {
  /** A file whose text joins the system prompt (as `run --system @FILE`). */
  readonly system?: string
  readonly tools?: 'recorded' | 'live'
  readonly fromTurn?: number
  readonly all?: boolean
  readonly search?: string
  readonly limit?: number
  readonly ignoreText?: boolean
}

// The agent options a rerun honours: the route and how the agent is composed, never which session or output.
const RERUN_AGENT_OPTIONS: readonly AgentOptionName[] = [
  'provider', 'model', 'baseUrl', 'script', 'root', 'yes', 'maxSteps', 'maxCost', 'projectFile', 'reasoningEffort',
  'maxOutputTokens', 'idleTimeout', 'retries', 'header', 'sandbox', 'network', 'bashEnv',
]

/**
 * `ledgerloop rerun ID | --all`: each session's recorded user inputs fed again to the agent as configured today
 * (with the overrides given), into a new session forked from it, compared turn by turn as it goes. Exit 0 when
 * every rerun behaved the same as its original, 1 when one differed.
 */
export async function rerunCommand(ref: string | undefined, flags: RerunFlags): Promise<number> {
  if ((ref === undefined) === (flags.all !== true)) throw new CliError('rerun takes one session id, or --all', EXIT.usage)
  if (flags.all !== true && (flags.search !== undefined || flags.limit !== undefined)) throw new CliError('--search and --limit pick sessions for --all', EXIT.usage)
  const ids = ref !== undefined ? [await resolveOne(flags.store, ref)] : await pickSessions(flags)
  if (ids.length === 0) throw new CliError('no session to rerun (ledgerloop sessions lists them)', EXIT.usage)
  const style = styleFor(process.stdout)
  const json = flags.json === true
  const reports: RerunReport[] = []
  for (const id of ids) reports.push(await rerunOne(id, flags, json ? undefined : style))
  if (json) process.stdout.write(`${JSON.stringify(flags.all === true ? { same: reports.every((r) => r.comparison.same), reports } : reports[0], null, 2)}\n`)
  else if (flags.all === true) process.stdout.write(renderTable(reports, style))
  return reports.every((r) => r.comparison.same) ? EXIT.ok : EXIT.failed
}

async function resolveOne(storeFlag: string | undefined, ref: string): Promise<string> {
  const { store, id } = await openForReading(storeFlag, ref)
  await store.close()
  return id
}

/** The sessions `--all` reruns: top-level sessions with at least one ended turn, newest first, never a rerun's own fork. */
async function pickSessions(flags: RerunFlags): Promise<string[]> {
  const { store } = await openStoreOnly(flags.store)
  try {
    const rows = await store.list({ ...(flags.search !== undefined ? { search: flags.search } : {}) })
    const picked = rows.filter((s) => s.parentSession === undefined && s.problem === undefined && (s.turns === undefined || s.turns > 0)).map((s) => s.id)
    return flags.limit !== undefined ? picked.slice(0, flags.limit) : picked
  } finally {
    await store.close()
  }
}

// openForReading resolves a session too; listing needs only the store.
async function openStoreOnly(storeFlag: string | undefined): Promise<{ store: SessionStore }> {
  const config = resolveConfig(storeFlag !== undefined ? { store: storeFlag } : {}, process.env, process.cwd(), { lenient: true })
  return { store: await cliStore(config) }
}

async function rerunOne(id: string, flags: RerunFlags, style: Style | undefined): Promise<RerunReport> {
  const toolMode = flags.tools ?? 'recorded'
  if (flags.system !== undefined && !existsSync(flags.system.replace(/^@/, ''))) throw new CliError(`--system ${flags.system}: no such file`, EXIT.usage)
  const { system, tools: _tools, fromTurn, all: _all, search: _search, limit: _limit, ignoreText, json: _json, ...agentFlags } = flags
  // The recorded route is the default: `session` makes prepareRun take it from the log (as run --session does).
  const prepared = await prepareRun({ ...agentFlags, session: id, ...(system !== undefined ? { system: system.startsWith('@') ? system : `@${system}` } : {}) })
  // Recorded tools answer from the log and touch no file, so a tool root that is gone (a demo's scratch folder)
  // must not stop the rerun: an empty stand-in folder takes its place for this process. Live tools need the real one.
  const standIn = toolMode === 'recorded' && !existsSync(prepared.root) ? mkdtempSync(join(tmpdir(), 'ledgerloop-rerun-')) : undefined
  if (toolMode === 'live' && !existsSync(prepared.root)) throw new CliError(`the session's tool root ${prepared.root} does not exist: pass --root DIR for live tools, or rerun with --tools recorded`, EXIT.usage)
  const composition = compose({
    config: prepared.config,
    route: prepared.route,
    root: standIn ?? prepared.root,
    sandbox: prepared.sandbox,
    network: prepared.network,
    // Recorded tools touch nothing, so nothing needs asking; live tools need --yes for what the rules leave at ask.
    approvals: toolMode === 'recorded' || flags.yes === true ? { kind: 'yes' } : { kind: 'deny' },
    instructions: prepared.instructions.text,
  })
  const write = (line: string): void => void (style !== undefined && process.stdout.write(`${line}\n`))
  write(`${style?.bold('rerun') ?? ''} ${id} on ${prepared.route.provider}/${prepared.route.model} (tools: ${toolMode}${fromTurn !== undefined ? `, from turn ${fromTurn}` : ''})`)
  try {
    const report = await rerunSession({
      ...composition.options,
      store: prepared.store,
      sessionId: id,
      provider: prepared.route.provider,
      model: prepared.route.model,
      toolMode,
      ...(fromTurn !== undefined ? { fromTurn } : {}),
      pricing: cliPricing(prepared.config),
      ignoreText: ignoreText === true,
      onTurn: (turn) => {
        if (style !== undefined) for (const line of renderTurn(turn, style)) write(line)
      },
    })
    if (style !== undefined) {
      const differing = report.comparison.turns.filter((t) => !t.same).map((t) => t.turn)
      write(`new session ${report.sessionId} (forked from ${id}): ${differing.length === 0 ? style.green('same behaviour') : style.red(`behaviour differs in turn${differing.length === 1 ? '' : 's'} ${differing.join(', ')}`)}`)
    }
    return report
  } finally {
    try {
      await composition.close()
      await prepared.store.close()
    } finally {
      if (prepared.scratchRoot) removeScratch(prepared.root)
      if (standIn !== undefined) rmSync(standIn, { recursive: true, force: true })
    }
  }
}

/** `--all`'s closing table: per session, turns matching, the first divergence, tokens and cost before → after. */
function renderTable(reports: readonly RerunReport[], style: Style): string {
  const rows = reports.map((r) => {
    const turns = r.comparison.turns.filter((t) => t.turn >= r.fromTurn)
    const first = turns.find((t) => !t.same)
    const sum = (side: 'a' | 'b'): string => totals(turns.map((t) => t[side]))
    return [r.forkedFrom.slice(0, 8), `${turns.filter((t) => t.same).length}/${turns.length}`, first === undefined ? '—' : `turn ${first.turn}: ${clip(first.differences[0] ?? '')}`, `${sum('a')} → ${sum('b')}`, r.sessionId.slice(0, 8)]
  })
  const head = ['session', 'same turns', 'first divergence', 'tokens, cost before → after', 'rerun']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)))
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd()
  const same = reports.filter((r) => r.comparison.same).length
  const verdict = same === reports.length ? style.green(`all ${reports.length} behaved the same`) : style.red(`${reports.length - same} of ${reports.length} behaved differently`)
  return `${[style.bold(line(head)), ...rows.map(line), verdict].join('\n')}\n`
}

function totals(turns: readonly (TurnFacts | undefined)[]): string {
  let input = 0
  let output = 0
  let cost = 0
  let currency: 'USD' | 'CNY' | undefined
  for (const t of turns) {
    if (t === undefined) continue
    input += t.usage.inputTokens
    output += t.usage.outputTokens
    if (t.cost !== undefined) {
      cost += t.cost.total
      currency = t.cost.currency
    }
  }
  return `${input}/${output}${currency !== undefined ? ` ${formatCost(cost, currency)}` : ''}`
}

function clip(text: string): string {
  return text.length > 60 ? `${text.slice(0, 59)}…` : text
}

function toolMode(value: string): 'recorded' | 'live' {
  if (value !== 'recorded' && value !== 'live') throw new InvalidArgumentError("expected 'recorded' or 'live'")
  return value
}

/** Registers `rerun`. */
export function registerRerun(program: Command, exit: { code: number }): void {
  const command = program
    .command('rerun')
    .description("feed a session's recorded inputs to the agent as configured today (or another model), into a new linked session, and compare (exit 1 when it behaves differently)")
    .argument('[id]', 'session id (a unique prefix is enough); or --all')
    .option('--system <file>', 'a file whose text joins the system prompt (as run --system @FILE)')
    .option('--tools <mode>', 'recorded (default: tools answer from the log, nothing runs) or live (the tools run)', toolMode)
    .option('--from-turn <n>', 'rerun from this turn (earlier turns are copied as they were; default 1)', positiveInteger)
    .option('--all', 'rerun every top-level session (newest first), then print a table')
    .option('--search <text>', 'with --all: only sessions whose title or first prompt contains this')
    .option('--limit <n>', 'with --all: at most this many sessions', positiveInteger)
    .option('--ignore-text', 'final texts are shown but do not make a turn differ')
    .option('--json', 'the RerunReport as one JSON document ({same, reports} with --all)')
  addAgentOptions(command, RERUN_AGENT_OPTIONS).action(async (id: string | undefined, flags: RerunFlags) => {
    exit.code = await rerunCommand(id, flags)
  })
}
