import type { Agent } from '../../loop/agent.js'
import { errorChain, HarnessError } from '../../errors/harness-error.js'
import { createUserMessage } from '../../llm/messages.js'
import type { Message } from '../../llm/types.js'
import type { Session } from '../../session/session.js'
import { estimateMessageTokens, estimateRequestTokens, planCompaction, type CompactionPlan } from './plan.js'
import { pruneOldToolResults } from './prune.js'
import { callSummaryModel, COMPACTION_PLUGIN, type CompactionSummaryData, type Summarize, type SummaryRoute } from './summary.js'

/** What started a compaction. */
export type CompactionTrigger = 'pressure' | 'overflow' | 'manual'

/** Data of `compaction/start` (the bracket's opening; everything up to `compaction/end` belongs to it). */
export interface CompactionStartData {
  readonly turn: number | null
  readonly trigger: CompactionTrigger
  /** The measured size of the next request, and how it was measured. */
  readonly pressureTokens?: number
  readonly pressureSource?: 'usage' | 'estimate'
  readonly contextWindow?: number
  /** Model turns kept verbatim. */
  readonly keepRecentTurns: number
}

/** How a compaction ended. `not-smaller`: the summary would not have been smaller than what it replaces. */
export type CompactionResult = 'summarized' | 'pruned' | 'nothing' | 'not-smaller' | 'failed'

/** Data of `compaction/end`. Token figures are estimates of the whole request (history, system, tools). */
export interface CompactionEndData {
  readonly turn: number | null
  readonly outcome: CompactionResult
  readonly tokensBefore: number
  readonly tokensAfter: number
  /** The replacing `user/message`, when the history was summarised. */
  readonly summarySeq?: number
  readonly error?: { readonly code: string; readonly message: string }
}

/** What {@link compactHistory} did (the same facts as its `compaction/end` event). */
export interface CompactionOutcome extends CompactionEndData {
  /** True when the request the next attempt builds is smaller than before. */
  readonly shrank: boolean
}

/** Everything one compaction run needs to know. */
export interface CompactionRun {
  readonly trigger: CompactionTrigger
  readonly turn: number | null
  readonly keepRecentTurns: number
  readonly signal: AbortSignal
  readonly route: SummaryRoute
  readonly summarize?: Summarize
  /** Prune old tool results longer than this first (only inside an open turn). */
  readonly pruneOverChars: number
  /**
   * Do nothing unless the older part holds at least this many estimated tokens besides an earlier summary (a
   * pressure run whose recent turns alone fill the window would otherwise re-summarise every step).
   */
  readonly minGainTokens?: number
  /** Stop after pruning when the request is then estimated below this many tokens. */
  readonly stopBelowTokens?: number
  readonly pressure?: { readonly tokens: number; readonly source: 'usage' | 'estimate' }
  readonly contextWindow?: number
}

/** True for the message a compaction wrote in place of the history it summarised. */
export function isCompactionSummary(message: Message): boolean {
  return message.source.kind === 'plugin' && message.source.plugin === COMPACTION_PLUGIN && message.role === 'user'
}

/**
 * One compaction, bracketed by `compaction/start` and `compaction/end`: prune old tool results (inside a turn),
 * and unless that brought the request under `stopBelowTokens`, summarise the older model turns and replace them
 * on the surface with one `user/message` (`surfaceOp: {op:'replace', start, end}`, citing the start, request and
 * summary events and every replaced node). The system prompt and tools are never touched and the newest
 * `keepRecentTurns` model turns stay verbatim. A failed or unhelpful summary leaves the history as it was and
 * ends with `outcome: 'failed'` (with the error) or `'not-smaller'`. Writes nothing when there is nothing to do.
 */
export async function compactHistory(agent: Agent, run: CompactionRun): Promise<CompactionOutcome> {
  const session = agent.session
  const tokensBefore = estimateRequestTokens(session, 0, session.surfaceNodes().length)
  let plan = planCompaction(session, run.keepRecentTurns, isCompactionSummary)
  if (plan === undefined || gainOf(plan) < (run.minGainTokens ?? 0)) return { turn: run.turn, outcome: 'nothing', tokensBefore, tokensAfter: tokensBefore, shrank: false }
  const start: CompactionStartData = {
    turn: run.turn,
    trigger: run.trigger,
    ...(run.pressure !== undefined ? { pressureTokens: run.pressure.tokens, pressureSource: run.pressure.source } : {}),
    ...(run.contextWindow !== undefined ? { contextWindow: run.contextWindow } : {}),
    keepRecentTurns: run.keepRecentTurns,
  }
  const startSeq = session.append('compaction/start', start).seq
  const end = (outcome: CompactionResult, extra: { summarySeq?: number; error?: unknown } = {}): CompactionOutcome => {
    const tokensAfter = estimateRequestTokens(session, 0, session.surfaceNodes().length)
    const data: CompactionEndData = {
      turn: run.turn,
      outcome,
      tokensBefore,
      tokensAfter,
      ...(extra.summarySeq !== undefined ? { summarySeq: extra.summarySeq } : {}),
      ...(extra.error !== undefined ? { error: errorFacts(extra.error) } : {}),
    }
    session.append('compaction/end', data)
    return { ...data, shrank: tokensAfter < tokensBefore }
  }

  if (run.turn !== null && session.openTurn === run.turn) {
    const saved = pruneOldToolResults(session, run.turn, plan.tailIndex, run.pruneOverChars)
    if (saved > 0) {
      const pressureNow = (run.pressure?.tokens ?? tokensBefore) - saved
      if (run.stopBelowTokens !== undefined && pressureNow < run.stopBelowTokens) return end('pruned')
      // Pruning rewrote nodes of the head: plan again on the new surface (same boundary, new seqs).
      plan = planCompaction(session, run.keepRecentTurns, isCompactionSummary) as CompactionPlan
      // What is left of the older part may no longer be worth a summary call (the recent turns are the bulk).
      if (gainOf(plan) < (run.minGainTokens ?? 0)) return end('pruned')
    }
  }

  let summary: { text: string; data: CompactionSummaryData }
  try {
    summary = await summarise(agent, run, plan)
  } catch (error) {
    if (run.signal.aborted) {
      end('failed', { error: run.signal.reason ?? error })
      throw error
    }
    return end('failed', { error })
  }
  const message = createUserMessage(
    `<compacted-summary>\nThe earlier part of this conversation was replaced by this summary:\n\n${summary.text}\n</compacted-summary>`,
    { kind: 'plugin', plugin: COMPACTION_PLUGIN },
  )
  // Logged even when unused: the call was made and billed.
  const summarySeq = session.append('compaction/summary', summary.data).seq
  if (estimateMessageTokens(message) >= summary.data.shadowedTokens) return end('not-smaller')
  const seqs = plan.shadowedSeqs
  const replaced = session.append('user/message', message, {
    surfaceOp: { op: 'replace', start: seqs[0] as number, end: seqs[seqs.length - 1] as number },
    sourceEventSeqs: [...seqs, startSeq, ...requestSeqSince(session, startSeq), summarySeq],
  })
  return end('summarized', { summarySeq: replaced.seq })
}

function gainOf(plan: CompactionPlan): number {
  return plan.headMessages.reduce((sum, m) => sum + (isCompactionSummary(m) ? 0 : estimateMessageTokens(m)), 0)
}

async function summarise(agent: Agent, run: CompactionRun, plan: CompactionPlan): Promise<{ text: string; data: CompactionSummaryData }> {
  const shadowedTokens = plan.headMessages.reduce((sum, m) => sum + estimateMessageTokens(m), 0)
  const base = { turn: run.turn, shadowedSeqs: plan.shadowedSeqs, shadowedTokens }
  if (run.summarize !== undefined) {
    const text = await run.summarize(plan.headMessages, { agent, signal: run.signal, instruction: run.route.instruction })
    run.signal.throwIfAborted()
    if (typeof text !== 'string' || text.trim() === '') throw new HarnessError('the summarize option returned no text', 'EMPTY_SUMMARY')
    return { text: text.trim(), data: { ...base, summary: text.trim(), by: 'custom' } }
  }
  const reply = await callSummaryModel(agent, run.turn, plan.shadowedSeqs, plan.headMessages, run.route, run.signal)
  const data: CompactionSummaryData = {
    ...base,
    summary: reply.text,
    by: 'model',
    provider: reply.provider,
    model: reply.model,
    ...(reply.usage !== undefined ? { usage: reply.usage } : {}),
  }
  return { text: reply.text, data }
}

// The compaction/request this run logged (the built-in call), so the replacement cites it too.
function requestSeqSince(session: Session, startSeq: number): number[] {
  for (let seq = session.length - 1; seq > startSeq; seq--) if (session.at(seq)?.type === 'compaction/request') return [seq]
  return []
}

function errorFacts(error: unknown): { code: string; message: string } {
  const code = error instanceof HarnessError ? error.code : (error as { kind?: string } | undefined)?.kind !== undefined ? 'ABORTED' : 'UNKNOWN'
  return { code, message: error instanceof HarnessError ? error.message : errorChain(error) }
}
