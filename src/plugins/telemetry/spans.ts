import type { JsonValue } from '../../json/lossless.js'
import type { ContentBlock, LlmCallConfig, LlmFailure, Message, StreamChunk, TokenUsage } from '../../llm/types.js'
import type { CoreEventData, SessionEvent, TurnEndReason } from '../../session/events.js'
import { dataOf } from '../../session/events.js'
import { foldMessages } from '../../session/surface.js'

/** An attribute value as OpenTelemetry accepts it. */
export type SpanAttributeValue = string | number | boolean | readonly string[]

/** Span attributes by name. */
export type SpanAttributes = Readonly<Record<string, SpanAttributeValue>>

/** A span as the builder opens it. Times are epoch milliseconds taken from the log. */
export interface SpanStart {
  readonly name: string
  readonly kind: 'internal' | 'client'
  readonly startTime: number
  readonly attributes: SpanAttributes
}

/** How a span closes: its end time, status and the attributes learnt while it was open. */
export interface SpanEnd {
  readonly endTime: number
  readonly status: { readonly code: 'ok' | 'error'; readonly message?: string }
  readonly attributes: SpanAttributes
}

/**
 * Where built spans go: an OpenTelemetry tracer (the plugin) or an OTLP/JSON batch (`ledgerloop trace`).
 * `start` gets the parent's handle (`undefined` for a turn, the root of its trace).
 */
export interface SpanSink<Handle> {
  start(span: SpanStart, parent: Handle | undefined): Handle
  end(handle: Handle, end: SpanEnd): void
}

/** Options of {@link SessionSpanBuilder}. */
export interface SpanBuilderOptions {
  /** Record prompts, outputs, tool arguments and results as attributes (default false). */
  readonly captureContent?: boolean
  /**
   * The model-visible history now (a live session's `deriveMessages`); default: folded from the events fed so
   * far, which must then be the whole log from seq 0.
   */
  readonly currentMessages?: () => readonly Message[]
  /** Events before this seq only set the route and prompt (a fork's seed: its turns belong to the parent). */
  readonly ownEventsFrom?: number
}

/** Attribute names (OpenTelemetry GenAI semantic conventions, plus `ledgerloop.*` for the loop's own facts). */
export const GENAI = Object.freeze({
  operation: 'gen_ai.operation.name',
  provider: 'gen_ai.provider.name',
  conversation: 'gen_ai.conversation.id',
  agentName: 'gen_ai.agent.name',
  requestModel: 'gen_ai.request.model',
  responseModel: 'gen_ai.response.model',
  maxTokens: 'gen_ai.request.max_tokens',
  temperature: 'gen_ai.request.temperature',
  finishReasons: 'gen_ai.response.finish_reasons',
  inputTokens: 'gen_ai.usage.input_tokens',
  outputTokens: 'gen_ai.usage.output_tokens',
  cacheReadTokens: 'gen_ai.usage.cache_read.input_tokens',
  cacheWriteTokens: 'gen_ai.usage.cache_creation.input_tokens',
  reasoningTokens: 'gen_ai.usage.reasoning.output_tokens',
  toolName: 'gen_ai.tool.name',
  toolCallId: 'gen_ai.tool.call.id',
  toolType: 'gen_ai.tool.type',
  toolArguments: 'gen_ai.tool.call.arguments',
  toolResult: 'gen_ai.tool.call.result',
  systemInstructions: 'gen_ai.system_instructions',
  inputMessages: 'gen_ai.input.messages',
  outputMessages: 'gen_ai.output.messages',
  errorType: 'error.type',
  turn: 'ledgerloop.turn',
  step: 'ledgerloop.step',
  attempt: 'ledgerloop.request.attempt',
  retryDelay: 'ledgerloop.retry.delay_ms',
  endReason: 'ledgerloop.turn.end_reason',
  permission: 'ledgerloop.permission.decision',
})

/** The agent name on every `invoke_agent` span. */
export const AGENT_NAME = 'ledgerloop'

interface OpenSpan<H> {
  readonly handle: H
  readonly attributes: Record<string, SpanAttributeValue>
}

interface Attempt<H> extends OpenSpan<H> {
  finish?: Extract<StreamChunk, { type: 'finish' }>['reason']
  usage?: TokenUsage
  lastTime: number
}

interface Turn<H> extends OpenSpan<H> {
  readonly turn: number
  step: number
  attempts: number
  /** Requests of the current step so far (1 = first attempt). */
  stepAttempts: number
  /** A request is due (the step began, or a retry was logged) and no output of it has arrived yet. */
  awaitingRequest: boolean
  attempt: Attempt<H> | undefined
  /** An attempt whose stream stopped without a finish; its status waits for the turn's reason. */
  unfinished: Attempt<H> | undefined
  /** When the next request of this step was sent, as far as the log tells. */
  nextRequestAt: number
  retryDelayMs: number | undefined
  readonly tools: Map<string, OpenSpan<H>>
  /** Sums over the turn's attempts; `reported` stays false until one of them reported usage at all. */
  readonly usage: { input: number; output: number; cacheRead: number; reported: boolean }
  config: LlmCallConfig | undefined
}

/**
 * Turns a session log into spans, one event at a time, so the same code serves a live agent (fed from
 * `session/event`) and a finished session read from a store. Spans: `invoke_agent` per turn (the root of a
 * trace; its status from the turn's end reason), `chat {model}` per model request attempt (retries are
 * separate spans with `ledgerloop.request.attempt`), `execute_tool {tool}` per tool call. Every time comes
 * from the log, so a replayed session yields the same spans as the live one.
 */
export class SessionSpanBuilder<H> {
  readonly #sessionId: string
  readonly #sink: SpanSink<H>
  readonly #capture: boolean
  readonly #messages: () => readonly Message[]
  readonly #ownFrom: number
  /** The log so far, kept only when content is captured (input messages are folded from it). */
  readonly #events: SessionEvent[] = []
  #config: LlmCallConfig | undefined
  #system: string | undefined
  #turn: Turn<H> | undefined

  constructor(sessionId: string, sink: SpanSink<H>, options: SpanBuilderOptions = {}) {
    this.#sessionId = sessionId
    this.#sink = sink
    this.#capture = options.captureContent === true
    this.#messages = options.currentMessages ?? (() => foldMessages(this.#events))
    this.#ownFrom = options.ownEventsFrom ?? 0
  }

  /** Feeds one event (in log order). */
  observe(event: SessionEvent): void {
    if (this.#capture && this.#events.length === event.seq) this.#events.push(event)
    // A fork's inherited history was traced as its parent's: only its route and prompt carry over.
    if (event.seq < this.#ownFrom && event.type !== 'request/header') return
    const turn = this.#turn
    switch (event.type) {
      case 'request/header': {
        const header = dataOf(event, 'request/header').header
        this.#config = header.config
        this.#system = header.system
        if (turn !== undefined) turn.config = header.config
        break
      }
      case 'turn/start':
        this.#openTurn(dataOf(event, 'turn/start').turn, event.time)
        break
      case 'step/start':
        if (turn === undefined) break
        this.#settleUnfinished(turn, { code: 'error', message: 'the response stream ended without a finish' }, 'stream_interrupted')
        turn.step = dataOf(event, 'step/start').step
        turn.stepAttempts = 0
        turn.awaitingRequest = true
        turn.retryDelayMs = undefined
        turn.nextRequestAt = event.time
        break
      case 'assistant/chunk':
        if (turn !== undefined) this.#chunk(turn, dataOf(event, 'assistant/chunk').chunk, event.time)
        break
      case 'assistant/message':
        if (turn !== undefined) this.#assistantMessage(turn, dataOf(event, 'assistant/message'), event.time)
        break
      case 'llm/retry': {
        if (turn === undefined) break
        const delay = (event.data as { delayMs?: unknown }).delayMs
        turn.retryDelayMs = typeof delay === 'number' ? delay : undefined
        turn.awaitingRequest = true
        // The next attempt goes out once the backoff is over.
        turn.nextRequestAt = event.time + (turn.retryDelayMs ?? 0)
        break
      }
      case 'tool/call':
        if (turn !== undefined) this.#toolCall(turn, dataOf(event, 'tool/call'), event.time)
        break
      case 'permission/decision': {
        const data = event.data as { callId?: unknown; decision?: unknown; by?: unknown }
        const span = typeof data.callId === 'string' ? turn?.tools.get(data.callId) : undefined
        if (span !== undefined && typeof data.decision === 'string') span.attributes[GENAI.permission] = `${data.decision} (${String(data.by)})`
        break
      }
      case 'tool/result':
        if (turn !== undefined) this.#toolResult(turn, dataOf(event, 'tool/result'), event.time)
        break
      case 'step/end':
        if (turn !== undefined) this.#stepEnd(turn, event.time)
        break
      case 'turn/end':
        if (turn !== undefined) this.#closeTurn(turn, dataOf(event, 'turn/end').reason, event.time)
        break
    }
    // Before a request goes out the loop logs its input and header; the latest such event is the send time.
    if (turn !== undefined && turn.attempt === undefined && (event.type === 'user/message' || event.type === 'request/header' || event.type === 'request/context')) {
      turn.nextRequestAt = Math.max(turn.nextRequestAt, event.time)
    }
  }

  #openTurn(turnNumber: number, time: number): void {
    const attributes: Record<string, SpanAttributeValue> = {
      [GENAI.operation]: 'invoke_agent',
      [GENAI.agentName]: AGENT_NAME,
      [GENAI.conversation]: this.#sessionId,
      [GENAI.turn]: turnNumber,
    }
    if (this.#config !== undefined) Object.assign(attributes, routeAttributes(this.#config))
    const handle = this.#sink.start({ name: `invoke_agent ${AGENT_NAME}`, kind: 'internal', startTime: time, attributes }, undefined)
    this.#turn = {
      handle,
      attributes: {},
      turn: turnNumber,
      step: 0,
      attempts: 0,
      stepAttempts: 0,
      awaitingRequest: false,
      attempt: undefined,
      unfinished: undefined,
      nextRequestAt: time,
      retryDelayMs: undefined,
      tools: new Map(),
      usage: { input: 0, output: 0, cacheRead: 0, reported: false },
      config: this.#config,
    }
  }

  #openAttempt(turn: Turn<H>, firstOutputAt: number): Attempt<H> {
    turn.attempts++
    turn.stepAttempts++
    turn.awaitingRequest = false
    const config = turn.config ?? this.#config
    const model = config?.model ?? 'unknown'
    const attributes: Record<string, SpanAttributeValue> = {
      [GENAI.operation]: 'chat',
      ...(config !== undefined ? routeAttributes(config) : {}),
      [GENAI.conversation]: this.#sessionId,
      [GENAI.turn]: turn.turn,
      [GENAI.step]: turn.step,
      [GENAI.attempt]: turn.stepAttempts,
    }
    if (config?.maxTokens !== undefined) attributes[GENAI.maxTokens] = config.maxTokens
    if (config?.temperature !== undefined) attributes[GENAI.temperature] = config.temperature
    if (turn.stepAttempts > 1 && turn.retryDelayMs !== undefined) attributes[GENAI.retryDelay] = turn.retryDelayMs
    if (this.#capture) {
      if (this.#system !== undefined) attributes[GENAI.systemInstructions] = JSON.stringify([{ type: 'text', content: this.#system }])
      attributes[GENAI.inputMessages] = JSON.stringify(this.#messages().map(semconvMessage))
    }
    const startTime = Math.min(turn.nextRequestAt, firstOutputAt)
    const handle = this.#sink.start({ name: `chat ${model}`, kind: 'client', startTime, attributes }, turn.handle)
    const attempt: Attempt<H> = { handle, attributes: {}, lastTime: startTime }
    turn.attempt = attempt
    return attempt
  }

  #chunk(turn: Turn<H>, chunk: StreamChunk, time: number): void {
    const attempt = turn.attempt ?? this.#openAttempt(turn, time)
    attempt.lastTime = time
    if (chunk.type === 'usage') attempt.usage = chunk.usage
    if (chunk.type !== 'finish') return
    attempt.finish = chunk.reason
    const failed = chunk.reason.kind === 'error' || chunk.reason.kind === 'aborted'
    // A failed attempt logs no assistant message: it ends here, and the next attempt starts after it.
    if (failed) {
      this.#endAttempt(turn, attempt, time)
      turn.nextRequestAt = time
    }
  }

  #assistantMessage(turn: Turn<H>, data: CoreEventData['assistant/message'], time: number): void {
    const attempt = turn.attempt
    if (attempt === undefined) return
    if (data.usage !== undefined) attempt.usage = data.usage
    attempt.attributes[GENAI.responseModel] = data.message.source.kind === 'model' ? data.message.source.model : (turn.config?.model ?? '')
    if (this.#capture) attempt.attributes[GENAI.outputMessages] = JSON.stringify([semconvMessage(data.message)])
    if (data.interrupted === true) {
      // Cancelled mid-stream: the turn's reason decides how this attempt is reported.
      attempt.lastTime = time
      turn.unfinished = attempt
      turn.attempt = undefined
      return
    }
    this.#endAttempt(turn, attempt, time)
  }

  #endAttempt(turn: Turn<H>, attempt: Attempt<H>, endTime: number, status?: SpanEnd['status'], errorType?: string): void {
    if (turn.attempt === attempt) turn.attempt = undefined
    const attributes = attempt.attributes
    const reason = attempt.finish
    if (reason !== undefined) attributes[GENAI.finishReasons] = [finishReasonName(reason.kind)]
    const usage = attempt.usage
    if (usage !== undefined) {
      Object.assign(attributes, usageAttributes(usage))
      turn.usage.input += totalInput(usage)
      turn.usage.output += usage.outputTokens
      turn.usage.cacheRead += usage.cacheReadTokens ?? 0
      turn.usage.reported = true
    }
    let final = status ?? { code: 'ok' as const }
    if (reason !== undefined && (reason.kind === 'error' || reason.kind === 'aborted')) {
      final = { code: 'error', message: failureText(reason.failure) }
      attributes[GENAI.errorType] = reason.failure.code
    } else if (errorType !== undefined) {
      attributes[GENAI.errorType] = errorType
    }
    this.#sink.end(attempt.handle, { endTime, status: final, attributes })
  }

  #stepEnd(turn: Turn<H>, time: number): void {
    const open = turn.attempt
    if (open !== undefined) {
      // The stream stopped without a finish (cancel or a thrown failure): wait for the turn's reason.
      turn.attempt = undefined
      turn.unfinished = open
    } else if (turn.awaitingRequest) {
      // A request (first or retried) that never produced a byte: cancelled or failed while waiting.
      const attempt = this.#openAttempt(turn, time)
      turn.attempt = undefined
      attempt.lastTime = time
      turn.unfinished = attempt
    }
  }

  #settleUnfinished(turn: Turn<H>, status: SpanEnd['status'], errorType: string): void {
    const attempt = turn.unfinished
    if (attempt === undefined) return
    turn.unfinished = undefined
    this.#endAttempt(turn, attempt, attempt.lastTime, status, errorType)
  }

  #toolCall(turn: Turn<H>, data: CoreEventData['tool/call'], time: number): void {
    const attributes: Record<string, SpanAttributeValue> = {
      [GENAI.operation]: 'execute_tool',
      [GENAI.toolName]: data.name,
      [GENAI.toolCallId]: data.callId,
      [GENAI.toolType]: 'function',
      [GENAI.conversation]: this.#sessionId,
      [GENAI.turn]: data.turn,
      [GENAI.step]: data.step,
    }
    if (this.#capture) attributes[GENAI.toolArguments] = data.arguments
    const handle = this.#sink.start({ name: `execute_tool ${data.name}`, kind: 'internal', startTime: time, attributes }, turn.handle)
    turn.tools.set(data.callId, { handle, attributes: {} })
  }

  #toolResult(turn: Turn<H>, data: CoreEventData['tool/result'], time: number): void {
    const block = data.message.content[0]
    if (block?.type !== 'tool-result') return
    const span = turn.tools.get(block.toolCallId)
    if (span === undefined) return
    turn.tools.delete(block.toolCallId)
    if (this.#capture) span.attributes[GENAI.toolResult] = JSON.stringify(block.content.map(semconvPart))
    if (data.error !== undefined) span.attributes[GENAI.errorType] = data.error.code
    const status: SpanEnd['status'] = data.error !== undefined || block.isError === true ? { code: 'error', message: data.error?.code ?? 'tool error' } : { code: 'ok' }
    this.#sink.end(span.handle, { endTime: time, status, attributes: span.attributes })
  }

  #closeTurn(turn: Turn<H>, reason: TurnEndReason, time: number): void {
    const status = turnStatus(reason)
    const errorType = reason.kind === 'error' ? reason.error.code : reason.kind === 'completed' || reason.kind === 'max-tokens' ? undefined : reason.kind
    this.#settleUnfinished(turn, status.code === 'ok' ? { code: 'error', message: 'the response stream ended without a finish' } : status, errorType ?? 'stream_interrupted')
    if (turn.attempt !== undefined) this.#endAttempt(turn, turn.attempt, time, status, errorType)
    for (const [callId, span] of turn.tools) {
      // Crash repair answers every call; a log cut short may still leave one open.
      this.#sink.end(span.handle, { endTime: time, status: { code: 'error', message: `no result logged for ${callId}` }, attributes: span.attributes })
    }
    turn.tools.clear()
    const attributes: Record<string, SpanAttributeValue> = { [GENAI.endReason]: reason.kind }
    if (turn.config !== undefined) Object.assign(attributes, routeAttributes(turn.config))
    // A model that reported no usage did not use zero tokens: the count is unknown, so it is left out.
    if (turn.usage.reported) {
      attributes[GENAI.inputTokens] = turn.usage.input
      attributes[GENAI.outputTokens] = turn.usage.output
      if (turn.usage.cacheRead > 0) attributes[GENAI.cacheReadTokens] = turn.usage.cacheRead
    }
    if (errorType !== undefined) attributes[GENAI.errorType] = errorType
    this.#sink.end(turn.handle, { endTime: time, status, attributes })
    this.#turn = undefined
  }
}

/**
 * Builds every span of a finished (or partial) log into `sink`; a turn left open gets no span end. A fork's
 * inherited turns (before `session/end-seed`) are left to its parent's trace.
 */
export function buildSessionSpans<H>(sessionId: string, events: readonly SessionEvent[], sink: SpanSink<H>, options: SpanBuilderOptions = {}): void {
  const seedEnd = events.findIndex((e) => e.type === 'session/end-seed')
  const builder = new SessionSpanBuilder(sessionId, sink, seedEnd >= 0 ? { ownEventsFrom: seedEnd + 1, ...options } : options)
  for (const event of events) builder.observe(event)
}

// Well-known `gen_ai.provider.name` values for the built-in routes; other route names pass through.
const PROVIDER_NAMES: Readonly<Record<string, string>> = { deepseek: 'deepseek', anthropic: 'anthropic', openai: 'openai' }

function routeAttributes(config: LlmCallConfig): Record<string, SpanAttributeValue> {
  return { [GENAI.provider]: PROVIDER_NAMES[config.provider] ?? config.provider, [GENAI.requestModel]: config.model }
}

// The conventions count cached input inside input_tokens; our TokenUsage keeps them apart.
function totalInput(usage: TokenUsage): number {
  return usage.inputTokens + (usage.cacheReadTokens ?? 0) + (usage.cacheWriteTokens ?? 0)
}

function usageAttributes(usage: TokenUsage): Record<string, SpanAttributeValue> {
  const out: Record<string, SpanAttributeValue> = { [GENAI.inputTokens]: totalInput(usage), [GENAI.outputTokens]: usage.outputTokens }
  if (usage.cacheReadTokens !== undefined) out[GENAI.cacheReadTokens] = usage.cacheReadTokens
  if (usage.cacheWriteTokens !== undefined) out[GENAI.cacheWriteTokens] = usage.cacheWriteTokens
  if (usage.reasoningTokens !== undefined) out[GENAI.reasoningTokens] = usage.reasoningTokens
  return out
}

function finishReasonName(kind: string): string {
  switch (kind) {
    case 'tool-calls':
      return 'tool_call'
    case 'max-tokens':
      return 'length'
    default:
      return kind
  }
}

function failureText(failure: LlmFailure): string {
  return `${failure.code}: ${failure.message}`
}

function turnStatus(reason: TurnEndReason): SpanEnd['status'] {
  switch (reason.kind) {
    case 'completed':
    case 'max-tokens':
      return { code: 'ok' }
    case 'aborted':
      return { code: 'error', message: `aborted (${reason.reason.kind === 'hook' ? `hook: ${reason.reason.reason}` : reason.reason.kind})` }
    case 'error':
      return { code: 'error', message: failureText(reason.error) }
    case 'blocked':
      return { code: 'error', message: 'blocked before the step' }
    default:
      return { code: 'error', message: 'interrupted (the process stopped mid-turn)' }
  }
}

// Messages in the conventions' JSON shape: {role, parts: [{type, …}]}.
function semconvMessage(message: Message): JsonValue {
  return { role: message.role, parts: message.content.map(semconvPart) }
}

function semconvPart(block: ContentBlock): JsonValue {
  switch (block.type) {
    case 'text':
      return { type: 'text', content: block.text }
    case 'reasoning':
      return { type: 'reasoning', content: block.text }
    case 'tool-call':
      return { type: 'tool_call', id: block.id, name: block.name, arguments: block.arguments }
    case 'tool-result':
      return { type: 'tool_call_response', id: block.toolCallId, response: block.content.map(semconvPart) }
    case 'image':
      return { type: 'uri', modality: 'image', mime_type: block.attachment.mediaType, uri: block.attachment.attachmentId }
  }
}
