import type { Agent } from '../../loop/agent.js'
import type { LedgerHooks } from '../../loop/hook-types.js'
import { HarnessError } from '../../errors/harness-error.js'
import type { Plugin } from '../../hooks/hook-bus.js'
import type { HookRegistrar } from '../../hooks/types.js'
import type { Message } from '../../llm/types.js'
import { measurePressure } from './plan.js'
import { compactHistory, type CompactionOutcome, type CompactionRun } from './replace.js'
import { DEFAULT_SUMMARY_INSTRUCTION, type Summarize, type SummaryRoute } from './summary.js'

/** Options of {@link compactionPlugin}. */
export interface CompactionOptions {
  /** Share of the model's context window the next request may fill before compacting (0 < t ≤ 1, default 0.8). */
  readonly threshold?: number
  /**
   * Model turns kept verbatim (default 2). A model turn is one assistant reply with the tool results that answer
   * it and the user input it answered, so a long tool-using turn can still be compacted between its steps.
   */
  readonly keepRecentTurns?: number
  /** Replaces the built-in summary call: the older messages in, the summary text out. */
  readonly summarize?: Summarize
  /** Route of the built-in summary call (default: the loop's provider and model, which reuses its prompt cache). */
  readonly provider?: string
  readonly model?: string
  /** Output limit of the summary call (default 8192). */
  readonly summaryMaxTokens?: number
  /** The instruction the summary call ends with (default {@link DEFAULT_SUMMARY_INSTRUCTION}). */
  readonly instruction?: string
  /** First stage: old tool results longer than this many characters are pruned to a note (default 2000). */
  readonly pruneToolResultsOver?: number
  /** Context window to assume when the adapter knows none for the model (no pressure trigger without one). */
  readonly contextWindow?: number
  /** Called when a compaction fails (its `compaction/end` carries the same error; the turn goes on). */
  readonly onError?: (error: { readonly code: string; readonly message: string }, agent: Agent) => void
}

/** Options of a compaction asked for by hand. */
export interface CompactNowOptions {
  readonly signal?: AbortSignal
  /** Overrides the plugin's `keepRecentTurns` for this run. */
  readonly keepRecentTurns?: number
}

/** The compaction plugin: install it on a harness, and call `compact` to compact an idle agent by hand. */
export interface CompactionPlugin extends Plugin<HookRegistrar<LedgerHooks>> {
  /**
   * Summarises an idle agent's older history now (`/compact`, `ledgerloop compact`), whatever the pressure.
   * @throws HarnessError `AGENT_BUSY` while the agent runs a turn or another compaction
   */
  compact(agent: Agent, options?: CompactNowOptions): Promise<CompactionOutcome>
}

interface AgentState {
  busy: boolean
  /** The compaction by hand in progress, if any: a step that starts meanwhile waits for it. */
  byHand?: Promise<unknown>
  /** `turn/step` of the last overflow compaction: one per step, so an overflow can never loop. */
  overflowStep?: string
}

// Per agent, shared by every plugin instance and compactNow: two compactions of one history never overlap.
const states = new WeakMap<Agent, AgentState>()
const stateOf = (agent: Agent): AgentState => {
  let state = states.get(agent)
  if (state === undefined) states.set(agent, (state = { busy: false }))
  return state
}

/**
 * Keeps long sessions inside the model's context window, on the loop's public seams only:
 * - `agent/pre-step`: when the next request (the last request's logged prompt tokens plus what came after; an
 *   estimate when none) reaches `threshold` × the context window, old tool results are pruned and, if that is not
 *   enough, the older model turns are summarised by a direct model call and replaced on the surface;
 * - `agent/request-error` with `CONTEXT_WINDOW_EXCEEDED`: compacts as far as it can (the newest model turn kept)
 *   and retries the step only if the request actually shrank, at most once per step; otherwise the failure stands.
 * Every run is logged between `compaction/start` and `compaction/end`; the summary call as `compaction/request` and
 * `compaction/summary` (with usage). System prompt and tools are never changed.
 * @example
 * ```ts
 * const compaction = compactionPlugin({ threshold: 0.7, keepRecentTurns: 3 })
 * const harness = createHarness({ adapters: [deepseekAdapter()], plugins: [compaction] })
 * // later, by hand: await compaction.compact(agent)
 * ```
 */
export function compactionPlugin(options: CompactionOptions = {}): CompactionPlugin {
  const threshold = options.threshold ?? 0.8
  if (!(typeof threshold === 'number' && threshold > 0 && threshold <= 1)) throw invalid(`threshold must be a number in (0, 1], got ${String(threshold)}`)
  const keepRecentTurns = positive('keepRecentTurns', options.keepRecentTurns, 2)
  const route: SummaryRoute = {
    maxTokens: positive('summaryMaxTokens', options.summaryMaxTokens, 8192),
    instruction: options.instruction ?? DEFAULT_SUMMARY_INSTRUCTION,
    ...(options.provider !== undefined ? { provider: options.provider } : {}),
    ...(options.model !== undefined ? { model: options.model } : {}),
  }
  const pruneOverChars = positive('pruneToolResultsOver', options.pruneToolResultsOver, 2000)
  if (options.contextWindow !== undefined) positive('contextWindow', options.contextWindow, 0)
  if (options.summarize !== undefined && typeof options.summarize !== 'function') throw invalid('summarize must be a function')
  const run = async (agent: Agent, state: AgentState, fields: Omit<CompactionRun, 'route' | 'pruneOverChars' | 'summarize'>): Promise<CompactionOutcome> => {
    state.busy = true
    try {
      const outcome = await compactHistory(agent, { ...fields, route, pruneOverChars, ...(options.summarize !== undefined ? { summarize: options.summarize } : {}) })
      if (outcome.error !== undefined) options.onError?.(outcome.error, agent)
      return outcome
    } finally {
      state.busy = false
    }
  }

  const plugin: CompactionPlugin = {
    name: 'ledgerloop/compaction',
    setup(hooks) {
      const offPreStep = hooks.on('agent/pre-step', async (payload, next) => {
        const { agent, turn, signal } = payload
        const state = stateOf(agent)
        // Input sent while a compaction by hand runs: let it finish first, so its replace never lands mid-step.
        if (state.byHand !== undefined) await state.byHand.catch(() => undefined)
        const window = contextWindowOf(agent, options.contextWindow)
        if (window !== undefined && !state.busy) {
          const pressure = measurePressure(agent.session, payload.messages as readonly Message[])
          const limit = Math.floor(window * threshold)
          if (pressure.tokens >= limit) {
            // A twentieth of the window is the least worth a summary call.
            const minGainTokens = Math.floor(window / 20)
            await run(agent, state, { trigger: 'pressure', turn, keepRecentTurns, signal, pressure, contextWindow: window, stopBelowTokens: limit, minGainTokens })
          }
        }
        return next()
      })
      const offError = hooks.on('agent/request-error', async (payload, next) => {
        const { agent, turn, step, failure, signal } = payload
        const state = stateOf(agent)
        const key = `${turn}/${step}`
        if (failure.code !== 'CONTEXT_WINDOW_EXCEEDED' || signal.aborted || state.busy || state.overflowStep === key) return next()
        state.overflowStep = key
        const window = contextWindowOf(agent, options.contextWindow)
        const outcome = await run(agent, state, { trigger: 'overflow', turn, keepRecentTurns: 1, signal, ...(window !== undefined ? { contextWindow: window } : {}) })
        // Retrying an unchanged (or grown) request would only fail the same way again.
        return outcome.shrank ? { kind: 'retry' } : next()
      })
      return () => {
        offPreStep()
        offError()
      }
    },
    async compact(agent, compactOptions = {}) {
      const keep = positive('keepRecentTurns', compactOptions.keepRecentTurns, keepRecentTurns)
      claimIdle(agent)
      const state = stateOf(agent)
      const running = run(agent, state, { trigger: 'manual', turn: null, keepRecentTurns: keep, signal: compactOptions.signal ?? new AbortController().signal })
      state.byHand = running
      try {
        return await running
      } finally {
        state.byHand = undefined
      }
    },
  }
  return plugin
}

/**
 * Compacts an idle agent's older history now with these options, without installing the plugin (what
 * `ledgerloop compact` and chat's `/compact` use). Same events and outcome as {@link CompactionPlugin.compact}.
 * @throws HarnessError `AGENT_BUSY` while the agent runs a turn or another compaction; `INVALID_CONFIG`
 */
export async function compactNow(agent: Agent, options: CompactionOptions & CompactNowOptions = {}): Promise<CompactionOutcome> {
  return compactionPlugin(options).compact(agent, options)
}

function claimIdle(agent: Agent): void {
  if (agent.status === 'running' || stateOf(agent).busy) throw new HarnessError(`agent '${agent.id}' is busy: compact it when it is idle`, 'AGENT_BUSY')
}

/** The context window of the route the agent's next request goes to: logged, else the adapter's, else the option. */
function contextWindowOf(agent: Agent, fallback: number | undefined): number | undefined {
  const header = agent.session.requestHeader()?.config
  const provider = header?.provider ?? agent.options.provider
  const model = header?.model ?? agent.options.model
  const logged = agent.session.requestContext()
  if (logged !== undefined && logged.provider === provider && logged.model === model && logged.contextWindow !== undefined) return logged.contextWindow
  return agent.llm.adapter(provider)?.resolveModel?.(model)?.contextWindow ?? fallback
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || value < 1) throw invalid(`${name} must be a positive integer, got ${String(value)}`)
  return value
}

function invalid(message: string): HarnessError {
  return new HarnessError(`compactionPlugin: ${message}`, 'INVALID_CONFIG')
}
