import { createHarness } from '../harness/harness.js'
import type { Agent } from '../loop/agent.js'
import type { JsonValue } from '../json/lossless.js'
import type { GenerateOptions, LlmAdapter, ModelInfo, StreamChunk, ToolResultBlock, ToolSchema, UserMessage } from '../llm/types.js'
import type { CancelCause, RequestHeader, SessionEvent, TurnEndReason } from '../session/events.js'
import { foldSession } from '../session/fold.js'
import { foldRequestHeader, requestProposal } from '../session/request-header.js'
import { MemoryStore } from '../store/memory-store.js'
import type { ToolCallResult } from '../loop/hook-types.js'
import { CompactionReenactor } from './replay-compaction.js'
import { loggedRequests } from './request-reconstruction.js'

/** What a replay found. */
export interface ReplayReport {
  /** Requests compared (one per original step that reached the model and streamed). */
  readonly compared: number
  /** Each difference or gap, naming the turn, step and original seq. */
  readonly problems: string[]
}

/** Model facts per provider route, so a replay materialises the same adapter defaults as the original run. */
export type ModelFacts = (provider: string) => ((model: string) => ModelInfo | undefined) | undefined

interface OriginalStep {
  /** The chunks of the attempt that counted (the last one), and whether it ended with a finish chunk. */
  readonly chunks: StreamChunk[]
  readonly finished: boolean
  /** The request it was built from, rebuilt from the log before its first chunk. */
  readonly request: { readonly messages: readonly unknown[]; readonly header: RequestHeader | undefined }
  readonly firstSeq: number
}

interface OriginalTurn {
  readonly turn: number
  readonly reason: TurnEndReason | undefined
  readonly input: UserMessage[]
  /** Step numbers that were opened. */
  readonly steps: Set<number>
  /** Later-step user input (steering), which this replay does not feed. */
  readonly steered: boolean
}

const key = (turn: number, step: number): string => `${turn}/${step}`

/**
 * Replays a recorded session: a fresh loop (memory store, no plugins) is fed the recorded model outputs — the
 * chunks of each step's final attempt, through an adapter per provider route — and the recorded tool results
 * (swapped in on `tools/post-execute`), with the same user input, turn by turn. Every request the fresh loop
 * builds is compared with the original request rebuilt from the log. Cancels are re-enacted where the
 * original was cancelled, so aborted turns replay too, and so are recorded compactions (their surface replaces,
 * at the same history positions), so requests after a compaction compare too.
 */
export async function replaySession(events: readonly SessionEvent[], modelFacts: ModelFacts = () => undefined): Promise<ReplayReport> {
  const problems: string[] = []
  const steps = originalSteps(events)
  const turns = originalTurns(events)
  const results = recordedResults(events)
  const headers = stepHeaders(events)
  const compactions = new CompactionReenactor(events)
  const firstHeader = foldRequestHeader(events.slice(0, firstSeqOf(events, 'request/header') + 1))
  if (firstHeader === undefined || turns.length === 0) return { compared: 0, problems: ['the session has no request to replay'] }

  const fresh = new Map<string, GenerateOptions>()
  let agent: Agent | undefined
  let current = { turn: 0, step: 0 }
  const turnOf = (n: number): OriginalTurn | undefined => turns.find((t) => t.turn === n)
  const cancelCause = (n: number): CancelCause | undefined => {
    const reason = turnOf(n)?.reason
    return reason?.kind === 'aborted' ? reason.reason : undefined
  }

  const providers = new Set<string>()
  for (const h of headers.values()) providers.add(h.config.provider)
  const adapters: LlmAdapter[] = [...providers].map((provider) => {
    const resolve = modelFacts(provider)
    return {
      provider,
      ...(resolve !== undefined ? { resolveModel: resolve } : {}),
      stream: (request) => replayStream(request),
    }
  })

  async function* replayStream(request: GenerateOptions): AsyncGenerator<StreamChunk> {
    const { turn, step } = current
    fresh.set(key(turn, step), request)
    // The original overflowed and compacted inside this step: fail the same way, so the retry sees the compaction.
    const overflow = compactions.takeFailure(turn, step)
    if (overflow !== undefined) {
      yield overflow
      return
    }
    const original = steps.get(key(turn, step))
    const cause = cancelCause(turn)
    if (original === undefined) {
      if (cause !== undefined && turnOf(turn)?.steps.has(step) === true) {
        // The original request streamed nothing before it was cancelled (a hang): cancel the same way.
        agent?.cancel(cause, { keepInbox: true })
        await abortOf(request.signal)
      }
      problems.push(`turn ${turn} step ${step}: the fresh loop sent a request the original log has no reply for`)
      yield { type: 'finish', reason: { kind: 'error', failure: { code: 'REPLAY_NO_RECORDING', message: `no recorded reply for turn ${turn} step ${step}` } } }
      return
    }
    for (const chunk of original.chunks) yield chunk
    if (!original.finished) {
      agent?.cancel(cause ?? { kind: 'user' }, { keepInbox: true })
      await abortOf(request.signal)
    }
  }

  const tools = (firstHeader.tools ?? []).map((schema: ToolSchema) => ({
    name: schema.name,
    description: schema.description,
    parameters: schema.parameters as { readonly [key: string]: JsonValue },
    // Never runs anything: the recorded result replaces whatever comes out (post-execute below).
    execute: () => '',
  }))
  const harness = createHarness({ store: new MemoryStore(), adapters, tools, onListenerError: (error) => problems.push(`replay listener failed: ${String(error)}`) })
  let system: string | undefined
  // The recorded system text goes in through a variable: variable values are not interpolated again.
  harness.prompt.variable('recorded_system', () => system)
  harness.prompt.section('recorded', { text: () => (system === undefined ? undefined : '{{recorded_system}}') })
  const expect = (turn: number, step: number): void => {
    current = { turn, step }
    system = (headers.get(key(turn, step)) ?? firstHeader).system
  }
  harness.hooks.on('session/event', ({ event }) => {
    const d = event.data as { turn?: number; step?: number }
    if (event.type === 'turn/start') expect(d.turn as number, 1)
    if (event.type === 'step/start') current = { turn: d.turn as number, step: d.step as number }
    if (event.type === 'step/end') expect(d.turn as number, (d.step as number) + 1)
  })
  harness.hooks.on('agent/pre-step', async (payload, next) => {
    const cause = cancelCause(payload.turn)
    // The original turn was cancelled before this step opened (a budget): do the same.
    if (cause !== undefined && turnOf(payload.turn)?.steps.has(payload.step) === false) payload.agent.cancel(cause, { keepInbox: true })
    problems.push(...compactions.beforeStep(payload.agent.session, payload.turn, payload.step))
    return next()
  })
  harness.hooks.on('agent/request-error', async (payload, next) =>
    compactions.inStep(payload.agent.session, payload.turn, payload.step, problems) ? { kind: 'retry' } : next(),
  )
  harness.hooks.on('agent/request', async (payload, next) => {
    const recorded = headers.get(key(payload.turn, payload.step))
    return recorded !== undefined ? requestProposal(recorded) : next()
  })
  harness.hooks.on('tools/post-execute', async ({ call }) => {
    const recorded = results.get(call.callId)
    if (recorded === undefined) {
      problems.push(`turn ${call.turn} step ${call.step}: the fresh loop called ${call.name} (${call.callId}), which has no recorded result`)
      return { content: [{ type: 'text', text: 'Error: no recorded result' }], isError: true }
    }
    return recorded
  })

  try {
    agent = await harness.createAgent({ provider: firstHeader.config.provider, model: firstHeader.config.model })
    for (const turn of turns) {
      if (turn.reason?.kind === 'interrupted') {
        problems.push(`turn ${turn.turn} was closed by crash repair; the replay stops there`)
        break
      }
      if (turn.steered) problems.push(`turn ${turn.turn} received input between steps, which replay does not feed; later requests may differ`)
      for (const message of turn.input) agent.followup(message)
      await agent.whenIdle()
      const got = lastReason(agent.session.events)
      if (JSON.stringify(got) !== JSON.stringify(turn.reason)) {
        problems.push(`turn ${turn.turn}: ended ${JSON.stringify(got)} in the replay, ${JSON.stringify(turn.reason)} originally`)
      }
    }
  } finally {
    await harness.close()
  }

  let compared = 0
  for (const [k, original] of steps) {
    const request = fresh.get(k)
    const [turn, step] = k.split('/')
    const at = `turn ${turn} step ${step} (original request at seq ${original.firstSeq})`
    if (request === undefined) {
      problems.push(`${at}: the fresh loop never sent this request`)
      continue
    }
    compared++
    const difference = compareRequest(original.request, request)
    if (difference !== undefined) problems.push(`${at}: ${difference}`)
  }
  return { compared, problems }
}

/** Where a rebuilt request and a fresh one differ (message ids aside: a fresh loop mints its own). */
export function compareRequest(original: { messages: readonly unknown[]; header: RequestHeader | undefined }, request: GenerateOptions): string | undefined {
  const h = original.header
  if (h === undefined) return 'the original log has no request header before it'
  const fields: [string, unknown, unknown][] = [
    ['provider', h.config.provider, request.provider],
    ['model', h.config.model, request.model],
    ['reasoningEffort', h.config.reasoningEffort, request.reasoningEffort],
    ['temperature', h.config.temperature, request.temperature],
    ['maxTokens', h.config.maxTokens, request.maxTokens],
    ['stop', h.config.stop, request.stop],
    ['system', h.system, request.system],
    ['tools', h.tools ?? [], request.tools ?? []],
  ]
  for (const [name, a, b] of fields) if (JSON.stringify(a) !== JSON.stringify(b)) return `${name} differs: ${clipJson(a)} originally, ${clipJson(b)} in the replay`
  const a = original.messages.map(withoutId)
  const b = request.messages.map(withoutId)
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (JSON.stringify(a[i]) !== JSON.stringify(b[i])) return `message ${i} differs: ${clipJson(a[i])} originally, ${clipJson(b[i])} in the replay`
  }
  return undefined
}

function withoutId(message: unknown): unknown {
  if (typeof message !== 'object' || message === null) return message
  const { id: _id, ...rest } = message as Record<string, unknown>
  return rest
}

function clipJson(value: unknown): string {
  const text = value === undefined ? 'absent' : JSON.stringify(value)
  return text.length > 160 ? `${text.slice(0, 159)}…` : text
}

function originalSteps(events: readonly SessionEvent[]): Map<string, OriginalStep> {
  const steps = new Map<string, OriginalStep>()
  for (const r of loggedRequests(events)) {
    const chunks = events.slice(r.firstSeq, r.lastSeq + 1).map((e) => (e.data as { chunk: StreamChunk }).chunk)
    const { messages, header } = foldSession(events.slice(0, r.firstSeq))
    // Later attempts of a step (after a retry) replace earlier ones: the last is the one the loop kept.
    steps.set(key(r.turn, r.step), { chunks, finished: r.finish !== undefined, request: { messages, header }, firstSeq: r.firstSeq })
  }
  return steps
}

function originalTurns(events: readonly SessionEvent[]): OriginalTurn[] {
  const turns: OriginalTurn[] = []
  let open: { turn: number; input: UserMessage[]; steps: Set<number>; steered: boolean; step: number } | undefined
  for (const e of events) {
    const d = e.data as Record<string, unknown>
    if (e.type === 'turn/start') open = { turn: d.turn as number, input: [], steps: new Set(), steered: false, step: 0 }
    if (open === undefined) continue
    if (e.type === 'step/start') {
      open.step = d.step as number
      open.steps.add(open.step)
    }
    if (e.type === 'user/message' && e.surfaceOp === 'append') {
      const message = e.data as unknown as UserMessage
      if (message.source.kind === 'user') {
        if (open.step <= 1) open.input.push(message)
        else open.steered = true
      }
    }
    if (e.type === 'turn/end') {
      turns.push({ turn: open.turn, reason: d.reason as TurnEndReason, input: open.input, steps: open.steps, steered: open.steered })
      open = undefined
    }
  }
  return turns
}

function recordedResults(events: readonly SessionEvent[]): Map<string, ToolCallResult> {
  const results = new Map<string, ToolCallResult>()
  for (const e of events) {
    if (e.type !== 'tool/result' || e.surfaceOp !== 'append') continue
    const d = e.data as unknown as { message: { content: ToolResultBlock[] }; error?: { name: string; code: string } }
    const block = d.message.content[0]
    if (block === undefined) continue
    results.set(block.toolCallId, { content: block.content, isError: block.isError === true, ...(d.error !== undefined ? { error: d.error } : {}) })
  }
  return results
}

// The header in force for each step: the latest one logged up to the step's end.
function stepHeaders(events: readonly SessionEvent[]): Map<string, RequestHeader> {
  const headers = new Map<string, RequestHeader>()
  let header: RequestHeader | undefined
  for (const e of events) {
    if (e.type === 'request/header') header = (e.data as unknown as { header: RequestHeader }).header
    if (e.type === 'step/end' && header !== undefined) {
      const d = e.data as { turn: number; step: number }
      headers.set(key(d.turn, d.step), header)
    }
  }
  return headers
}

function firstSeqOf(events: readonly SessionEvent[], type: string): number {
  return events.findIndex((e) => e.type === type)
}

function lastReason(events: readonly SessionEvent[]): TurnEndReason | undefined {
  for (let i = events.length - 1; i >= 0; i--) if ((events[i] as SessionEvent).type === 'turn/end') return ((events[i] as SessionEvent).data as { reason: TurnEndReason }).reason
  return undefined
}

function abortOf(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    if (signal === undefined) return
    if (signal.aborted) return reject(signal.reason)
    signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
}
