// Owns `ledgerloop replay`: runs a fresh loop over a recorded session's model outputs and compares every request
// it builds with the recorded one. It runs the loop, so it lives in app/ (views/ holds only its pure half,
// views/replay-recording.ts, and the compaction re-enactment, views/replay-compaction.ts).
//
// Why this harness does not come from compose.ts: a replay reproduces the RECORDED session's composition, not
// the one today's config would build. Everything compose installs that shapes a request is already in the log
// and is re-enacted from there: the system prompt (persona and project instructions) and the tool schemas come
// from the logged request header, the request settings (reasoning effort, output cap, …) from the header's
// config through `agent/request`, and each compaction from its logged replace. Installing the live plugins
// instead would decide afresh (compact, retry and stop on budgets by today's config) and start MCP servers and
// span export, and the replay would test the config, not the recording. Nothing runs either: no tool executes
// (the recorded results are swapped in) and no model is called (the recorded chunks are streamed).
import { createHarness } from '../harness/harness.js'
import type { Agent } from '../loop/agent.js'
import type { JsonValue } from '../json/lossless.js'
import type { GenerateOptions, LlmAdapter, ModelInfo, StreamChunk, ToolSchema } from '../llm/types.js'
import type { CancelCause, SessionEvent } from '../session/events.js'
import { foldRequestHeader, requestProposal } from '../session/request-header.js'
import { MemoryStore } from '../store/memory-store.js'
import { CompactionReenactor } from '../views/replay-compaction.js'
import { Session } from '../session/session.js'
import { compareRequest, followedFromLog, lastTurnReason, recordedResults, recordedSteps, recordedTurns, stepHeaders, stepKey, type RecordedTurn } from '../views/replay-recording.js'

/** What a replay found. */
export interface ReplayReport {
  /** Requests compared (one per original step that reached the model and streamed). */
  readonly compared: number
  /** Each difference or gap, naming the turn, step and original seq. */
  readonly problems: string[]
  /**
   * Turns taken from the log instead of replayed: closed by crash repair, or continuation turns. The replay
   * goes on after each from the recorded history, so the turns after it are still compared.
   */
  readonly followed: number[]
}

/** Model facts per provider route, so a replay materialises the same adapter defaults as the original run. */
export type ModelFacts = (provider: string) => ((model: string) => ModelInfo | undefined) | undefined

/**
 * Replays a recorded session: a fresh loop (memory store, no plugins) is fed the recorded model outputs — the
 * chunks of each step's final attempt, through an adapter per provider route — and the recorded tool results
 * (swapped in on `tools/post-execute`), with the same user input, turn by turn. Every request the fresh loop
 * builds is compared with the original request rebuilt from the log. Cancels are re-enacted where the
 * original was cancelled, so aborted turns replay too, and so are recorded compactions (their surface replaces,
 * at the same history positions), so requests after a compaction compare too.
 * @example
 * ```ts
 * const report = await replaySession((await store.read(id)).events)
 * if (report.problems.length > 0) console.log(report.problems.join('\n'))
 * ```
 */
export async function replaySession(events: readonly SessionEvent[], modelFacts: ModelFacts = () => undefined): Promise<ReplayReport> {
  const problems: string[] = []
  const steps = recordedSteps(events)
  const turns = recordedTurns(events)
  const results = recordedResults(events)
  const headers = stepHeaders(events)
  const compactions = new CompactionReenactor(events)
  const firstHeader = foldRequestHeader(events.slice(0, events.findIndex((e) => e.type === 'request/header') + 1))
  if (firstHeader === undefined || turns.length === 0) return { compared: 0, problems: ['the session has no request to replay'], followed: [] }
  const followed = turns.filter(followedFromLog).map((t) => t.turn)

  const fresh = new Map<string, GenerateOptions>()
  let agent: Agent | undefined
  let current = { turn: 0, step: 0 }
  const turnOf = (n: number): RecordedTurn | undefined => turns.find((t) => t.turn === n)
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
    fresh.set(stepKey(turn, step), request)
    // The original overflowed and compacted inside this step: fail the same way, so the retry sees the compaction.
    const overflow = compactions.takeFailure(turn, step)
    if (overflow !== undefined) {
      yield overflow
      return
    }
    const original = steps.get(stepKey(turn, step))
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
  const store = new MemoryStore()
  const harness = createHarness({ store, adapters, tools, onListenerError: (error) => problems.push(`replay listener failed: ${String(error)}`) })
  let system: string | undefined
  // The recorded system text goes in through a variable: variable values are not interpolated again.
  harness.prompt.variable('recorded_system', () => system)
  harness.prompt.section('recorded', { text: () => (system === undefined ? undefined : '{{recorded_system}}') })
  const expect = (turn: number, step: number): void => {
    current = { turn, step }
    system = (headers.get(stepKey(turn, step)) ?? firstHeader).system
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
    const recorded = headers.get(stepKey(payload.turn, payload.step))
    // The proposal leaves a structured-output mode out (a run sets it per turn): the recorded one is put back.
    if (recorded === undefined) return next()
    const output = recorded.config.output
    return output !== undefined ? { ...requestProposal(recorded), output } : requestProposal(recorded)
  })
  harness.hooks.on('tools/post-execute', async ({ call }) => {
    const recorded = results.get(call.callId)
    if (recorded === undefined) {
      problems.push(`turn ${call.turn} step ${call.step}: the fresh loop called ${call.name} (${call.callId}), which has no recorded result`)
      return { content: [{ type: 'text', text: 'Error: no recorded result' }], isError: true }
    }
    return recorded
  })

  const resumeFromLog = async (prefix: readonly SessionEvent[]): Promise<Agent> => {
    const seeded = new Session({ seed: prefix })
    await (await store.create(seeded.header, seeded.events)).close()
    const header = foldRequestHeader(prefix) ?? firstHeader
    // Repair only: a continuation the original ran is in the log, and is followed from there like the rest.
    return harness.resumeAgent(seeded.id, { provider: header.config.provider, model: header.config.model, interrupted: 'close' })
  }

  try {
    agent = await harness.createAgent({ provider: firstHeader.config.provider, model: firstHeader.config.model })
    for (const turn of turns) {
      if (followedFromLog(turn)) {
        // No fresh loop writes this turn: carry on from the recorded history through its end, as the original
        // process did when it resumed the session.
        await agent.dispose()
        agent = await resumeFromLog(events.slice(0, turn.endSeq + 1))
        continue
      }
      if (turn.steered) problems.push(`turn ${turn.turn} received input between steps, which replay does not feed; later requests may differ`)
      for (const message of turn.input) agent.followup(message)
      await agent.whenIdle()
      const got = lastTurnReason(agent.session.events)
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
    if (followed.includes(Number(turn))) continue
    const at = `turn ${turn} step ${step} (original request at seq ${original.firstSeq})`
    if (request === undefined) {
      problems.push(`${at}: the fresh loop never sent this request`)
      continue
    }
    compared++
    const difference = compareRequest(original.request, request)
    if (difference !== undefined) problems.push(`${at}: ${difference}`)
  }
  return { compared, problems, followed }
}

function abortOf(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_, reject) => {
    if (signal === undefined) return
    if (signal.aborted) return reject(signal.reason)
    signal.addEventListener('abort', () => reject(signal.reason), { once: true })
  })
}
