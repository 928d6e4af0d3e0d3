import { HarnessError } from '../errors/harness-error.js'
import { createHookBus, type HookBus, type Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar, ListenerErrorReporter } from '../hooks/types.js'
import { LlmRegistry } from '../llm/registry.js'
import type { LlmAdapter } from '../llm/types.js'
import { endsInsideTurn, forkChild } from '../session/fork-point.js'
import { activeQuarantine, CONTINUED_ALONE, interruptedWork, QUARANTINE_LIFTED, QUARANTINED, quarantineReason, type InterruptedWork } from '../session/continuation.js'
import { repairEventsOfLog } from '../session/repair.js'
import { eventLogOf } from '../session/event-log.js'
import type { EventRecord, SessionEvent } from '../session/events.js'
import { Session, SESSION_FORMAT_VERSION, type SessionHeader } from '../session/session.js'
import type { ChildAgentRequest, ToolDefinition } from '../tools/types.js'
import { ToolRegistry } from '../tools/tool-registry.js'
import { MemoryStore } from '../store/memory-store.js'
import type { SessionStore, SessionWriter } from '../store/types.js'
import { Agent, type AgentOptions } from '../loop/agent.js'
import type { LedgerHooks } from '../loop/hook-types.js'
import { delegationOf, findChildProfile, isOfferedAtDepth } from '../loop/delegation.js'
import { PromptRegistry } from '../loop/prompt.js'
import { checkpointSlotOf } from '../tools/checkpoint.js'
import { storeCheckpointSink } from './checkpoint-sink.js'
import { rewindSession, type RewindOptions, type RewindResult } from './rewind.js'
import { wireSessionToWriter } from './session-writer-adapter.js'

/** Options of {@link createHarness}. */
export interface HarnessOptions {
  /** Where sessions live (default: a new `MemoryStore`). */
  readonly store?: SessionStore
  /** Adapters registered at creation. */
  readonly adapters?: readonly LlmAdapter[]
  /** Tools registered at creation. */
  readonly tools?: readonly ToolDefinition<never>[]
  /** Plugins installed at creation, in order. */
  readonly plugins?: readonly Plugin<HookRegistrar<LedgerHooks>>[]
  /** Persona section of the system prompt. */
  readonly system?: string
  /** Most concurrency-safe tool bodies running at once per step (default 10). */
  readonly maxParallelToolCalls?: number
  /** Where contained listener failures are reported (default: stderr). */
  readonly onListenerError?: ListenerErrorReporter
  /**
   * Run every agent's work inside an AsyncLocalStorage frame so `currentInitiator()` can tell, anywhere down
   * the call stack, which agent is working (default false: on Node 20 this makes every promise in the process
   * slower; tools and plugins already receive the agent in their payloads).
   */
  readonly initiatorScope?: boolean
}

/** Options of {@link Harness.resumeAgent}: agent options to override, and what to do with interrupted work. */
export interface ResumeOptions extends Partial<AgentOptions> {
  /**
   * Work a crash interrupted (the log's last turn ended `interrupted`): `continue` (default) starts a
   * continuation turn at once, whose `turn/start` carries `continues` and whose first request is rebuilt from the
   * log; `close` only repairs (today's behaviour before continuation), leaving the work for the next input.
   */
  readonly interrupted?: 'continue' | 'close'
  /** Resume a quarantined session anyway: the quarantine is lifted durably and interruptions count afresh. */
  readonly force?: boolean
  /**
   * After how many interruptions in a row of the same work (the original turn counts) the session is
   * quarantined instead of continued (default 3; at least 1).
   */
  readonly quarantineAfter?: number
  /**
   * The continuation runs alone in this process: nothing else runs here until it ends, so a crash that
   * interrupts it again counts toward `quarantineAfter` (it is logged as `session/continued-alone`). A
   * continuation that shares its process is not counted: a bystander of a poison session must not reach the
   * quarantine by dying with it. Default: true when no other agent of this harness is running a turn now.
   */
  readonly alone?: boolean
}

/** The harness: registries, hooks, store, and the agents created from them. */
export interface Harness {
  /** Register listeners on every hook (see the hooks table in the docs). */
  readonly hooks: HookRegistrar<LedgerHooks>
  /** Adapter registry. */
  readonly llm: LlmRegistry
  /** Tool registry. */
  readonly tools: ToolRegistry
  /** System prompt sections, runtime-context sections, variables (for every agent). */
  readonly prompt: PromptRegistry
  /** The session store. */
  readonly store: SessionStore
  /** Installs a plugin; returns a disposer that uninstalls it. */
  use(plugin: Plugin<HookRegistrar<LedgerHooks>>): () => void
  /** Creates an agent with a new session. `SESSION_EXISTS` when `sessionId` is taken. */
  createAgent(options: AgentOptions): Promise<Agent>
  /**
   * Loads a stored session, repairs what a crash left (durably: `TOOL_OUTCOME_UNKNOWN` / `TOOL_NOT_STARTED`
   * results, `step/end`, `turn/end {interrupted}`, then input the crashed turn claimed but never committed back
   * at the head of the inbox), and returns its agent. Interrupted work is continued at once unless
   * `interrupted: 'close'`; other queued work waits for the next waking send. Options default to the last
   * request's provider and model.
   * @throws HarnessError `SESSION_QUARANTINED` when the session is quarantined (or this resume finds the same work
   * interrupted `quarantineAfter` times in a row, and quarantines it) and `force` is not set
   */
  resumeAgent(sessionId: string, options?: ResumeOptions): Promise<Agent>
  /**
   * Forks a stored session: a new session seeded with the parent's events up to `at` (inclusive, default the
   * last), which must not end inside a turn. Returns the child's id.
   */
  forkSession(sessionId: string, options?: { at?: number; childId?: string }): Promise<string>
  /**
   * Rewinds a session to the end of turn `toTurn`: the workspace files the built-in tools changed after it get
   * their earlier bytes back (files they created are deleted), and the conversation continues from a fork at
   * that boundary (the session itself gets no new conversation events). A path changed outside the agent is a
   * conflict, left as it is unless `force`. The restore is logged as `checkpoint/restored` in the returned
   * session. Rewinding again to the same turn changes nothing.
   * @example
   * ```ts
   * const { sessionId, restored, conflicts } = await harness.rewind(agent.id, { toTurn: 1 })
   * const again = await harness.resumeAgent(sessionId)
   * ```
   * @throws HarnessError `INVALID_BOUNDARY` when turn `toTurn` did not end in the session, `OPEN_TURN` while
   * this harness's agent of it is running, `INVALID_ARGS` for bad options
   */
  rewind(sessionId: string, options: RewindOptions): Promise<RewindResult>
  /**
   * Disposes every agent (sub-agents before the agents that started them), then flushes and closes the store.
   * Everything is closed even when something fails; then it rejects with the failure (a writer whose last
   * flush failed, so what it held never became durable: `SESSION_WRITE_FAILED`) — with several, one error
   * with the first one's code whose `cause` is an `AggregateError` of them all.
   */
  close(): Promise<void>
}

/**
 * Creates a harness.
 * @example
 * ```ts
 * const harness = createHarness({ adapters: [deepseekAdapter()], tools: builtinTools({ root: '.' }) })
 * const agent = await harness.createAgent({ provider: 'deepseek', model: 'deepseek-v4-pro' })
 * agent.followup('What is in this folder?')
 * await agent.whenIdle()
 * ```
 */
export function createHarness(options: HarnessOptions = {}): Harness {
  const hooks: HookBus<LedgerHooks> = createHookBus<LedgerHooks>(options.onListenerError ? { onListenerError: options.onListenerError } : {})
  const llm = new LlmRegistry(
    (request, terminal) => hooks.waterfall('llm/stream', request, terminal, request.sessionId),
    () => hooks.has('llm/stream'),
  )
  const tools = new ToolRegistry()
  const prompt = new PromptRegistry()
  const store = options.store ?? new MemoryStore()
  const agents = new Set<Agent>()
  const maxParallel = options.maxParallelToolCalls ?? 10
  if (!Number.isSafeInteger(maxParallel) || maxParallel < 1) throw new HarnessError('maxParallelToolCalls must be a positive integer', 'INVALID_CONFIG')
  let closed = false
  // Each live agent's writer, for a rewind that logs into a live session and must see it durable.
  const writers = new WeakMap<Agent, SessionWriter>()
  const liveAgent = (id: string): Agent | undefined => {
    for (const agent of agents) if (agent.id === id) return agent
    return undefined
  }
  // Built-in tools checkpoint what they change into this store, logged in the calling agent's session.
  const checkpoints = storeCheckpointSink(store.checkpointBlobs, (id) => liveAgent(id)?.session)

  for (const adapter of options.adapters ?? []) llm.register(adapter)
  for (const tool of options.tools ?? []) tools.register(tool)
  if (options.system !== undefined) prompt.section('persona', { order: 0, text: options.system })

  const use = (plugin: Plugin<HookRegistrar<LedgerHooks>>): (() => void) => {
    if (typeof plugin?.setup !== 'function') throw new HarnessError('a plugin needs a setup(hooks) function', 'INVALID_PLUGIN')
    const dispose = plugin.setup(hooks)
    let active = true
    return () => {
      if (!active) return
      active = false
      if (typeof dispose === 'function') dispose()
    }
  }
  for (const plugin of options.plugins ?? []) use(plugin)

  const start = (session: Session, agentOptions: AgentOptions, writer: SessionWriter, only?: readonly string[]): Agent => {
    // Bound here rather than at registration: tools may be registered on the registry at any time before.
    for (const name of tools.names()) checkpointSlotOf(tools.get(name))?.bind(checkpoints)
    const allowed = only === undefined ? undefined : new Set(only)
    const depth = session.header.delegationDepth ?? 0
    // Per-agent view: a child sees only its profile's tools, and a tool that starts children (the sub-agent
    // tool) past its depth limit is simply not offered.
    const offered = tools.offering((tool) => (allowed === undefined || allowed.has(tool.name)) && isOfferedAtDepth(tool, depth))
    const agent: Agent = new Agent(session, agentOptions, {
      hooks,
      llm,
      tools: offered,
      prompt,
      writer,
      maxParallelToolCalls: maxParallel,
      // Read lazily: the agent exists by the time one of its tools starts a child.
      delegation: { depth, start: (request) => startChild(agent, request) },
      onDisposed: (a) => agents.delete(a),
      initiatorScope: options.initiatorScope === true,
    })
    wireSessionToWriter(session, writer, hooks, (event) => agent.observe(event))
    writers.set(agent, writer)
    agents.add(agent)
    return agent
  }

  // A child of `parent` for one of its tool calls, set up by the calling tool's declared profile.
  const startChild = async (parent: Agent, request: ChildAgentRequest): Promise<Agent> => {
    checkOpen()
    const setup = delegationOf(tools.get(request.tool))?.profile(request.profile)
    if (setup === undefined) throw new HarnessError(`tool '${request.tool}' defines no sub-agent profile '${request.profile}'`, 'INVALID_CONFIG')
    const unknown = (setup.tools ?? []).filter((name) => tools.get(name) === undefined)
    if (unknown.length > 0) {
      throw new HarnessError(`sub-agent profile '${request.profile}' names tools this harness does not have: ${unknown.join(', ')}`, 'INVALID_CONFIG')
    }
    // The parent's route by default, with its output limit only when the route is the parent's.
    const sameRoute = request.provider === undefined && request.model === undefined
    const checked = checkAgentOptions({
      provider: request.provider ?? parent.options.provider,
      model: request.model ?? parent.options.model,
      ...(sameRoute && parent.options.maxTokens !== undefined ? { maxTokens: parent.options.maxTokens } : {}),
      cwd: parent.options.cwd ?? parent.session.header.cwd ?? process.cwd(),
    })
    const session = new Session({
      header: {
        ...(checked.cwd !== undefined ? { cwd: checked.cwd } : {}),
        parentSession: parent.id,
        parentCallId: request.parentCallId,
        agentProfile: request.profile,
        delegationDepth: (parent.session.header.delegationDepth ?? 0) + 1,
      },
    })
    const writer = await store.create(session.header)
    const child = start(session, checked, writer, setup.tools)
    setup.prepare(child)
    return child
  }

  const checkOpen = (): void => {
    if (closed) throw new HarnessError('the harness is closed', 'HARNESS_CLOSED')
  }

  const harness: Harness = {
    hooks,
    llm,
    tools,
    prompt,
    store,
    use,
    async createAgent(agentOptions) {
      checkOpen()
      const checked = checkAgentOptions(agentOptions)
      const session = new Session({
        ...(checked.sessionId !== undefined ? { id: checked.sessionId } : {}),
        header: { cwd: checked.cwd ?? process.cwd() },
      })
      const writer = await store.create(session.header)
      return start(session, checked, writer)
    },
    async resumeAgent(sessionId, resumeOptions = {}) {
      checkOpen()
      const { interrupted = 'continue', force = false, quarantineAfter = 3, alone = ![...agents].some((a) => a.status === 'running'), ...overrides } = resumeOptions
      if (interrupted !== 'continue' && interrupted !== 'close') throw new HarnessError(`interrupted must be 'continue' or 'close', got ${JSON.stringify(interrupted)}`, 'INVALID_CONFIG')
      if (!Number.isSafeInteger(quarantineAfter) || quarantineAfter < 1) throw new HarnessError(`quarantineAfter must be a positive integer, got ${String(quarantineAfter)}`, 'INVALID_CONFIG')
      const stored = await store.open(sessionId)
      try {
        // The compact log when the store gives one: a long log is adopted without materialising its chunks.
        const log = stored.log ?? eventLogOf(stored.events)
        const repair = repairEventsOfLog(log, stored.header.seedLength ?? 0)
        for (const event of repair) stored.writer.append(event)
        if (repair.length > 0) await stored.writer.flush()
        const session = new Session({ id: sessionId, header: stored.header, log, seed: repair })
        const quarantine = activeQuarantine(session.log)
        if (quarantine !== undefined && !force) throw quarantined(sessionId, quarantine)
        const work = interrupted === 'continue' ? interruptedWork(session.log, { mayRerun: mayRerun(tools), seedLength: stored.header.seedLength ?? 0 }) : undefined
        if (work !== undefined && work.endedBy === 'interrupted' && quarantine === undefined && !force && work.interruptions.length >= quarantineAfter) {
          const reason = quarantineReason(work)
          stored.writer.append(quarantineEvent(session, reason, work))
          await stored.writer.flush()
          throw quarantined(sessionId, reason)
        }
        const last = session.requestHeader()?.config
        const merged = { provider: last?.provider ?? '', model: last?.model ?? '', cwd: stored.header.cwd, ...stripUndefined(overrides), sessionId }
        if (merged.provider === '' || merged.model === '') {
          throw new HarnessError(`session '${sessionId}' has no recorded request yet: pass provider and model to resumeAgent`, 'INVALID_CONFIG')
        }
        // A sub-agent gets its profile back (tools, persona, budget) from a registered tool that defines it.
        const profile = stored.header.parentCallId !== undefined && stored.header.agentProfile !== undefined
          ? findChildProfile(tools.names().map((name) => tools.get(name)), stored.header.agentProfile)
          : undefined
        const agent = start(session, checkAgentOptions(merged), stored.writer, profile?.tools)
        profile?.prepare(agent)
        if (quarantine !== undefined) {
          session.append(QUARANTINE_LIFTED, { reason: quarantine, by: 'force' })
          await stored.writer.flush()
        }
        if (work !== undefined) {
          // Before the continuation's turn/start, so any durable prefix that holds the turn holds the mark too.
          if (alone) session.append(CONTINUED_ALONE, { continues: work.turn }, { ignorable: true })
          agent.continueInterrupted(work)
        }
        return agent
      } catch (error) {
        await stored.writer.close()
        throw error
      }
    },
    async forkSession(sessionId, forkOptions = {}) {
      checkOpen()
      // A store that can copy the prefix's records (a turn boundary it vouches for) writes the same child.
      const copied = await (store as SessionStore).copyPrefix?.(sessionId, forkOptions.at, (point) => forkChild(point, sessionId, forkOptions.childId))
      if (copied !== undefined) return copied
      const parent = await store.read(sessionId)
      const events = parent.events
      const at = forkOptions.at ?? events.length - 1
      if (events.length > 0 && (!Number.isSafeInteger(at) || at < 0 || at >= events.length)) {
        throw new HarnessError(`fork point ${String(at)} is not a seq of session '${sessionId}' (0..${events.length - 1})`, 'INVALID_BOUNDARY')
      }
      const prefix = events.slice(0, at + 1)
      if (endsInsideTurn(prefix)) {
        throw new HarnessError(`cannot fork session '${sessionId}' at seq ${at}: that point is inside an open turn`, 'OPEN_TURN')
      }
      const child = new Session({
        ...(forkOptions.childId !== undefined ? { id: forkOptions.childId } : {}),
        header: {
          ...(parent.header.cwd !== undefined ? { cwd: parent.header.cwd } : {}),
          parentSession: sessionId,
          seedLength: prefix.length,
        },
        seed: prefix,
        endSeed: true,
      })
      const writer = await store.create(child.header, child.events)
      await writer.close()
      return child.id
    },
    async rewind(sessionId, rewindOptions) {
      checkOpen()
      return rewindSession(
        {
          store,
          liveSession: (id) => {
            const agent = liveAgent(id)
            const writer = agent === undefined ? undefined : writers.get(agent)
            return agent === undefined || writer === undefined ? undefined : { session: agent.session, status: agent.status, flush: () => writer.flush() }
          },
          fork: (id, at) => harness.forkSession(id, { at }),
        },
        sessionId,
        rewindOptions,
      )
    },
    async close() {
      if (closed) return
      closed = true
      // Newest first: a sub-agent is disposed (its turn ends aborted {disposed}) before the parent whose tool
      // call is waiting for it, so no parent step runs on after a child was cut off.
      const disposed = await Promise.allSettled([...agents].reverse().map((a) => a.dispose()))
      const failures = disposed.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []))
      try {
        await store.close()
      } catch (error) {
        failures.push(error)
      }
      // A writer that could not close lost what it held: the caller must hear of it (it was swallowed once).
      if (failures.length === 1) throw failures[0]
      if (failures.length > 1) throw closeFailures(failures)
    },
  }
  return harness
}

function quarantined(sessionId: string, reason: string): HarnessError {
  return new HarnessError(
    `session '${sessionId}' is quarantined: ${reason}. Inspect it, then resume with force (\`ledgerloop run --session ${sessionId} --force\`) to try again`,
    'SESSION_QUARANTINED',
  )
}

function quarantineEvent(session: Session, reason: string, work: InterruptedWork): SessionEvent {
  const last = session.at(session.length - 1)
  const event: EventRecord = { type: QUARANTINED, seq: session.length, time: Math.max(Date.now(), last?.time ?? 0), data: { reason, turn: work.turn, interruptions: [...work.interruptions] } }
  return event as SessionEvent
}

/** Whether a call of `name` may run again after a crash (its tool's replay policy). */
function mayRerun(tools: ToolRegistry): (name: string) => boolean {
  return (name) => {
    const replay = tools.get(name)?.replay
    return replay === 'safe' || replay === 'keyed'
  }
}

/** Several close failures as one error: the first one's code and message, all of them as an AggregateError cause. */
function closeFailures(failures: readonly unknown[]): HarnessError {
  const first = failures[0]
  const code = first instanceof HarnessError ? first.code : 'UNKNOWN'
  const message = first instanceof Error ? first.message : String(first)
  return new HarnessError(`${message} (and ${failures.length - 1} more failure(s) while closing)`, code, { cause: new AggregateError(failures, 'harness.close() failures') })
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>
}

function checkAgentOptions(options: Partial<AgentOptions> & { cwd?: string | undefined }): AgentOptions {
  if (typeof options !== 'object' || options === null) throw new HarnessError('agent options must be an object', 'INVALID_CONFIG')
  const { provider, model, maxTokens, sessionId, cwd } = options
  if (typeof provider !== 'string' || provider === '') throw new HarnessError('agent options need a provider (e.g. "deepseek")', 'INVALID_CONFIG')
  if (typeof model !== 'string' || model === '') throw new HarnessError('agent options need a model', 'INVALID_CONFIG')
  if (maxTokens !== undefined && (!Number.isSafeInteger(maxTokens) || maxTokens <= 0)) {
    throw new HarnessError(`maxTokens must be a positive integer, got ${String(maxTokens)}`, 'INVALID_CONFIG')
  }
  return {
    provider,
    model,
    ...(maxTokens !== undefined ? { maxTokens } : {}),
    ...(sessionId !== undefined ? { sessionId } : {}),
    ...(cwd !== undefined ? { cwd } : {}),
  }
}

export type { SessionHeader }
export type { RewindConflict, RewindOptions, RewindResult } from './rewind.js'
export { SESSION_FORMAT_VERSION }
