// Owns `ledgerloop rerun` and `rerunSession()`: a recorded session's inputs fed again, turn by turn, to the agent as
// it is configured today (or with another model, provider or system prompt), into a new session linked to the
// original, compared with it as it goes. Unlike `replay` (app/replay-session.ts), which rebuilds the RECORDED
// composition to test this build of the loop, a rerun uses the caller's composition on purpose: the question is
// "what would my agent do now with the same user?", so the model really answers and the plugins decide afresh.
// Only the user's side is re-enacted: prompts, steering at the step it entered, and a person's cancel after the
// same number of streamed chunks of the interrupted step.
import { HarnessError } from '../errors/harness-error.js'
import { createHarness, type HarnessOptions } from '../harness/harness.js'
import type { Agent } from '../loop/agent.js'
import type { UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import { Session } from '../session/session.js'
import type { SessionStore, StoredSession } from '../store/types.js'
import type { ToolDefinition } from '../tools/types.js'
import { compareSessions, compareTurnFacts, turnFacts, type SessionComparison, type TurnComparison } from '../views/compare-sessions.js'
import type { PricingCatalogue } from '../views/cost.js'
import { recordedInputs, type RecordedTurnInputs } from '../views/recorded-inputs.js'
import { recordedTools } from './recorded-tools.js'

/** Options of {@link rerunSession}: where the recording is, the composition to rerun it with, and the overrides. */
export interface RerunOptions extends Omit<HarnessOptions, 'store' | 'tools'> {
  /** The store holding the recorded session; the rerun is written there too. It is left open. */
  readonly store: SessionStore
  /** The recorded session. */
  readonly sessionId: string
  /** The live tool set (used with `toolMode: 'live'`). */
  readonly tools?: readonly ToolDefinition<never>[]
  /** `'recorded'`: tools answer from the recording ({@link recordedTools}), nothing runs; `'live'`: `tools` run. */
  readonly toolMode: 'recorded' | 'live'
  /** Route of the rerun (default: the recording's last). */
  readonly provider?: string
  readonly model?: string
  /** First turn to rerun (default 1); earlier turns are copied into the new session as they were. */
  readonly fromTurn?: number
  /** Prices for the cost figures of the comparison. */
  readonly pricing?: PricingCatalogue
  /** Compare without final texts (see `compareSessions`). */
  readonly ignoreText?: boolean
  /** Called as each rerun turn ends, with its comparison to the original turn. */
  readonly onTurn?: (comparison: TurnComparison) => void
  /**
   * Called with the new session's id as soon as its fork is stored, before the first turn is fed: a caller that
   * answers while the rerun runs (the server's rerun route) hands the id out here.
   */
  readonly onSession?: (sessionId: string) => void
  /**
   * Stops the rerun: a running turn is cancelled (logged as a user's cancel) and no further turn is fed. The
   * report then compares the turns that ran.
   */
  readonly signal?: AbortSignal
}

/** What a rerun did and found. */
export interface RerunReport {
  /** The new session: its header's `forkedFrom` is the original, and so is its `parentSession` (a fork before `fromTurn`). */
  readonly sessionId: string
  /** The recorded session it reran. */
  readonly forkedFrom: string
  readonly fromTurn: number
  /** The original against the rerun, every turn (copied turns compare the same). */
  readonly comparison: SessionComparison
}

/**
 * Reruns a stored session: forks it before turn `fromTurn` (default 1) into a new session linked to the original,
 * then feeds it the recorded user inputs turn by turn — each turn's prompts, later-step steering and injections
 * at the step they entered, and a person's cancel after the same number of `assistant/chunk` events of the
 * interrupted step — with the composition given (adapters, tools, plugins, system) and the route overrides, and
 * compares every turn with the original as it ends. Budget cancels are not replayed: the rerun's plugins decide.
 * @throws HarnessError `SESSION_NOT_FOUND`, `INVALID_CONFIG` (a bad `fromTurn` or `toolMode`, no turn to rerun)
 * @example
 * ```ts
 * const report = await rerunSession({ store, sessionId: id, adapters: [deepseekAdapter()], model: 'deepseek-reasoner', toolMode: 'recorded' })
 * for (const t of report.comparison.turns) if (!t.same) console.log(t.turn, t.differences)
 * ```
 */
export async function rerunSession(options: RerunOptions): Promise<RerunReport> {
  const { store, sessionId, toolMode, fromTurn = 1, pricing, ignoreText = false, onTurn, onSession, signal, provider, model, tools: liveTools, ...composition } = options
  if (toolMode !== 'recorded' && toolMode !== 'live') throw new HarnessError(`toolMode must be 'recorded' or 'live', not ${JSON.stringify(toolMode)}`, 'INVALID_CONFIG')
  if (!Number.isSafeInteger(fromTurn) || fromTurn < 1) throw new HarnessError(`fromTurn must be a turn number from 1, not ${String(fromTurn)}`, 'INVALID_CONFIG')
  const original = await store.read(sessionId)
  const events = original.events
  const turns = recordedInputs(events).filter((t) => t.turn >= fromTurn && t.input.length > 0)
  if (turns.length === 0) throw new HarnessError(`session '${sessionId}' has no ended turn from turn ${fromTurn} on with user input to rerun`, 'INVALID_CONFIG')
  const route = lastRoute(events)
  signal?.throwIfAborted()
  const childId = await forkBefore(store, original, sessionId, fromTurn)
  onSession?.(childId)

  const harness = createHarness({ ...composition, store: keptOpen(store), tools: toolMode === 'recorded' ? recordedTools(events) : (liveTools ?? []) })
  const originalFacts = turnFacts(events, pricing)
  let plan: TurnPlan | undefined
  let agent: Agent | undefined
  harness.hooks.on('agent/pre-step', async (payload, next) => {
    // Cancelled before any step opened: the same.
    if (plan?.turn === payload.turn && plan.cancel?.step === 0) payload.agent.cancel(plan.cancel.cause, { keepInbox: true })
    return next()
  })
  harness.hooks.on('agent/request', async (payload, next) => {
    if (plan?.turn === payload.turn) {
      // Steering recorded as entering step s is queued while step s-1 runs, so the next pre-step claims it.
      plan.steerFor(payload.step + 1, payload.agent)
      if (plan.cancel?.step === payload.step && plan.cancel.chunks === 0) payload.agent.cancel(plan.cancel.cause, { keepInbox: true })
    }
    return next()
  })
  harness.hooks.on('agent/turn-stopping', async (payload) => {
    // The rerun is ending the turn earlier than the original did: what was still to be steered in comes now.
    if (plan?.turn === payload.turn) plan.steerRest(payload.agent)
  })
  harness.hooks.on('session/event', ({ event }) => {
    if (event.type !== 'assistant/chunk' || plan?.cancel === undefined || agent === undefined) return
    const d = event.data as { turn: number; step: number }
    if (d.turn === plan.turn && d.step === plan.cancel.step && ++plan.chunksSeen === plan.cancel.chunks) agent.cancel(plan.cancel.cause, { keepInbox: true })
  })

  const stop = (): void => agent?.cancel({ kind: 'user' }, { keepInbox: true })
  signal?.addEventListener('abort', stop, { once: true })
  try {
    agent = await harness.resumeAgent(childId, { provider: provider ?? route?.provider, model: model ?? route?.model, ...(original.header.cwd !== undefined ? { cwd: original.header.cwd } : {}) })
    for (const recorded of turns) {
      if (signal?.aborted === true) break
      plan = new TurnPlan(agent.session.lastTurn + 1, recorded)
      for (const message of recorded.input) agent.followup(message)
      await agent.whenIdle()
      if (onTurn !== undefined) {
        const fresh = turnFacts(agent.session.events, pricing, plan.turn).get(plan.turn)
        onTurn(compareTurnFacts(recorded.turn, originalFacts.get(recorded.turn), fresh, ignoreText))
      }
    }
    const comparison = compareSessions(events, agent.session.events, { ignoreText, ...(pricing !== undefined ? { pricing } : {}) })
    return { sessionId: childId, forkedFrom: sessionId, fromTurn, comparison }
  } finally {
    signal?.removeEventListener('abort', stop)
    await harness.close()
  }
}

/** What is still to be fed into one rerun turn. */
class TurnPlan {
  chunksSeen = 0
  readonly #steers: Map<number, readonly UserMessage[]>
  constructor(
    readonly turn: number,
    readonly recorded: RecordedTurnInputs,
  ) {
    this.#steers = new Map(recorded.steers)
  }

  get cancel(): RecordedTurnInputs['cancel'] {
    return this.recorded.cancel
  }

  steerFor(step: number, agent: Agent): void {
    const messages = this.#steers.get(step)
    if (messages === undefined) return
    this.#steers.delete(step)
    for (const m of messages) agent.steer(m)
  }

  steerRest(agent: Agent): void {
    for (const step of [...this.#steers.keys()].sort((a, b) => a - b)) this.steerFor(step, agent)
  }
}

/** The route of the recording's last request header. */
function lastRoute(events: readonly SessionEvent[]): { provider: string; model: string } | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i] as SessionEvent
    if (e.type === 'request/header') return (e.data as { header: { config: { provider: string; model: string } } }).header.config
  }
  return undefined
}

/**
 * A new session holding the original's log up to the end of turn `fromTurn - 1` (nothing for turn 1): the same
 * kind of fork as `ledgerloop fork`, cut before the input of the first rerun turn was queued, so that input is fed
 * again rather than found waiting in the inbox.
 */
async function forkBefore(store: SessionStore, original: StoredSession, id: string, fromTurn: number): Promise<string> {
  let cut = 0
  for (const e of original.events) {
    if (e.type === 'turn/end' && (e.data as { turn: number }).turn === fromTurn - 1) cut = e.seq + 1
  }
  if (fromTurn > 1 && cut === 0) throw new HarnessError(`session '${id}' has no ended turn ${fromTurn - 1} to fork after`, 'INVALID_CONFIG')
  const prefix = original.events.slice(0, cut)
  const child = new Session({
    header: { ...(original.header.cwd !== undefined ? { cwd: original.header.cwd } : {}), parentSession: id, forkedFrom: id, seedLength: prefix.length },
    seed: prefix,
    endSeed: true,
  })
  const writer = await store.create(child.header, child.events)
  await writer.close()
  return child.id
}

/** The caller's store for a harness that closes its store when done: everything but `close` goes through. */
function keptOpen(store: SessionStore): SessionStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'close') return async () => {}
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}
