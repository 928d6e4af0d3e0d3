import { EXIT } from '../cli-error.js'
import { cliStore } from '../cli-harness.js'
import { resolveConfig } from '../config.js'
import { buildSessionTree, type CompactionNode, type SessionTree, type StepNode } from '../session-tree.js'
import { styleFor, type Style } from '../style.js'
import { describeReason, formatDuration, formatUsage, emptyUsage, addUsage, toolSubject } from '../turn-outcome.js'

/** Renders the tree for people. */
export function formatSessionTree(tree: SessionTree, style: Style): string {
  const out: string[] = []
  const seqs = (a: number, b: number | undefined): string => style.dim(`[seq ${a}${b !== undefined && b !== a ? `–${b}` : ''}]`)
  out.push(
    `${style.bold(`session ${tree.id}`)} · created ${tree.createdAt} · ${tree.events} events` +
      (tree.parentSession !== undefined ? ` · forked from ${tree.parentSession} (first ${String(tree.seedLength)} events)` : ''),
  )
  const compactionRow = (c: CompactionNode, indent: string): string => {
    const usage = emptyUsage()
    addUsage(usage, c.usage)
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
    out.push(`turn ${turn.turn} · ${reason} · ${turn.steps.length} step${turn.steps.length === 1 ? '' : 's'}${time} · tokens ${formatUsage(turn.usage)} ${seqs(turn.startSeq, turn.endSeq)}`)
    const stepLines = (step: StepNode): string[] => {
      const rows = [
        ...step.requests.map((r) => {
          const usage = emptyUsage()
          addUsage(usage, r.usage)
          const finish = r.failure !== undefined ? style.red(`${String(r.finish)} ${r.failure}`) : (r.finish ?? style.yellow('no finish (cancelled)'))
          return { seq: r.firstSeq, text: `    request ${String(r.provider)}/${String(r.model)} · ${formatDuration(r.durationMs)} · ${finish}${r.usage !== undefined ? ` · ${formatUsage(usage)}` : ''} ${seqs(r.firstSeq, r.lastSeq)}` }
        }),
        ...step.tools.map((t) => {
          const outcome = t.resultSeq === undefined ? style.yellow('no result') : t.isError === true ? style.red(`failed ${t.code ?? ''}`.trim()) : style.green('ok')
          const subject = toolSubject(t.arguments)
          return {
            seq: t.callSeq,
            text: `    tool ${t.name}${subject !== '' ? ` ${subject}` : ''} · ${t.durationMs !== undefined ? `${formatDuration(t.durationMs)} · ` : ''}${outcome}${t.permission !== undefined ? style.dim(` (${t.permission})`) : ''} ${seqs(t.callSeq, t.resultSeq)}`,
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
  return `${out.join('\n')}\n`
}

/** `ledgerloop inspect ID [--json]`. */
export async function inspectCommand(id: string, flags: { json?: boolean }): Promise<number> {
  const store = cliStore(resolveConfig())
  try {
    const stored = await store.read(id)
    const tree = buildSessionTree(stored.header, stored.events)
    process.stdout.write(flags.json === true ? `${JSON.stringify(tree, null, 2)}\n` : formatSessionTree(tree, styleFor(process.stdout)))
    return EXIT.ok
  } finally {
    await store.close()
  }
}
