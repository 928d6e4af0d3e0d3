import type { Command } from 'commander'
import { EXIT } from '../cli-error.js'
import { billedUsd, formatCost, sessionCost, type PricingCatalogue, type SessionCost } from '../../views/cost.js'
import type { CostBudgetExceededData } from '../../plugins/cost-budget.js'
import { costCapOf, type CostCapFigure } from '../../views/cost-cap.js'
import type { SessionEvent } from '../../session/events.js'
import { cliPricing } from '../cli-harness.js'
import { openForReading } from '../read-only-store.js'
import { addStoreOption } from './agent-options.js'
import { buildSessionTree, type CompactionNode, type SessionTree, type StepNode } from '../../views/session-tree.js'
import { attachChildTrees } from '../../app/child-sessions.js'
import type { SubagentTreeFields } from '../../views/child-sessions.js'
import { styleFor, type Style } from '../style.js'
import { shownUsage } from '../../llm/token-usage.js'
import { describeReason, formatDuration, formatUsage, toolSubject } from '../../views/turn-outcome.js'
import { quarantineOf, type QuarantineFact } from '../../views/quarantine.js'

/** Durable-execution facts `inspect` prints beside the tree: continuation turns (turn → the interrupted one) and a quarantine. */
export interface DurabilityMarks {
  readonly continues: ReadonlyMap<number, number>
  readonly quarantine?: QuarantineFact
}

/** The {@link DurabilityMarks} of a log. */
export function durabilityMarks(events: readonly SessionEvent[]): DurabilityMarks {
  const continues = new Map<number, number>()
  for (const e of events) {
    const d = e.type === 'turn/start' ? (e.data as { turn: number; continues?: number }) : undefined
    if (d?.continues !== undefined) continues.set(d.turn, d.continues)
  }
  const quarantine = quarantineOf(events)
  return { continues, ...(quarantine !== undefined ? { quarantine } : {}) }
}

/** Renders the tree for people (a sub-agent's tree nested under the tool call that started it). */
export function formatSessionTree(tree: SessionTree & Partial<SubagentTreeFields>, style: Style, cost?: SessionCost, marks?: DurabilityMarks): string {
  const turnCost = new Map((cost?.turns ?? []).map((t) => [t.turn, t.cost]))
  const money = (amount: number | undefined): string => (amount !== undefined && cost?.currency !== undefined ? ` · ${formatCost(amount, cost.currency)}` : '')
  const out: string[] = []
  const seqs = (a: number, b: number | undefined): string => style.dim(`[seq ${a}${b !== undefined && b !== a ? `–${b}` : ''}]`)
  out.push(
    `${style.bold(`session ${tree.id}`)} · created ${tree.createdAt} · ${tree.events} events` +
      (tree.parent !== undefined
        ? ` · sub-agent of ${tree.parent.session} (call ${tree.parent.callId}, profile ${tree.parent.profile ?? '?'})`
        : tree.forkedFrom !== undefined
          ? ` · rerun of ${tree.forkedFrom} (first ${String(tree.seedLength ?? 0)} events copied)`
          : tree.parentSession !== undefined
          ? ` · forked from ${tree.parentSession} (first ${String(tree.seedLength)} events)`
          : ''),
  )
  if (marks?.quarantine !== undefined) {
    out.push(style.red(`quarantined since seq ${marks.quarantine.seq}: ${marks.quarantine.reason} (resume with run --session ${tree.id} --force)`))
  }
  if (tree.subagents !== undefined && tree.subagents.length > 0 && tree.subagentUsage !== undefined) {
    const rolled = shownUsage(tree.subagentUsage)
    const spent = tree.subagentCost !== undefined ? ` · cost ${formatCost(tree.subagentCost.total, tree.subagentCost.currency)}` : ''
    out.push(`sub-agents: ${tree.subagents.length} direct · tokens of all sub-agents ${formatUsage(rolled)}${spent} (not in the turns' figures)`)
  }
  const compactionRow = (c: CompactionNode, indent: string): string => {
    const usage = shownUsage(c.usage)
    const size = c.tokensBefore !== undefined ? ` · ~${c.tokensBefore} → ~${String(c.tokensAfter)} tokens` : ''
    const outcome = c.outcome === undefined ? style.yellow('unfinished') : c.outcome === 'failed' ? style.red(`failed ${c.error ?? ''}`.trim()) : c.outcome
    const call = c.usage !== undefined ? ` · summary ${String(c.provider)}/${String(c.model)} ${formatUsage(usage)}` : ''
    return `${indent}compaction ${c.trigger} · ${outcome}${size}${call} ${seqs(c.startSeq, c.endSeq)}`
  }
  const byHand = tree.compactions.filter((c) => c.turn === null)
  const flushByHand = (before: number): void => {
    while (byHand.length > 0 && (byHand[0] as CompactionNode).startSeq < before) out.push(compactionRow(byHand.shift() as CompactionNode, ''))
  }
  for (const turn of tree.turns) {
    flushByHand(turn.startSeq)
    const reason = turn.reason === undefined ? style.yellow('open') : turn.reason.kind === 'completed' ? style.green('completed') : style.red(describeReason(turn.reason))
    const time = turn.durationMs !== undefined ? ` · ${formatDuration(turn.durationMs)}` : ''
    out.push(`turn ${turn.turn} · ${reason} · ${turn.steps.length} step${turn.steps.length === 1 ? '' : 's'}${time} · tokens ${formatUsage(turn.usage)}${money(turnCost.get(turn.turn))} ${seqs(turn.startSeq, turn.endSeq)}`)
    const continued = marks?.continues.get(turn.turn)
    if (continued !== undefined) out.push(style.yellow(`  continued after a crash: carries on turn ${continued}, which was interrupted`))
    const stepLines = (step: StepNode): string[] => {
      const rows = [
        ...step.requests.map((r) => {
          const usage = shownUsage(r.usage)
          const finish = r.failure !== undefined ? style.red(`${String(r.finish)} ${r.failure}`) : (r.finish ?? style.yellow('no finish (cancelled)'))
          return { seq: r.firstSeq, text: `    ${r.retryWaitMs !== undefined ? style.dim(`(waited ${formatDuration(r.retryWaitMs)} to retry) `) : ''}request ${String(r.provider)}/${String(r.model)} · ${formatDuration(r.durationMs)} · ${finish}${r.usage !== undefined ? ` · ${formatUsage(usage)}` : ''} ${seqs(r.firstSeq, r.lastSeq)}` }
        }),
        ...step.tools.map((t) => {
          const outcome = t.resultSeq === undefined ? style.yellow('no result') : t.isError === true ? style.red(`failed ${t.code ?? ''}`.trim()) : style.green('ok')
          const subject = toolSubject(t.arguments)
          const child = (t as { subagent?: { tree: SessionTree } }).subagent
          const nested = child === undefined ? '' : `\n${formatSessionTree(child.tree, style).trimEnd().replace(/^/gm, '      ')}`
          return {
            seq: t.callSeq,
            text: `    tool ${t.name}${subject !== '' ? ` ${subject}` : ''} · ${t.durationMs !== undefined ? `${formatDuration(t.durationMs)} · ` : ''}${outcome}${t.permission !== undefined ? style.dim(` (${t.permission})`) : ''} ${seqs(t.callSeq, t.resultSeq)}${nested}`,
          }
        }),
      ].sort((a, b) => a.seq - b.seq)
      return [`  step ${step.step}${step.durationMs !== undefined ? ` · ${formatDuration(step.durationMs)}` : ' · open'} ${seqs(step.startSeq, step.endSeq)}`, ...rows.map((r) => r.text)]
    }
    // Compactions run before a step (pressure) or inside one (overflow): shown in log order among the steps.
    const items = [
      ...turn.steps.map((step) => ({ seq: step.startSeq, lines: stepLines(step) })),
      ...tree.compactions.filter((c) => c.turn === turn.turn).map((c) => ({ seq: c.startSeq, lines: [compactionRow(c, '  ')] })),
    ].sort((a, b) => a.seq - b.seq)
    for (const item of items) out.push(...item.lines)
  }
  flushByHand(Number.POSITIVE_INFINITY)
  if (cost?.currency !== undefined) {
    out.push(
      `cost ${formatCost(cost.total, cost.currency)} (prices as of ${String(cost.asOf)}${cost.requests.some((r) => r.offPeak) ? '; off-peak prices where they applied' : ''}${cost.unpriced > 0 ? `; ${cost.unpriced} response${cost.unpriced === 1 ? '' : 's'} without a price` : ''})`,
    )
  }
  return `${out.join('\n')}\n`
}

/**
 * The cost budget's stops in a log (its `budget/exceeded` events) and the USD billed over every attempt, as the
 * budget counted it; undefined when the budget never stopped this session.
 */
function costBudgetStops(events: readonly SessionEvent[], pricing: PricingCatalogue): { readonly stops: readonly CostBudgetExceededData[]; readonly billedUsd: number } | undefined {
  const stops = events.filter((e) => e.type === 'budget/exceeded' && (e.data as { budget?: unknown }).budget === 'cost').map((e) => e.data as unknown as CostBudgetExceededData)
  if (stops.length === 0) return undefined
  return { stops, billedUsd: Math.round(billedUsd(events, pricing).total * 1e6) / 1e6 }
}

/** The cap lines: spend against the cap the log records, and a warning per model the budget could not price. */
function costCapLines(cap: CostCapFigure, style: Style): string {
  const whose = cap.origin === 'session' ? "the session's own cap" : 'set by --max-cost'
  const lines = [`cost cap: ${cap.summary} (${whose}; every request attempt billed)`]
  for (const model of cap.unpricedModels) lines.push(style.yellow(`⚠ cost budget: no price for ${model}: its requests do not count against the cap`))
  return `${lines.join('\n')}\n`
}

/** `ledgerloop inspect ID [--json]`: the tree, with per-turn and total cost where prices are known. */
export async function inspectCommand(ref: string, flags: { json?: boolean; store?: string }): Promise<number> {
  const { config, store, id } = await openForReading(flags.store, ref)
  try {
    const stored = await store.read(id)
    const pricing = cliPricing(config)
    const tree = await attachChildTrees(buildSessionTree(stored.header, stored.events), stored.header, store, (s) => buildSessionTree(s.header, s.events), pricing)
    const cost = sessionCost(stored.events, pricing)
    const budget = costBudgetStops(stored.events, pricing)
    const costCap = costCapOf(stored.events, pricing)
    const marks = durabilityMarks(stored.events)
    if (flags.json === true) {
      const { quarantine } = marks
      process.stdout.write(`${JSON.stringify({ ...tree, ...(cost.currency !== undefined ? { cost } : {}), ...(budget !== undefined ? { costBudget: budget } : {}), ...(costCap !== undefined ? { costCap } : {}), ...(quarantine !== undefined ? { quarantine } : {}) }, null, 2)}\n`)
    } else {
      const style = styleFor(process.stdout)
      process.stdout.write(formatSessionTree(tree, style, cost, marks))
      if (costCap !== undefined) process.stdout.write(costCapLines(costCap, style))
      if (budget !== undefined) {
        const stops = budget.stops.map((stop) => `turn ${stop.turn} stopped at $${stop.used} of $${stop.limit}${stop.per === 'turn' ? ' (per turn)' : ''}`).join('; ')
        process.stdout.write(`cost budget: ${stops}; billed ${formatCost(budget.billedUsd, 'USD')} over every request attempt\n`)
      }
    }
    return EXIT.ok
  } finally {
    await store.close()
  }
}

/** Registers `inspect`. */
export function registerInspect(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('inspect').description('turn → step → request/tool tree of a session, with timings, usage, cost and reasons'))
    .argument('<id>', 'session id (a unique prefix is enough)')
    .option('--json', 'the tree (and cost) as JSON')
    .action(async (id: string, flags: { json?: boolean; store?: string }) => {
      exit.code = await inspectCommand(id, flags)
    })
}
