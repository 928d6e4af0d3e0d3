// Layer 4 of the seed's layer table (§1), "Request attempt": starts inside a step at buildRequest(); owns the
// frozen route, system, tools and messages of one request; ends with a successful finish, or with a failure
// that recovery (`agent/request-error`) either takes over (retry in the same step) or leaves to the turn.
// The request is a snapshot the log folds to (§6); the retry decision is §8. Read after step.ts.
import { HarnessError } from '../errors/harness-error.js'
import { snapshotJson } from '../json/lossless.js'
import { BlockAssembler } from '../llm/block-assembler.js'
import { frozenChunkCopy, takeTextDelta, type TextDeltaSink } from '../llm/freeze-chunk.js'
import { LlmError } from '../llm/llm-error.js'
import { draftAssistantMessage } from '../llm/messages.js'
import type { PreparedCall } from '../llm/registry.js'
import type { AssistantMessage, GenerateOptions, LlmCallConfig, LlmFailure, Message, StreamChunk, ToolSchema } from '../llm/types.js'
import { canonicalHeader, headerEquals, requestProposal } from '../session/request-header.js'
import type { Session } from '../session/session.js'
import { INTERRUPTED_MARKER } from '../session/surface.js'
import type { LoopContext, StepContext } from './loop-context.js'

/** The parts of a request the step fixed before its first attempt (rendered once per step). */
export interface RequestParts {
  /** The system prompt of this step's assembly. */
  readonly system: string
  /** The tool schemas this agent is offered in this step. */
  readonly tools: readonly ToolSchema[]
}

/**
 * How one request attempt ended. `finished`: the stream finished and its completion anchor (`assistant/message`)
 * is logged; `truncated` when it stopped at the output token limit (its tool calls were dropped: never run
 * them). `retry`: the provider failed and `agent/request-error` asked for another attempt in the same step.
 * `failed`: the provider failed and no listener took it over (the turn fails with this failure).
 */
export type AttemptResult =
  | { readonly kind: 'finished'; readonly message: AssistantMessage; readonly truncated: boolean }
  | { readonly kind: 'retry' }
  | { readonly kind: 'failed'; readonly failure: LlmFailure }

const RETRY: AttemptResult = Object.freeze({ kind: 'retry' })
const APPEND = 'append' as const

/**
 * One request attempt of a step (`ordinal`: 1 for the step's first, 2 for the retry after it, …): build the request from the log,
 * stream it through the registry (every chunk logged as it arrives and fed to the assembler), then log the
 * completion anchor or ask `agent/request-error` what to do about the failure. A cancel throws (after logging
 * what had streamed as an interrupted message); so do failures that are not the provider's (request middleware,
 * a recovery listener), for the turn to record.
 */
export async function attempt(loop: LoopContext, at: StepContext, parts: RequestParts, ordinal: number): Promise<AttemptResult> {
  const { session } = loop
  const { turn, step, signal } = at
  const history = session.historyView()
  const { request, prepared } = await buildRequest(loop, at, parts, history.messages)
  const intake = new ChunkIntake(session, turn, step, signal)
  const { assembler, chunkSeqs } = intake
  try {
    await loop.llm.pump(request, prepared, (streamed: StreamChunk) => intake.chunk(streamed), history)
    signal.throwIfAborted()
  } catch (error) {
    if (signal.aborted) appendInterrupted(session, assembler, request, chunkSeqs, turn, step)
    throw error
  }
  const finish = assembler.finish
  if (finish.kind === 'error' || finish.kind === 'aborted') {
    const action = await loop.hooks.waterfall(
      'agent/request-error',
      { agent: loop.agent, turn, step, provider: request.provider, failure: finish.failure, retryPolicy: prepared?.retryPolicy, attempt: ordinal, signal },
      () => undefined,
      loop.agent.id,
    )
    signal.throwIfAborted() // cancel wins over a returned retry
    return action?.kind === 'retry' ? RETRY : { kind: 'failed', failure: finish.failure }
  }
  const content = assembler.blocks()
  const source = { kind: 'model' as const, provider: request.provider, model: request.model }
  const replayState = assembler.replayState()
  const message = draftAssistantMessage(content, replayState !== undefined ? { ...source, replayState } : source)
  const usage = assembler.usage
  // Built frozen, so the log adopts it after a walk instead of copying it (anything unfrozen inside, such as
  // a pruned replay state, still takes the copy).
  const data = usage !== undefined ? { turn, step, message, usage } : { turn, step, message }
  session.append('assistant/message', Object.freeze(data), { surfaceOp: APPEND, sourceEventSeqs: Object.freeze(chunkSeqs) })
  return { kind: 'finished', message, truncated: finish.kind === 'max-tokens' }
}

/**
 * One attempt's streamed chunks on their way into the log and the assembler. Its methods, not closures made per
 * attempt, are what the stream calls for every chunk: the call targets live as long as the code does, so V8's
 * optimised code for the chunk path survives the attempts' objects being collected (a closure per attempt
 * inlined into that code would take the code down with it at the next full GC).
 */
class ChunkIntake implements TextDeltaSink {
  readonly assembler = new BlockAssembler()
  readonly chunkSeqs: number[] = []
  readonly #session: Session
  readonly #turn: number
  readonly #step: number
  readonly #signal: AbortSignal

  constructor(session: Session, turn: number, step: number, signal: AbortSignal) {
    this.#session = session
    this.#turn = turn
    this.#step = step
    this.#signal = signal
  }

  /** A streamed chunk: checked for a cancel, then logged and assembled. */
  chunk(streamed: StreamChunk): void {
    this.#signal.throwIfAborted()
    // Text deltas, most of a stream, go in as their parts: no chunk object, no copy.
    if (takeTextDelta(streamed, this)) return
    // The log and the assembler share one frozen chunk (a copy when the adapter yields unfrozen objects);
    // one that is not lossless JSON goes to the log as is, which refuses it with the reason.
    const copy = frozenChunkCopy(streamed)
    const chunk = copy ?? streamed
    // Kept compact in the log: no event object unless a listener or the store asks for one.
    this.chunkSeqs.push(this.#session.appendChunk(this.#turn, this.#step, chunk, copy !== undefined))
    this.assembler.push(chunk)
  }

  /** A text or reasoning delta, as its parts. */
  text(type: 'text-delta' | 'reasoning-delta', index: number, text: string): void {
    this.chunkSeqs.push(this.#session.appendText(this.#turn, this.#step, type, index, text))
    this.assembler.pushText(type, index, text)
  }
}

/** What a cancelled stream had produced, as an interrupted message citing its chunks (nothing when empty). */
function appendInterrupted(session: Session, assembler: BlockAssembler, request: GenerateOptions, chunkSeqs: number[], turn: number, step: number): void {
  const content = assembler.interruptedBlocks()
  if (content.length === 0) return
  const message = draftAssistantMessage(content, { kind: 'model', provider: request.provider, model: request.model })
  const usage = assembler.usage
  // The note is logged with the anchor: the fold shows it to the model after the cut-off text, and a log written
  // before notes existed (whose requests carried none) rebuilds its requests without one.
  const note = INTERRUPTED_MARKER
  const data = usage !== undefined ? { turn, step, message, interrupted: true, note, usage } : { turn, step, message, interrupted: true, note }
  session.append('assistant/message', Object.freeze(data), { surfaceOp: APPEND, sourceEventSeqs: Object.freeze(chunkSeqs) })
}

/**
 * The request of this attempt, rebuilt from the log (§6): seed route proposal → `agent/request` → prepare the
 * exact adapter call → log `request/header` (first time, or on change) and `request/context` (on change) →
 * freeze the dispatch object from the logged header and the derived messages.
 */
async function buildRequest(
  loop: LoopContext,
  at: StepContext,
  parts: RequestParts,
  messages: readonly Message[],
): Promise<{ request: GenerateOptions; prepared: PreparedCall | undefined }> {
  const { session, hooks } = loop
  const { signal } = at
  const persisted = session.requestHeader()
  // A shallow freeze is deep here: the logged header's parts (its `stop` array) are frozen, and the initial
  // proposal holds primitives only.
  const seed = Object.freeze(loop.headerLogged && persisted !== undefined ? requestProposal(persisted) : initialProposal(loop, persisted))
  // Without a listener the seed is the proposal: no payload, no tick.
  const proposed = !hooks.has('agent/request') ? seed : await hooks.waterfall('agent/request', { agent: loop.agent, turn: at.turn, step: at.step, signal }, () => seed, loop.agent.id)
  signal.throwIfAborted()
  if (typeof proposed?.provider !== 'string' || proposed.provider === '' || typeof proposed.model !== 'string' || proposed.model === '') {
    throw new HarnessError('agent/request produced a config without provider or model', 'INVALID_CONFIG')
  }
  let prepared: PreparedCall | undefined
  let config: LlmCallConfig
  try {
    prepared = await loop.llm.prepareCall(proposed, signal)
    config = prepared.config
  } catch (error) {
    // NO_ADAPTER only: an llm/stream listener may still serve this route; if none does, it fails in-band.
    if (!(error instanceof LlmError && error.code === 'NO_ADAPTER')) throw error
    config = snapshotJson(proposed, 'request config') as unknown as LlmCallConfig
  }
  signal.throwIfAborted()
  const header = canonicalHeader({ config, adapterDefaults: prepared?.adapterDefaults, system: parts.system, tools: parts.tools })
  if (!loop.headerLogged) {
    session.append('request/header', { header, reason: persisted === undefined ? 'initial' : 'resume' })
    loop.headerLogged = true
  } else if (!headerEquals(header, persisted)) {
    session.append('request/header', { header, reason: 'change' })
  }
  const window = prepared?.context?.contextWindow
  const last = session.requestContext()
  if (last === undefined || last.provider !== config.provider || last.model !== config.model || last.contextWindow !== window) {
    session.append('request/context', { provider: config.provider, model: config.model, ...(window !== undefined ? { contextWindow: window } : {}) })
  }
  // Built from the logged header, so the request is exactly what a fold of the log yields.
  const logged = session.requestHeader() ?? header
  // Every part is already frozen (the shared history view and the logged header), so a shallow freeze
  // makes the request deep-frozen without walking it.
  const request: GenerateOptions = Object.freeze({
    ...logged.config,
    messages,
    ...(logged.system !== undefined ? { system: logged.system } : {}),
    ...(logged.tools !== undefined ? { tools: logged.tools } : {}),
    sessionId: session.id,
    signal,
    origin: 'loop', // how `llm/stream` listeners (the invariant plugin) tell a request rebuildable from the log
  })
  return { request, prepared }
}

/** First request of this loop instance: options first; an explicit effort survives only on the same route. */
function initialProposal(loop: LoopContext, persisted: ReturnType<Session['requestHeader']>): LlmCallConfig {
  const { provider, model, maxTokens } = loop.options
  const keepEffort =
    persisted !== undefined &&
    persisted.config.provider === provider &&
    persisted.config.model === model &&
    persisted.config.reasoningEffort !== undefined &&
    persisted.adapterDefaults?.reasoningEffort !== true
  return {
    provider,
    model,
    ...(keepEffort ? { reasoningEffort: persisted.config.reasoningEffort as string } : {}),
    ...(maxTokens !== undefined ? { maxTokens } : {}),
  }
}
