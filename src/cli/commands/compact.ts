import type { Command } from 'commander'
import type { Agent } from '../../loop/agent.js'
import { compactNow } from '../../plugins/compaction/compaction.js'
import type { CompactionOutcome } from '../../plugins/compaction/replace.js'
import { EXIT } from '../cli-error.js'
import { createCliHarness } from '../cli-harness.js'
import { openAgent } from './run.js'
import { addStoreOption, positiveInteger, prepareRun } from './agent-options.js'

/** Options of `ledgerloop compact`. */
export interface CompactFlags {
  readonly provider?: string
  readonly model?: string
  readonly baseUrl?: string
  readonly script?: string
  /** Model turns to keep verbatim. */
  readonly keep?: number
  readonly json?: boolean
}

/** Adds `compact ID` to the command tree; the action stores its exit code in `exit`. */
export function registerCompactCommand(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('compact'))
    .description('summarise the older part of a session now (logged like an automatic compaction)')
    .argument('<id>', 'session id (a unique prefix is enough)')
    .option('--provider <name>', "route of the summary call (default: the session's)")
    .option('--model <name>', "model of the summary call (default: the session's)")
    .option('--base-url <url>', 'endpoint base URL')
    .option('--script <file>', 'a scripted model for the summary call (offline)')
    .option('--keep <n>', 'model turns to keep verbatim (default 2)', positiveInteger)
    .option('--json', 'the outcome as JSON')
    .action(async (id: string, flags: CompactFlags) => {
      exit.code = await compactCommand(id, flags)
    })
}

/**
 * `ledgerloop compact ID`: summarises the session's older history now, through the session's own model route
 * (or the one the flags name), and logs it like an automatic compaction. Exit 0 when it compacted or there was
 * nothing to compact, 1 when the summary failed (the history is then unchanged).
 */
export async function compactCommand(id: string, flags: CompactFlags): Promise<number> {
  const prepared = await prepareRun({ ...flags, session: id })
  const harness = createCliHarness({ config: prepared.config, route: prepared.route, root: prepared.root, store: prepared.store })
  try {
    const agent = await openAgent(harness, prepared)
    const outcome = await compactNow(agent, flags.keep !== undefined ? { keepRecentTurns: flags.keep } : {})
    process.stdout.write(flags.json === true ? `${JSON.stringify({ id: agent.id, ...outcome })}\n` : `${describeCompaction(outcome)}\n`)
    return outcome.outcome === 'failed' || outcome.outcome === 'not-smaller' ? EXIT.failed : EXIT.ok
  } finally {
    await harness.close()
  }
}

/** chat's `/compact`: compacts the conversation between turns and says what happened. */
export async function compactInChat(agent: Agent | undefined): Promise<string> {
  if (agent === undefined) return 'nothing to compact yet: send a message first'
  return describeCompaction(await compactNow(agent))
}

/** One line for a person: what a compaction did, with the estimated request size before and after. */
export function describeCompaction(outcome: CompactionOutcome): string {
  const size = `~${outcome.tokensBefore.toLocaleString('en-US')} → ~${outcome.tokensAfter.toLocaleString('en-US')} tokens`
  switch (outcome.outcome) {
    case 'summarized':
      return `compacted: older history replaced by a summary (${size})`
    case 'pruned':
      return `compacted: old tool outputs pruned (${size})`
    case 'nothing':
      return 'nothing to compact: only the most recent turns are in the history'
    case 'not-smaller':
      return 'not compacted: the summary would not have been smaller than what it replaces'
    case 'failed':
      return `not compacted: the summary failed (${outcome.error?.code ?? 'UNKNOWN'}: ${outcome.error?.message ?? ''}); the history is unchanged`
  }
}
