import type { Command } from 'commander'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Agent } from '../../loop/agent.js'
import { compactNow } from '../../plugins/compaction/compaction.js'
import type { CompactionOutcome } from '../../plugins/compaction/replace.js'
import { CliError, EXIT } from '../cli-error.js'
import { createCliHarness } from '../cli-harness.js'
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
  // No tool runs here, but the harness is built with the tools; a tool root that is gone (a demo's scratch folder)
  // must not stop a compaction, so an empty stand-in folder takes its place for this process.
  const standIn = existsSync(prepared.root) ? undefined : mkdtempSync(join(tmpdir(), 'ledgerloop-compact-'))
  const harness = createCliHarness({ config: prepared.config, route: prepared.route, root: standIn ?? prepared.root, store: prepared.store })
  try {
    const resume = prepared.resume as string
    const { provider, model } = prepared.route
    // Checked before the session is opened for writing: a route this process cannot call is a usage error, not
    // a failed compaction in the session's log.
    if (harness.llm.adapter(provider) === undefined) throw new CliError(`no model adapter for provider '${provider}' (pass --provider, or --script FILE for an offline summary)`, EXIT.usage)
    // Resumed directly (not through run's openAgent): a --base-url here is for this summary call, not a new
    // endpoint to remember for the session.
    const agent = await harness.resumeAgent(resume, { provider, model, cwd: standIn ?? prepared.root })
    const outcome = await compactNow(agent, { provider, model, ...(flags.keep !== undefined ? { keepRecentTurns: flags.keep } : {}) })
    process.stdout.write(flags.json === true ? `${JSON.stringify({ id: agent.id, ...outcome })}\n` : `${describeCompaction(outcome)}\n`)
    return outcome.outcome === 'failed' || outcome.outcome === 'not-smaller' ? EXIT.failed : EXIT.ok
  } finally {
    try {
      await harness.close()
    } finally {
      if (standIn !== undefined) rmSync(standIn, { recursive: true, force: true })
    }
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
