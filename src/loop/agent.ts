// The Agent: the public face of one session's loop. The loop itself is the seed's four layers (§1), one file each,
// read in order: driver.ts (driver activity) → turn.ts (turn) → step.ts (step) → attempt.ts (request attempt).
// The Agent builds their LoopContext once, takes input into the inbox, and hands everything else to the driver.
import { HarnessError } from '../errors/harness-error.js'
import type { HookBus, ScopedHooks } from '../hooks/hook-bus.js'
import { toUserMessage } from '../llm/messages.js'
import type { LlmRegistry } from '../llm/registry.js'
import type { UserMessage } from '../llm/types.js'
import type { InterruptedWork } from '../session/continuation.js'
import type { CancelCause, SessionEvent } from '../session/events.js'
import type { Session } from '../session/session.js'
import type { SessionWriter } from '../session/session-writer.js'
import type { ToolRegistry } from '../tools/tool-registry.js'
import type { ToolDelegation } from '../tools/types.js'
import type { PricingCatalogue } from '../views/cost.js'
import type { TurnStreamPart } from '../views/turn-parts.js'
import type { TurnResult } from '../views/turn-result.js'
import { Driver } from './driver.js'
import type { AgentHandle, LoopHooks } from './hook-table.js'
import { Inbox, type InboxTarget } from './inbox.js'
import type { AgentOptions, LoopContext } from './loop-context.js'
import { PromptRegistry, PromptRenderCache } from './prompt.js'
import { RuntimeContextProjection } from './runtime-context.js'
import { PartStream, TurnRun, type RunHost, type RunOptions, type TurnStream } from './run.js'
import type { OutputOf, OutputSchema } from './structured-output.js'

export type { AgentOptions } from './loop-context.js'
export type { RunOptions, TurnStream } from './run.js'
export type { OutputOf, OutputSchema } from './structured-output.js'

/** What an agent needs from its harness. */
export interface AgentRuntime {
  readonly hooks: HookBus<LoopHooks<Agent>>
  readonly llm: LlmRegistry
  readonly tools: ToolRegistry
  readonly prompt: PromptRegistry
  readonly writer: SessionWriter
  readonly maxParallelToolCalls: number
  /** How this agent's tools start child agents (what `ToolContext.delegation` carries). */
  readonly delegation?: ToolDelegation
  /** Called once the agent is disposed. */
  readonly onDisposed?: (agent: Agent) => void
  /** Run each driver activity inside an AsyncLocalStorage frame (`currentInitiator()`). */
  readonly initiatorScope?: boolean
}

/** Per-agent seams (`agent.ctx`): hooks and prompt parts that apply to this agent only. */
export interface AgentContext {
  readonly hooks: ScopedHooks<LoopHooks<Agent>>
  readonly prompt: PromptRegistry
}

/**
 * An agent: a session log plus the loop that drives it (the seed's Turn/Step/Loop state machine). Input goes
 * into the inbox (`followup`, `steer`, `inject`); the driver (driver.ts) runs the turns.
 */
export class Agent implements AgentHandle {
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
  readonly #runtime: AgentRuntime
  readonly #loop: LoopContext
  readonly #driver: Driver
  /** Runs still waiting for their turn's end (`run`, `stream`). */
  readonly #runs = new Set<TurnRun>()
  #runHost: RunHost | undefined
  /** Each model's published prices, from the adapter that serves its route (`ModelInfo.pricing`). */
  readonly #pricing: PricingCatalogue = (provider, model) => this.#runtime.llm.adapter(provider)?.resolveModel?.(model)?.pricing
  #disposed: Promise<void> | undefined

  /** @internal Built by the harness (`createAgent` / `resumeAgent`). */
  constructor(session: Session, options: AgentOptions, runtime: AgentRuntime) {
    this.id = session.id
    this.session = session
    this.options = options
    this.#runtime = runtime
    const hooks = runtime.hooks
    this.inbox = new Inbox(session, {
      inserted: (message) => hooks.emit('agent/inbox/inserted', { agent: this, message }, this.id),
      discarded: (message) => hooks.emit('agent/inbox/discarded', { agent: this, message }, this.id),
      claimed: (message, turn) => hooks.emit('agent/inbox/claimed', { agent: this, message, turn }, this.id),
    })
    this.ctx = { hooks: hooks.scoped(this.id), prompt: new PromptRegistry() }
    this.#loop = {
      agent: this,
      session,
      inbox: this.inbox,
      options,
      hooks,
      llm: runtime.llm,
      tools: runtime.tools,
      writer: runtime.writer,
      maxParallelToolCalls: runtime.maxParallelToolCalls,
      delegation: runtime.delegation,
      promptLayers: Object.freeze([runtime.prompt, this.ctx.prompt]),
      prompts: new PromptRenderCache(),
      runtimeContext: new RuntimeContextProjection(session),
      headerLogged: false,
    }
    this.#driver = new Driver(this.#loop, { disposed: () => this.#disposed !== undefined, initiatorScope: runtime.initiatorScope === true })
  }

  /**
   * The adapter registry this agent's requests go through: for plugins that call the model directly beside the
   * loop (compaction's summary call), so they reach the same adapters and `llm/stream` listeners.
   */
  get llm(): LlmRegistry {
    return this.#runtime.llm
  }

  /** `running` while the driver works, else `idle`. */
  get status(): 'idle' | 'running' {
    return this.#driver.status
  }

  /**
   * @internal Starts the continuation of work a crash interrupted (`resumeAgent` calls it once repair is
   * durable): a turn whose `turn/start` carries `continues`, started at once like a woken followup.
   */
  continueInterrupted(work: InterruptedWork): void {
    if (this.#disposed !== undefined) return
    this.#driver.wake(false, work)
  }

  /**
   * Queues input for a new turn and wakes the driver. With a submission `key` already in the session's log the
   * input is ignored and `false` returned: a client that retries after a timeout never sends a prompt twice.
   */
  followup(input: string | UserMessage, options: SendOptions = {}): boolean {
    return this.#send(toUserMessage(input), 'next-turn', true, options.key)
  }

  /**
   * Queues `input` as a followup and resolves with the result of the turn that takes it (not merely the next
   * idle): a run sent while another turn runs waits behind it, as a followup does. The result is folded from
   * the committed log, from that turn's `turn/start` through its durable `turn/end` (`turnResult`).
   *
   * It never rejects for how the turn ended — `error`, `blocked`, `aborted`, `max-tokens` are in `reason` (an
   * error's code and message also in `failure`). It rejects only when no turn will take the input: the agent is
   * disposed (`AGENT_DISPOSED`; input still queued then stays in the log for a resume), a cancel clears the
   * inbox first (`INPUT_DISCARDED`), the session refuses appends (`session.writeFailure`), the input cannot be
   * queued (a duplicate message id), `options.signal` was already aborted (its reason), or `options.output` is
   * not a usable schema (`INVALID_CONFIG`). With `options.key` already in the log, nothing is queued and the run
   * resolves with the turn that took the first input sent with it.
   *
   * With `output` (a zod schema or a JSON Schema) the turn's final answer must be one JSON value valid under it:
   * `result.output` is that value, parsed (typed from a zod schema); an invalid answer gets repair steps
   * (`outputRepairs`, default 2), then the turn ends `error` with `OUTPUT_INVALID` and the issues in its message.
   * @example
   * ```ts
   * const result = await agent.run('What does this project do?')
   * if (result.reason.kind === 'completed') console.log(result.text)
   * else console.error(`turn ${result.turn} ended ${result.reason.kind}`, result.failure?.message ?? '')
   *
   * const { output } = await agent.run('Rate README.md', { output: z.object({ score: z.number(), why: z.string() }) })
   * if (output !== undefined) console.log(output.score) // typed: { score: number; why: string }
   * ```
   */
  run<S extends OutputSchema>(input: string | UserMessage, options: RunOptions & { readonly output: S }): Promise<TurnResult<OutputOf<S>>>
  run(input: string | UserMessage, options?: RunOptions): Promise<TurnResult>
  run(input: string | UserMessage, options: RunOptions = {}): Promise<TurnResult> {
    return this.#startRun(input, options).result
  }

  /**
   * As {@link run}, streamed: the parts of the turn that takes `input` (`step-start`, `text-delta`,
   * `reasoning-delta`, `tool-call`, `tool-result`, `step-end`, then `turn-end` with the result), each yielded
   * only once its event is committed and published, plus `.result`. Leaving the loop early does not cancel the
   * turn (`options.signal` does); a run that rejects makes the loop throw the same error.
   * @example
   * ```ts
   * const turn = agent.stream('Summarise README.md')
   * for await (const part of turn) if (part.type === 'text-delta') process.stdout.write(part.text)
   * const { reason, usage } = await turn.result
   * ```
   */
  stream<S extends OutputSchema>(input: string | UserMessage, options: RunOptions & { readonly output: S }): TurnStream<OutputOf<S>>
  stream(input: string | UserMessage, options?: RunOptions): TurnStream
  stream(input: string | UserMessage, options: RunOptions = {}): TurnStream {
    return new PartStream((push) => this.#startRun(input, options, push))
  }

  /** Queues input for the next step (of the running turn, or a new one) and wakes the driver; `key` as for {@link followup}. */
  steer(input: string | UserMessage, options: SendOptions = {}): boolean {
    return this.#send(toUserMessage(input), 'next-step', true, options.key)
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
    this.#driver.wake()
  }

  /**
   * Cancels the running turn (it ends `aborted` with the first cause) and, unless `keepInbox`, durably clears
   * queued input — even when idle. When the store refuses the clearing splice, the turn is still cancelled and
   * the store's error is thrown (the input stays queued).
   */
  cancel(cause: CancelCause = { kind: 'user' }, options: { keepInbox?: boolean } = {}): void {
    this.#driver.cancel(cause, options.keepInbox !== true)
  }

  /**
   * Resolves once everything this agent has logged so far is durable (for the file stores: written and
   * fsynced), such as input just queued with {@link followup} or {@link steer}: a server that answers "accepted"
   * only after it cannot lose the input to a crash. Rejects with the store's error when that flush fails.
   */
  flush(): Promise<void> {
    return this.#runtime.writer.flush()
  }

  /** Resolves when the driver is idle (never rejects for turn errors: they are in the log). */
  whenIdle(): Promise<void> {
    return this.#driver.whenIdle()
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
      // A run whose turn was running has its result (that turn ended aborted {disposed}); the rest never will.
      for (const run of [...this.#runs]) {
        run.abandon(new HarnessError(`agent '${this.id}' was disposed before a turn took the run's input (it stays queued in the log)`, 'AGENT_DISPOSED'))
      }
      this.ctx.hooks.dispose()
      await this.#runtime.writer.close().finally(() => this.#runtime.onDisposed?.(this))
    })()
    return this.#disposed
  }

  /** @internal Follows this agent's own log (runtime-context retention). */
  observe(event: SessionEvent): void {
    this.#loop.runtimeContext.observe(event)
  }

  #startRun(input: string | UserMessage, options: RunOptions, onPart?: (part: TurnStreamPart) => void): { readonly result: Promise<TurnResult> } {
    let message: UserMessage
    try {
      message = toUserMessage(input)
    } catch (error) {
      return { result: Promise.reject(error) }
    }
    const run = new TurnRun(this.#host(), message, options, onPart)
    this.#runs.add(run)
    return run.start()
  }

  /** What runs need of this agent (built on the first run). */
  #host(): RunHost {
    this.#runHost ??= {
      session: this.session,
      hooks: this.ctx.hooks,
      pricing: this.#pricing,
      send: (message, key) => void this.#send(message, 'next-turn', true, key),
      sentWithKey: (key) => this.inbox.sentWithKey(key),
      steer: (message) => void this.#send(message, 'next-step', true),
      cancelTurn: (cause) => this.cancel(cause, { keepInbox: true }),
      whenIdle: () => this.whenIdle(),
      wake: () => this.wake(),
      settled: (run) => this.#runs.delete(run),
    }
    return this.#runHost
  }

  #send(message: UserMessage, target: InboxTarget, wakeup: boolean, key?: string): boolean {
    if (this.#disposed !== undefined) throw new HarnessError(`agent '${this.id}' is disposed`, 'AGENT_DISPOSED')
    if (key !== undefined) {
      checkKey(key)
      const first = this.inbox.sentWithKey(key)
      if (first !== undefined) {
        this.#runtime.hooks.emit('agent/inbox/duplicate', { agent: this, key, messageId: first }, this.id)
        return false
      }
    }
    // Steering sent into a dying turn becomes its own turn (decided before inserting).
    const wakingAfterAbort = wakeup && this.#driver.cancelling
    this.inbox.append(wakingAfterAbort ? 'next-turn' : target, message, key)
    if (wakeup) this.#driver.wake(wakingAfterAbort)
    return true
  }
}

/** Options of `followup` and `steer`. */
export interface SendOptions {
  /**
   * A submission key (1–200 characters): a second send with a key already in the session's log is ignored (the
   * call returns `false`; `agent/inbox/duplicate` is emitted), so a retried submission never runs twice.
   */
  readonly key?: string
}

function checkKey(key: unknown): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > 200) {
    throw new HarnessError(`a submission key must be a string of 1 to 200 characters, got ${JSON.stringify(key)}`, 'INVALID_INPUT')
  }
}
