import type { Command } from 'commander'
import { formatCost } from '../../views/cost.js'
import { compareSessions, type SessionComparison, type TurnComparison, type TurnFacts } from '../../views/compare-sessions.js'
import { formatDuration } from '../../views/turn-outcome.js'
import { cliPricing } from '../cli-harness.js'
import { EXIT } from '../cli-error.js'
import { openForReading } from '../read-only-store.js'
import { resolveSessionRef } from '../session-ref.js'
import type { Style } from '../style.js'
import { styleFor } from '../style.js'
import { addStoreOption } from './agent-options.js'

/** Flags of `ledgerloop diff`. */
export interface DiffFlags {
  readonly json?: boolean
  readonly ignoreText?: boolean
  readonly store?: string
}

/**
 * `ledgerloop diff A B [--ignore-text] [--json]`: exit 0 when the two sessions behave the same turn by turn (same
 * tool calls with the same arguments, same end reasons, and same final texts unless `--ignore-text`), else 1.
 */
export async function diffCommand(refA: string, refB: string, flags: DiffFlags = {}): Promise<number> {
  const { config, store, id: a } = await openForReading(flags.store, refA)
  let comparison: SessionComparison
  let b: string
  try {
    b = await resolveSessionRef(store, refB)
    const [left, right] = await Promise.all([store.read(a), store.read(b)])
    comparison = compareSessions(left.events, right.events, { ignoreText: flags.ignoreText === true, pricing: cliPricing(config) })
  } finally {
    await store.close()
  }
  if (flags.json === true) process.stdout.write(`${JSON.stringify({ a, b, ...comparison }, null, 2)}\n`)
  else process.stdout.write(renderComparison(comparison, { a, b }, styleFor(process.stdout)))
  return comparison.same ? EXIT.ok : EXIT.failed
}

/** A comparison for a person: one line per turn with both sides' figures, each difference below its turn. */
export function renderComparison(comparison: SessionComparison, ids: { readonly a: string; readonly b: string }, style: Style): string {
  const lines = [`${style.bold('A')} ${ids.a}`, `${style.bold('B')} ${ids.b}`]
  for (const turn of comparison.turns) lines.push(...renderTurn(turn, style))
  const differing = comparison.turns.filter((t) => !t.same)
  const note = comparison.ignoreText ? ' (final texts ignored)' : ''
  lines.push(
    differing.length === 0
      ? style.green(`same behaviour in all ${comparison.turns.length} turn${comparison.turns.length === 1 ? '' : 's'}${note}`)
      : style.red(`behaviour differs in ${differing.length} of ${comparison.turns.length} turns (${differing.map((t) => t.turn).join(', ')})${note}`),
  )
  return `${lines.join('\n')}\n`
}

/** One turn's lines (also what `rerun` prints as each turn ends). */
export function renderTurn(turn: TurnComparison, style: Style): string[] {
  const verdict = turn.same ? style.green('same   ') : style.red('differs')
  const lines = [`turn ${turn.turn}  ${verdict}  A: ${figures(turn.a)}  B: ${figures(turn.b)}`]
  for (const d of turn.differences) lines.push(`  ${style.yellow('-')} ${d}`)
  if (turn.same && turn.textDiff !== undefined) lines.push(`  ${style.dim(`(text differs, ignored: ${turn.textDiff})`)}`)
  return lines
}

function figures(facts: TurnFacts | undefined): string {
  if (facts === undefined) return '—'
  const cost = facts.cost !== undefined ? ` · ${formatCost(facts.cost.total, facts.cost.currency)}` : ''
  return `${facts.steps} step${facts.steps === 1 ? '' : 's'} · ${facts.usage.inputTokens} in · ${facts.usage.outputTokens} out${cost} · ${formatDuration(facts.durationMs)}`
}

/** Registers `diff`. */
export function registerDiff(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('diff').description('compare two sessions turn by turn: texts, tool calls, end reasons (exit 1 when they behave differently)'))
    .argument('<a>', 'first session id (a unique prefix is enough)')
    .argument('<b>', 'second session id')
    .option('--ignore-text', 'final texts are shown but do not make a turn differ')
    .option('--json', 'the comparison as one JSON document: {a, b, same, ignoreText, turns: [{turn, same, differences, a, b, textDiff?}]}')
    .action(async (a: string, b: string, flags: DiffFlags) => {
      exit.code = await diffCommand(a, b, flags)
    })
}
