import type { Agent } from '../../loop/agent.js'
import { HarnessError } from '../../errors/harness-error.js'
import { BlockAssembler } from '../../llm/block-assembler.js'
import { LlmError } from '../../llm/llm-error.js'
import { createUserMessage } from '../../llm/messages.js'
import type { GenerateOptions, LlmCallConfig, Message, TokenUsage } from '../../llm/types.js'

/** What a custom `summarize` function receives besides the messages. */
export interface SummarizeContext {
  readonly agent: Agent
  readonly signal: AbortSignal
  /** The instruction the built-in summary call would send. */
  readonly instruction: string
}

/** A replacement for the built-in summary call: the older messages in, the summary text out. */
export type Summarize = (messages: readonly Message[], ctx: SummarizeContext) => Promise<string>

/** The instruction appended as the last user message of the summary call. */
export const DEFAULT_SUMMARY_INSTRUCTION = [
  'The conversation above is about to be cut from your context to make room. Write a summary that will replace it,',
  'so that you can carry on the work without it. Include: the user\'s goals and constraints in their own words where',
  'they matter; decisions made and why; what has been done (files read or changed, commands run, results that still',
  'matter, with exact names, paths and values); what is still open and the next step. Leave out pleasantries and',
  'anything superseded. Do not call tools: answer with the summary text only.',
].join(' ')

/** Data of the `compaction/request` event: the summary call as sent (logged before it is sent). */
export interface CompactionRequestData {
  readonly turn: number | null
  readonly provider: string
  readonly model: string
  readonly maxTokens: number
  readonly reasoningEffort?: string
  /** The surface nodes whose messages the call replays, in order (then the instruction follows). */
  readonly shadowedSeqs: readonly number[]
  /** True when the call also carries the loop's logged system prompt and tools (same route: cache reuse). */
  readonly sameHeader: boolean
  readonly instruction: string
}

/** Data of the `compaction/summary` event: what came back, and what it cost. */
export interface CompactionSummaryData {
  readonly turn: number | null
  readonly summary: string
  /** `model`: the built-in call; `custom`: the plugin's `summarize` option. */
  readonly by: 'model' | 'custom'
  readonly provider?: string
  readonly model?: string
  readonly usage?: TokenUsage
  readonly shadowedSeqs: readonly number[]
  /** Estimated tokens of the replaced messages. */
  readonly shadowedTokens: number
}

/** Where the built-in summary call goes: the loop's route unless configured. */
export interface SummaryRoute {
  readonly provider?: string
  readonly model?: string
  readonly maxTokens: number
  readonly instruction: string
}

/**
 * The built-in summary call: one direct request through the agent's adapter registry (so `llm/stream` listeners
 * see it, but it is never a loop request: no chunks are logged and it is not marked as one). On the loop's own
 * route it replays the logged system prompt, tools and the older messages verbatim and appends the instruction
 * last, so the provider's prompt cache serves the shared prefix. The request is logged as `compaction/request`
 * before it is sent. Only the text is kept.
 * @throws LlmError with the provider's failure; HarnessError `EMPTY_SUMMARY` when no text came back
 */
export async function callSummaryModel(
  agent: Agent,
  turn: number | null,
  shadowedSeqs: readonly number[],
  messages: readonly Message[],
  route: SummaryRoute,
  signal: AbortSignal,
): Promise<{ text: string; usage?: TokenUsage; provider: string; model: string }> {
  const header = agent.session.requestHeader()
  const provider = route.provider ?? header?.config.provider ?? agent.options.provider
  const model = route.model ?? header?.config.model ?? agent.options.model
  const sameRoute = header !== undefined && header.config.provider === provider && header.config.model === model
  const effort = sameRoute ? header.config.reasoningEffort : undefined
  // Never ask for more output than the model can give (a small model would answer 400).
  const cap = agent.llm.adapter(provider)?.resolveModel?.(model)?.maxOutputTokens
  const maxTokens = cap !== undefined ? Math.min(route.maxTokens, cap) : route.maxTokens
  const proposal: LlmCallConfig = { provider, model, maxTokens, ...(effort !== undefined ? { reasoningEffort: effort } : {}) }
  const prepared = await agent.llm.prepareCall(proposal, signal)
  const request: GenerateOptions = {
    ...prepared.config,
    messages: [...messages, createUserMessage(route.instruction, { kind: 'plugin', plugin: COMPACTION_PLUGIN, form: 'instructions' })],
    ...(sameRoute && header.system !== undefined ? { system: header.system } : {}),
    ...(sameRoute && header.tools !== undefined ? { tools: header.tools } : {}),
    sessionId: agent.session.id,
    signal,
  }
  const logged: CompactionRequestData = {
    turn,
    provider,
    model,
    maxTokens: prepared.config.maxTokens ?? maxTokens,
    ...(prepared.config.reasoningEffort !== undefined ? { reasoningEffort: prepared.config.reasoningEffort } : {}),
    shadowedSeqs,
    sameHeader: sameRoute,
    instruction: route.instruction,
  }
  agent.session.append('compaction/request', logged)
  const assembler = new BlockAssembler()
  for await (const chunk of prepared.stream(request)) assembler.push(chunk)
  signal.throwIfAborted()
  const finish = assembler.finish
  if (finish.kind === 'error' || finish.kind === 'aborted') throw new LlmError(finish.failure)
  const text = assembler
    .blocks()
    .flatMap((b) => (b.type === 'text' ? [b.text] : []))
    .join('')
    .trim()
  if (text === '') throw new HarnessError(`the summary call to ${provider}/${model} returned no text (finish: ${finish.kind})`, 'EMPTY_SUMMARY')
  const usage = assembler.usage
  return { text, provider, model, ...(usage !== undefined ? { usage } : {}) }
}

/** The plugin name on the messages compaction writes (the summary, the summary call's instruction). */
export const COMPACTION_PLUGIN = 'ledgerloop/compaction'
