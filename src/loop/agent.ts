// The agent loop (driver, turn, step, request attempt, read top to bottom); requests go through `llm.pump`.
import { HarnessError } from '../errors/harness-error.js'
import type { HookBus, ScopedHooks } from '../hooks/hook-bus.js'
import { snapshotJson } from '../json/lossless.js'
import { BlockAssembler } from '../llm/block-assembler.js'
import { LlmError } from '../llm/llm-error.js'
import { frozenChunkCopy, takeTextDelta } from '../llm/freeze-chunk.js'
import { draftAssistantMessage, toUserMessage } from '../llm/messages.js'
import type { LlmRegistry, PreparedCall } from '../llm/registry.js'
import type { GenerateOptions, LlmCallConfig, Message, ToolCallBlock, ToolSchema, UserMessage } from '../llm/types.js'
import type { CancelCause, SessionEvent, TurnEndReason } from '../session/events.js'
import { interruptedTurnClosers, type CloserEvent } from '../session/repair.js'
import { canonicalHeader, headerEquals, requestProposal } from '../session/request-header.js'
import type { Session } from '../session/session.js'
import type { ToolRegistry } from '../tools/tool-registry.js'
import type { SessionWriter } from '../session/session-writer.js'
import type { LedgerHooks, PreStepDecision } from './hook-types.js'
import { Inbox, type InboxTarget } from './inbox.js'
import { runWithInitiator } from './initiator.js'
import { joinContextSections, PromptRegistry, PromptRenderCache, type PromptAssembly } from './prompt.js'
import { RuntimeContextProjection } from './runtime-context.js'
import { executeToolCalls } from './tool-calls.js'
import { cancelCauseOf, failureOf, flushFailure } from './turn-failure.js'

/** Options of an agent (`harness.createAgent`). */
export interface AgentOptions {
  /** Adapter route, e.g. `deepseek`. */
  readonly provider: string
  /** Model name passed to the adapter. */
  readonly model: string
  /** Output token limit for every request (default: the model's). */
  readonly maxTokens?: number
  /** Session id (default: a random UUID). */
  readonly sessionId?: string
  /** Working directory (the `{{cwd}}` prompt variable; default `process.cwd()`). */
  readonly cwd?: string
}

/** What an agent needs from its harness. */
export interface AgentRuntime {
  readonly hooks: HookBus<LedgerHooks>
  readonly llm: LlmRegistry
  readonly tools: ToolRegistry
  readonly prompt: PromptRegistry
  readonly writer: SessionWriter
  readonly maxParallelToolCalls: number
  /** Called once the agent is disposed. */
  readonly onDisposed?: (agent: Agent) => void
  /** Run each driver activity inside an AsyncLocalStorage frame (`currentInitiator()`). */
  readonly initiatorScope?: boolean
}

/** Per-agent seams (`agent.ctx`): hooks and prompt parts that apply to this agent only. */
export interface AgentContext {
  readonly hooks: ScopedHooks<LedgerHooks>
  readonly prompt: PromptRegistry
}

type Phase =
  | { readonly kind: 'idle'; readonly lastTurn: number }
  | {
      kind: 'running'
      abort: AbortController
      turn: number
      step: number
      /** A waking send the driver will not see by itself: wake again once idle. */
      wakeRequested: boolean
      /** The driver has decided to stop (it reads the inbox no more): a waking send must wake it again. */
      stopping: boolean
    }

type StepEnd = { readonly kind: 'completed' } | { readonly kind: 'max-tokens' } | null

interface EnteredStep {
  readonly kind: 'enter'
  readonly messages: readonly UserMessage[]
  readonly system: string
  readonly tools: readonly ToolSchema[]
}

/**
 * An agent: a session log plus the loop that drives it (the seed's Turn/Step/Loop state machine). Read top to
 * bottom: send → wake → kick → turn → preStep → step → buildRequest.
 */
export class Agent {
  /** Agent id (= session id). */
  readonly id: string
  /** The session log. */
  readonly session: Session
  /** The inbox (projected from the log). */
  readonly inbox: Inbox
  /** Hooks and prompt parts scoped to this agent. */
  readonly ctx: AgentContext
  /** The options it was created with. */
  readonly options: AgentOptions
  readonly #rt: AgentRuntime
  readonly #runtimeContext: RuntimeContextProjection
  #phase: Phase
  #activity: Promise<void> = Promise.resolve()
  #headerLogged = false
  /** Renders the prompt for each step, reusing the last rendering while a text-only prompt is unchanged. */
  readonly #prompts = new PromptRenderCache()
  #disposed: Promise<void> | undefined

  /** @internal Built by the harness (`createAgent` / `resumeAgent`). */
  constructor(session: Session, options: AgentOptions, runtime: AgentRuntime) {
    this.id = session.id
    this.session = session
    this.options = options
    this.#rt = runtime
    const hooks = runtime.hooks
    this.inbox = new Inbox(session, {
      inserted: (message) => hooks.emit('agent/inbox/inserted', { agent: this, message }, this.id),
      discarded: (message) => hooks.emit('agent/inbox/discarded', { agent: this, message }, this.id),
      claimed: (message, turn) => hooks.emit('agent/inbox/claimed', { agent: this, message, turn }, this.id),
    })
    this.ctx = { hooks: hooks.scoped(this.id), prompt: new PromptRegistry() }
    this.#runtimeContext = new RuntimeContextProjection(session)
    this.#phase = { kind: 'idle', lastTurn: session.lastTurn }
  }

  /**
   * The adapter registry this agent's requests go through: for plugins that call the model directly beside the
   * loop (compaction's summary call), so they reach the same adapters and `llm/stream` listeners.
   */
  get llm(): LlmRegistry {
    return this.#rt.llm
  }

  /** `running` while the driver works, else `idle`. */
  get status(): 'idle' | 'running' {
    return this.#phase.kind === 'running' ? 'running' : 'idle'
  }

  /** Queues input for a new turn and wakes the driver. */
  followup(input: string | UserMessage): void {
    this.#send(toUserMessage(input), 'next-turn', true)
  }

  /** Queues input for the next step (of the running turn, or a new one) and wakes the driver. */
  steer(input: string | UserMessage): void {
    this.#send(toUserMessage(input), 'next-step', true)
  }

  /** Queues input for the next step without waking the driver. */
  inject(input: string | UserMessage): void {
    this.#send(toUserMessage(input), 'next-step', false)
  }

  /**
   * Starts the queued next-turn input that no waking send will start: what a resumed session still holds in
   * its log (a worker calls it after a takeover). No-op when disposed or with nothing queued for a new turn.
   * While running it starts nothing itself: a live driver takes the input, one that has already decided to stop
   * is woken again once idle, a cancelled one is not.
   */
  wake(): void {
    if (this.#disposed !== undefined || this.inbox.nextTurn.length === 0) return
    this.#wake()
  }

  /**
   * Cancels the running turn (it ends `aborted` with the first cause) and, unless `keepInbox`, durably clears
   * queued input — even when idle. When the store refuses the clearing splice, the turn is still cancelled and
   * the store's error is thrown (the input stays queued).
   */
  cancel(cause: CancelCause = { kind: 'user' }, options: { keepInbox?: boolean } = {}): void {
    const phase = this.#phase
    if (options.keepInbox === true) {
      if (phase.kind === 'running') phase.abort.abort(cause)
      return
    }
    if (phase.kind === 'running') phase.wakeRequested = false
    try {
      this.inbox.clear()
    } finally {
      // The turn stops even when the inbox could not be cleared (the store refused the splice): that failure
      // propagates to the caller, the queued input stays.
      if (phase.kind === 'running') phase.abort.abort(cause)
    }
  }

  /** Resolves when the driver is idle (never rejects for turn errors: they are in the log). */
  async whenIdle(): Promise<void> {
    for (;;) {
      const current = this.#activity
      await current
      if (current === this.#activity) return
    }
  }

  /**
   * Cancels with `{kind:'disposed'}`, waits for the driver, flushes and releases the session. Queued input is
   * kept in the log (unlike a user cancel), so a later `resumeAgent` still has it: a clean shutdown loses no
   * more than a crash does. Rejects when the writer cannot close (its last flush failed), disposed all the same.
   */
  dispose(): Promise<void> {
    this.#disposed ??= (async () => {
      this.cancel({ kind: 'disposed' }, { keepInbox: true })
      await this.whenIdle()
      this.ctx.hooks.dispose()
      await this.#rt.writer.close().finally(() => this.#rt.onDisposed?.(this))
    })()
    return this.#disposed
  }

  /** @internal Follows this agent's own log (runtime-context retention). */
  observe(event: SessionEvent): void {
    this.#runtimeContext.observe(event)
  }

  #send(message: UserMessage, target: InboxTarget, wakeup: boolean): void {
    if (this.#disposed !== undefined) throw new HarnessError(`agent '${this.id}' is disposed`, 'AGENT_DISPOSED')
    // Steering sent into a dying turn becomes its own turn (decided before inserting, §2.5).
    const wakingAfterAbort = wakeup && this.#phase.kind === 'running' && this.#phase.abort.signal.aborted
    this.inbox.append(wakingAfterAbort ? 'next-turn' : target, message)
    if (wakeup) this.#wake(wakingAfterAbort)
  }

  #wake(afterAbort = false): void {
    const phase = this.#phase
    if (phase.kind === 'running') {
      // A live driver sees new work itself; only a dying one, or one that has decided to stop, must be told to
      // come back.
      const signal = phase.abort.signal
      const reason = signal.reason as CancelCause | undefined
      if (signal.aborted ? afterAbort && reason?.kind !== 'disposed' : phase.stopping) phase.wakeRequested = true
      return
    }
    this.#setPhase({ kind: 'running', abort: new AbortController(), turn: phase.lastTurn, step: 0, wakeRequested: false, stopping: false })
    // The initiator scope is opt-in: on Node 20 an AsyncLocalStorage frame makes every promise in the process
    // pay for async hooks (measured: ~25% of a short step).
    this.#activity = this.#rt.initiatorScope === true ? runWithInitiator(this, () => this.#kick()) : this.#kick()
  }

  async #kick(): Promise<void> {
    try {
      while (await this.#turn()) {
        /* each iteration is one turn */
      }
    } catch {
      // Already reported through agent/error and recorded in turn/end, or a cancellation.
    } finally {
      const phase = this.#phase
      if (phase.kind === 'running') {
        this.#setPhase({ kind: 'idle', lastTurn: phase.turn })
        // Never after dispose: its cancel may find the turn already aborted (a user cancel, then a followup).
        if (phase.wakeRequested && this.#disposed === undefined && this.inbox.hasPending) this.#wake()
      }
    }
  }

  async #turn(): Promise<boolean> {
    const phase = this.#running()
    const signal = phase.abort.signal
    signal.throwIfAborted()
    const turn = phase.turn + 1
    // A turn whose closers could not be written (the store failed) is still open in memory: close it as crash
    // repair would before anything new is written, or stop here with the failure reported.
    if (!this.#closeStaleTurn(turn)) return this.#stop(phase)
    try {
      this.#append('turn/start', Object.freeze({ turn }))
    } catch (error) {
      this.#report(error, turn, 0)
      return this.#stop(phase)
    }
    phase.turn = turn
    const turnStartSeq = this.session.length - 1
    let turnEnds: TurnEndReason | StepEnd = null
    let target: InboxTarget = 'next-turn'
    let durable = true
    try {
      for (;;) {
        signal.throwIfAborted()
        const step = phase.step + 1
        const decision = await this.#preStep(target, turn, step, signal)
        if (decision.kind === 'reject') {
          turnEnds = { kind: 'blocked' }
          return this.#stop(phase)
        }
        // A turn that already has its outcome does not open an extra step for an emptied batch.
        if (turnEnds !== null && decision.messages.length === 0) break
        if (phase.step === 0 && decision.messages.length === 0) {
          turnEnds = { kind: 'completed' }
          return this.#stop(phase)
        }
        signal.throwIfAborted()
        this.#append('step/start', Object.freeze({ turn, step }))
        phase.step = step
        for (const m of decision.messages) this.#append('user/message', m, 'append')
        const stepEnd = await this.#step(decision, turn, step, signal)
        // On a throw the step stays open here: the turn's closers answer its open tool calls first, then end it.
        this.#append('step/end', Object.freeze({ turn, step }))
        // max-tokens is sticky for the rest of the turn (§4.3).
        if (turnEnds?.kind !== 'max-tokens') turnEnds = stepEnd
        signal.throwIfAborted()
        if (turnEnds !== null && this.inbox.nextStep.length === 0) {
          await this.#rt.hooks.serial('agent/turn-stopping', { agent: this, turn, signal }, this.id)
          signal.throwIfAborted()
        }
        if (turnEnds !== null && this.inbox.nextStep.length === 0) break
        target = 'next-step'
      }
    } catch (error) {
      this.#stop(phase)
      if (signal.aborted) {
        turnEnds = { kind: 'aborted', reason: cancelCauseOf(signal.reason) }
      } else {
        turnEnds = { kind: 'error', error: failureOf(error) }
        this.#report(error, turn, phase.step)
      }
      throw error
    } finally {
      this.#closeTurn(turnStartSeq, turnEnds ?? { kind: 'completed' }, turn, phase.step)
      durable = await this.#flushTurnEnd(turn, phase.step)
    }
    // A cancel that landed during the flush ends this activity too: a `keepInbox` one (dispose, a budget) must not
    // be dropped with the controller below.
    if (!durable || signal.aborted || !this.inbox.hasPending) return this.#stop(phase)
    // More queued work: a fresh activity segment (a latch on the old controller goes stale on purpose).
    phase.abort = new AbortController()
    phase.wakeRequested = false
    phase.step = 0
    return true
  }

  /**
   * Marks the driver as stopping and returns false (for `#turn`): from here on it reads the inbox no more, so a
   * waking send must request a new activity (see {@link #wake}) or it would sit queued with the agent idle.
   */
  #stop(phase: Extract<Phase, { kind: 'running' }>): false {
    phase.stopping = true
    return false
  }

  /**
   * Ends the turn with exactly one `turn/end`: whatever is still open (tool calls without a result, the step)
   * is closed first by the crash-repair closers, with this turn's reason. A closer a guard refuses is reported
   * and committed anyway, because a turn left open would refuse every later turn; one the store refuses twice
   * leaves the turn open in memory for {@link closeStaleTurn} to close before the next turn.
   */
  #closeTurn(turnStartSeq: number, reason: TurnEndReason, turn: number, step: number): void {
    for (const closer of this.#closersFrom(turnStartSeq, reason)) if (!this.#writeCloser(closer, turn, step)) return
  }

  /** One closer, through the guards first; over a veto, unguarded; a store that failed once gets one more try. */
  #writeCloser(closer: CloserEvent, turn: number, step: number): boolean {
    try {
      this.#appendClosing(closer, true, true)
      return true
    } catch (refused) {
      this.#report(refused, turn, step)
    }
    for (let attempt = 1; ; attempt++) {
      try {
        this.#appendClosing(closer, false, true)
        return true
      } catch (failed) {
        this.#report(failed, turn, step)
        if (attempt === 2) return false
      }
    }
  }

  /** Closes a turn left open in memory by a failed close; false (reported) when even that cannot be written. */
  #closeStaleTurn(turn: number): boolean {
    if (this.session.openTurn === undefined) return true
    let start = this.session.length - 1
    while (start > 0 && this.session.typeAt(start) !== 'turn/start') start--
    try {
      for (const closer of this.#closersFrom(start, { kind: 'interrupted' })) this.#appendClosing(closer, false)
      return true
    } catch (error) {
      this.#report(error, turn, 0)
      return false
    }
  }

  /** The closers of the turn that starts at `turnStartSeq` (O(that turn's events); chunks stay compact: closers ignore them). */
  #closersFrom(turnStartSeq: number, reason: TurnEndReason): CloserEvent[] {
    return interruptedTurnClosers(this.session.log.eventsWithoutChunks(turnStartSeq), { reason })
  }

  #appendClosing(closer: CloserEvent, guarded: boolean, provisional = false): void {
    // The turn's own end is provisional until its flush settles (#flushTurnEnd): listeners hear only a durable one.
    if (provisional && closer.type === 'turn/end') return void this.session.appendTurnEnd(closer.data as { turn: number; reason: TurnEndReason }, guarded)
    const options =
      closer.surfaceOp === undefined ? undefined : { surfaceOp: closer.surfaceOp, ...(closer.sourceEventSeqs !== undefined ? { sourceEventSeqs: closer.sourceEventSeqs } : {}) }
    if (guarded) this.session.append(closer.type, closer.data, options)
    else this.session.appendCloser(closer.type, closer.data, options)
  }

  /** Flushes at turn end (a failure is reported), then settles the provisional turn/end (docs/stores.md, "When a write fails"). */
  async #flushTurnEnd(turn: number, step: number): Promise<boolean> {
    const failure = await flushFailure(this.#rt.writer)
    if (failure !== undefined) this.#report(failure, turn, step)
    this.session.settleTurnEnd(failure)
    return failure === undefined
  }

  async #preStep(target: InboxTarget, turn: number, step: number, signal: AbortSignal): Promise<{ kind: 'reject' } | EnteredStep> {
    const claimed = this.inbox.claim(target, turn)
    const assembly = this.#assemble(signal)
    const tools = this.#rt.tools.schemas()
    const context = this.#runtimeContext.project(joinContextSections(assembly.contexts), assembly.contexts)
    const decision: PreStepDecision = await this.#rt.hooks.waterfall(
      'agent/pre-step',
      { agent: this, messages: claimed, turn, step, signal },
      // The snapshot is added only by the default: a listener that answers itself drops it for this step.
      () => ({ kind: 'enter', messages: context !== undefined ? [...claimed, context] : claimed }),
      this.id,
    )
    signal.throwIfAborted()
    if (decision?.kind === 'reject') return { kind: 'reject' }
    if (decision?.kind !== 'enter' || !Array.isArray(decision.messages)) {
      throw new HarnessError(`agent/pre-step returned ${JSON.stringify(decision)}; expected {kind:'reject'} or {kind:'enter', messages}`, 'INVALID_DECISION')
    }
    return { kind: 'enter', messages: decision.messages, system: assembly.system, tools }
  }

  #assemble(signal: AbortSignal): PromptAssembly {
    const builtins = { cwd: this.options.cwd ?? process.cwd(), provider: this.options.provider, model: this.options.model }
    return this.#prompts.assemble([this.#rt.prompt, this.ctx.prompt], { agent: this, signal }, builtins)
  }

  async #step(entered: EnteredStep, turn: number, step: number, signal: AbortSignal): Promise<StepEnd> {
    for (let attempt = 1; ; attempt++) {
      const messages = this.session.deriveMessagesFrozen()
      const { request, prepared } = await this.#buildRequest(turn, step, entered, messages, signal)
      const assembler = new BlockAssembler()
      const chunkSeqs: number[] = []
      try {
        // Text deltas, most of a stream, go in as their parts: no chunk object, no copy.
        const onText = (type: 'text-delta' | 'reasoning-delta', index: number, text: string): void => {
          chunkSeqs.push(this.session.appendText(turn, step, type, index, text))
          assembler.pushText(type, index, text)
        }
        await this.#rt.llm.pump(request, prepared, (streamed) => {
          signal.throwIfAborted()
          if (takeTextDelta(streamed, onText)) return
          // The log and the assembler share one frozen chunk (a copy when the adapter yields unfrozen objects);
          // one that is not lossless JSON goes to the log as is, which refuses it with the reason.
          const copy = frozenChunkCopy(streamed)
          const chunk = copy ?? streamed
          // Kept compact in the log: no event object unless a listener or the store asks for one.
          chunkSeqs.push(this.session.appendChunk(turn, step, chunk, copy !== undefined))
          assembler.push(chunk)
        })
        signal.throwIfAborted()
      } catch (error) {
        if (signal.aborted) this.#appendInterrupted(assembler, request, chunkSeqs, turn, step)
        throw error
      }
      const finish = assembler.finish
      if (finish.kind === 'error' || finish.kind === 'aborted') {
        const action = await this.#rt.hooks.waterfall(
          'agent/request-error',
          { agent: this, turn, step, provider: request.provider, failure: finish.failure, retryPolicy: prepared?.retryPolicy, attempt, signal },
          () => undefined,
          this.id,
        )
        signal.throwIfAborted() // cancel wins over a returned retry
        if (action?.kind === 'retry') continue
        throw new LlmError(finish.failure)
      }
      const content = assembler.blocks()
      const source = { kind: 'model' as const, provider: request.provider, model: request.model }
      const replayState = assembler.replayState()
      const message = draftAssistantMessage(content, replayState !== undefined ? { ...source, replayState } : source)
      const usage = assembler.usage
      // Built frozen, so the log adopts it after a walk instead of copying it (anything unfrozen inside, such as
      // a pruned replay state, still takes the copy).
      const data = usage !== undefined ? { turn, step, message, usage } : { turn, step, message }
      this.#append('assistant/message', Object.freeze(data), 'append', Object.freeze(chunkSeqs))
      if (finish.kind === 'max-tokens') return { kind: 'max-tokens' } // truncated tool calls were dropped: never run them
      const calls = content.filter((b): b is ToolCallBlock => b.type === 'tool-call')
      if (calls.length === 0) return { kind: 'completed' }
      const concluded = await executeToolCalls(
        {
          agent: this,
          session: this.session,
          hooks: this.#rt.hooks,
          tools: this.#rt.tools,
          turn,
          step,
          signal,
          maxParallel: this.#rt.maxParallelToolCalls,
          flush: () => this.#rt.writer.flush(),
          acceptContext: (m) => this.inbox.append('next-step', m),
        },
        calls,
      )
      return concluded ? { kind: 'completed' } : null
    }
  }

  #appendInterrupted(assembler: BlockAssembler, request: GenerateOptions, chunkSeqs: number[], turn: number, step: number): void {
    const content = assembler.interruptedBlocks()
    if (content.length === 0) return
    const message = draftAssistantMessage(content, { kind: 'model', provider: request.provider, model: request.model })
    const usage = assembler.usage
    const data = usage !== undefined ? { turn, step, message, interrupted: true, usage } : { turn, step, message, interrupted: true }
    this.#append('assistant/message', Object.freeze(data), 'append', Object.freeze(chunkSeqs))
  }

  async #buildRequest(
    turn: number,
    step: number,
    entered: EnteredStep,
    messages: readonly Message[],
    signal: AbortSignal,
  ): Promise<{ request: GenerateOptions; prepared: PreparedCall | undefined }> {
    const persisted = this.session.requestHeader()
    // A shallow freeze is deep here: the logged header's parts (its `stop` array) are frozen, and the initial
    // proposal holds primitives only.
    const seed = Object.freeze(this.#headerLogged && persisted !== undefined ? requestProposal(persisted) : this.#initialProposal(persisted))
    const proposed = await this.#rt.hooks.waterfall('agent/request', { agent: this, turn, step, signal }, () => seed, this.id)
    signal.throwIfAborted()
    if (typeof proposed?.provider !== 'string' || proposed.provider === '' || typeof proposed.model !== 'string' || proposed.model === '') {
      throw new HarnessError('agent/request produced a config without provider or model', 'INVALID_CONFIG')
    }
    let prepared: PreparedCall | undefined
    let config: LlmCallConfig
    try {
      prepared = await this.#rt.llm.prepareCall(proposed, signal)
      config = prepared.config
    } catch (error) {
      // NO_ADAPTER only: an llm/stream listener may still serve this route; if none does, it fails in-band.
      if (!(error instanceof LlmError && error.code === 'NO_ADAPTER')) throw error
      config = snapshotJson(proposed, 'request config') as unknown as LlmCallConfig
    }
    signal.throwIfAborted()
    const header = canonicalHeader({ config, adapterDefaults: prepared?.adapterDefaults, system: entered.system, tools: entered.tools })
    if (!this.#headerLogged) {
      this.#append('request/header', { header, reason: persisted === undefined ? 'initial' : 'resume' })
      this.#headerLogged = true
    } else if (!headerEquals(header, persisted)) {
      this.#append('request/header', { header, reason: 'change' })
    }
    const window = prepared?.context?.contextWindow
    const last = this.session.requestContext()
    if (last === undefined || last.provider !== config.provider || last.model !== config.model || last.contextWindow !== window) {
      this.#append('request/context', { provider: config.provider, model: config.model, ...(window !== undefined ? { contextWindow: window } : {}) })
    }
    // Built from the logged header, so the request is exactly what a fold of the log yields.
    const logged = this.session.requestHeader() ?? header
    // Every part is already frozen (the shared history view and the logged header), so a shallow freeze
    // makes the request deep-frozen without walking it.
    const request: GenerateOptions = Object.freeze({
      ...logged.config,
      messages,
      ...(logged.system !== undefined ? { system: logged.system } : {}),
      ...(logged.tools !== undefined ? { tools: logged.tools } : {}),
      sessionId: this.session.id,
      signal,
      origin: 'loop', // how `llm/stream` listeners (the invariant plugin) tell a request rebuildable from the log
    })
    return { request, prepared }
  }

  /** First request of this loop instance: options first; an explicit effort survives only on the same route. */
  #initialProposal(persisted: ReturnType<Session['requestHeader']>): LlmCallConfig {
    const { provider, model, maxTokens } = this.options
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

  #append(type: string, data: unknown, surfaceOp?: 'append', sourceEventSeqs?: readonly number[]): SessionEvent {
    if (surfaceOp === undefined) return this.session.append(type, data)
    return this.session.append(type, data, sourceEventSeqs !== undefined ? { surfaceOp, sourceEventSeqs } : { surfaceOp })
  }

  #running(): Extract<Phase, { kind: 'running' }> {
    if (this.#phase.kind !== 'running') throw new HarnessError('the driver is not running', 'INVALID_STATE')
    return this.#phase
  }

  #setPhase(next: Phase): void {
    const changed = (next.kind === 'running') !== (this.#phase.kind === 'running')
    this.#phase = next
    if (changed) this.#rt.hooks.emit('agent/status', { agent: this, status: this.status }, this.id)
  }

  #report(error: unknown, turn: number, step: number): void {
    this.#rt.hooks.emit('agent/error', { agent: this, turn, step, error }, this.id)
  }
}
