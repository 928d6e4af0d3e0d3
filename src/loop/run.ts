// `agent.run()` and `agent.stream()`: one input queued as a followup, followed through the log to the turn that
// claims it, and that turn's result folded from its committed events (src/views/turn-result.ts). Nothing here
// drives the loop: the input goes into the inbox like any followup, the driver runs the turn, and this file only
// listens to what is published (`session/event`: after commit, a `turn/end` only once its flush settled, see
// docs/stores.md "When a write fails"). So a result, and every streamed part, is what the log says.
import { HarnessError } from '../errors/harness-error.js'
import type { ScopedHooks } from '../hooks/hook-bus.js'
import type { AssistantMessage, UserMessage } from '../llm/types.js'
import type { CancelCause, CoreEventData, SessionEvent } from '../session/events.js'
import type { Session } from '../session/session.js'
import type { PricingCatalogue } from '../views/cost.js'
import { streamPartOf, type TurnStreamPart } from '../views/turn-parts.js'
import { InputFateFold, turnResult, type TurnResult } from '../views/turn-result.js'
import type { AgentHandle, LoopHooks } from './hook-table.js'
import { DEFAULT_OUTPUT_REPAIRS, repairMessage, structuredOutput, type OutputSchema, type StructuredOutput } from './structured-output.js'
import { cancelCauseOf } from './turn-failure.js'

/** Options of `agent.run()` and `agent.stream()`. */
export interface RunOptions {
  /**
   * A submission key (as `followup(input, { key })`): when the session's log already holds input sent with it,
   * nothing is queued and the run resolves with the turn that took that first input (waiting for it when it
   * has not ended yet) — so a client that retries a run after a timeout gets the original turn, run once.
   */
  readonly key?: string
  /**
   * Structured output: the turn's final answer must be one JSON value valid under this zod schema or JSON
   * Schema; `TurnResult.output` holds it parsed (typed from a zod schema). Every request of the run's turn asks
   * for it in the provider's native mode (logged in its request header); an answer that does not validate gets
   * up to `outputRepairs` repair steps, then the turn ends `error` with `OUTPUT_INVALID` listing the issues.
   */
  readonly output?: OutputSchema
  /** Name of the answer (`json_schema.name`, Anthropic's answer tool; default `final_answer`). */
  readonly outputName?: string
  /** What the answer is, for the model (sent with the schema). */
  readonly outputDescription?: string
  /** Repair steps allowed for an invalid answer (default 2; 0: none). */
  readonly outputRepairs?: number
  /**
   * Cancels this run's turn: it ends `aborted` with the signal's reason when that is a `CancelCause`, else
   * `{kind:'user'}`. Aborted while the input still waits in the inbox, the turn that takes it ends `aborted` at
   * once. Only this run's turn is cancelled: other queued input stays and runs after it.
   */
  readonly signal?: AbortSignal
}

/**
 * A streamed turn: iterate it for its parts (each yielded once its event is committed and published), or
 * await `result`. Leaving the loop early stops the parts, not the turn; `RunOptions.signal` cancels the turn.
 */
export interface TurnStream<Output = unknown> extends AsyncIterable<TurnStreamPart> {
  /** The turn's result, as `agent.run()` resolves it. */
  readonly result: Promise<TurnResult<Output>>
}

/** What a run needs of its agent. */
export interface RunHost {
  readonly session: Session
  /** The agent's scoped hooks (its listeners go when the agent is disposed). */
  readonly hooks: ScopedHooks<LoopHooks<AgentHandle>>
  /** Prices for `TurnResult.cost`. */
  readonly pricing: PricingCatalogue
  /** Queues the input as a followup and wakes the driver (throws when the agent is disposed). */
  send(message: UserMessage, key?: string): void
  /** The id of the input first sent with submission `key`, if the log holds one. */
  sentWithKey(key: string): string | undefined
  /** Queues a message for the next step of the running turn (a structured-output repair). */
  steer(message: UserMessage): void
  /** Cancels the running turn, keeping queued input. */
  cancelTurn(cause: CancelCause): void
  /** Resolves once the driver is idle. */
  whenIdle(): Promise<void>
  /** Starts queued input nobody else will start. */
  wake(): void
  /** Called once the run settled (resolved or rejected). */
  settled(run: TurnRun): void
}

/**
 * One run: queues its input, finds the turn that claims it (the durable `agent/inbox/spliced` of that claim,
 * followed by {@link InputFateFold}; never by counting turns), and resolves with that turn's result once its
 * `turn/end` is published. It rejects only when no turn will take the input: the agent is disposed, a cancel
 * discarded the input, the session refuses appends, or the input could not be queued at all.
 */
export class TurnRun {
  /** The turn's result. */
  readonly result: Promise<TurnResult>
  readonly #host: RunHost
  readonly #message: UserMessage
  readonly #signal: AbortSignal | undefined
  readonly #onPart: ((part: TurnStreamPart) => void) | undefined
  readonly #key: string | undefined
  #fold: InputFateFold
  #claim: { readonly turn: number; readonly turnStart: number } | undefined
  /** The claiming turn ended `interrupted`: its result, while the turn that continues it is awaited. */
  #interrupted: TurnResult | undefined
  /** The output mode, its repair bound, and what the run's turn has given so far (structured output only). */
  readonly #output: { readonly mode: StructuredOutput; readonly repairs: number } | undefined
  /** Why the options are unusable (a schema that does not compile): the run rejects at start. */
  readonly #invalidOptions: unknown
  #answer: { message: AssistantMessage | undefined; truncated: boolean; repaired: number; value?: { readonly parsed: unknown } } = { message: undefined, truncated: false, repaired: 0 }
  #resolve!: (result: TurnResult) => void
  #reject!: (error: unknown) => void
  #settled = false
  readonly #offs: (() => void)[] = []

  /**
   * @param onPart - called with each part of the run's turn, in log order, as its event is published
   */
  constructor(host: RunHost, message: UserMessage, options: RunOptions, onPart?: (part: TurnStreamPart) => void) {
    this.#host = host
    this.#message = message
    this.#signal = options.signal
    this.#key = options.key
    this.#onPart = onPart
    this.#fold = new InputFateFold(message.id)
    this.result = new Promise<TurnResult>((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
    const built = outputModeOf(options)
    this.#output = built.kind === 'output' ? built.output : undefined
    this.#invalidOptions = built.kind === 'invalid' ? built.error : undefined
  }

  /** Listens, then queues the input (a failure to queue rejects the result). */
  start(): this {
    const signal = this.#signal
    if (signal?.aborted === true || this.#invalidOptions !== undefined) {
      this.#fail(signal?.aborted === true ? signal.reason : this.#invalidOptions)
      return this
    }
    const hooks = this.#host.hooks
    this.#offs.push(hooks.on('session/event', ({ event }) => this.#observe(event)))
    if (this.#output !== undefined) this.#listenForOutput(hooks, this.#output)
    this.#offs.push(
      hooks.on('agent/status', ({ status }) => {
        // A session that refuses appends starts no turn: a run still waiting for its turn end would wait forever.
        const refusal = this.#host.session.writeFailure
        if (status === 'idle' && refusal !== undefined) this.#fail(refusal)
      }),
    )
    if (signal !== undefined) {
      const onAbort = (): void => queueMicrotask(() => this.#cancelOwnTurn())
      signal.addEventListener('abort', onAbort, { once: true })
      this.#offs.push(() => signal.removeEventListener('abort', onAbort))
    }
    const first = this.#key === undefined ? undefined : this.#host.sentWithKey(this.#key)
    if (first !== undefined) {
      // Sent before: follow that input through the log so far, then on as new events are published.
      this.#fold = new InputFateFold(first)
      this.#host.session.log.forEachEvent(this.#host.session.seedBoundary(), (event) => this.#observe(event))
      // No continuation will come for a claiming turn that ended interrupted when no turn is open now.
      if (this.#interrupted !== undefined && this.#host.session.openTurn === undefined) this.#finish(this.#interrupted, undefined)
      return this
    }
    try {
      this.#host.send(this.#message, this.#key)
    } catch (error) {
      this.#fail(error)
    }
    return this
  }

  /** Rejects a run still waiting (the agent is being disposed and no turn will take its input). */
  abandon(error: unknown): void {
    this.#fail(error)
  }

  #observe(event: SessionEvent): void {
    if (this.#settled) return
    const claim = this.#claim
    if (claim === undefined) {
      const fate = this.#fold.observe(event)
      if (fate?.kind === 'discarded') {
        this.#fail(new HarnessError(`the run's input was discarded from the inbox at seq ${fate.seq} (a cancel) before any turn took it`, 'INPUT_DISCARDED'))
      } else if (fate?.kind === 'claimed') {
        this.#claim = { turn: fate.turn, turnStart: fate.turnStart }
        // Out of the publishing frame: a cancel's abort listeners may append.
        if (this.#signal?.aborted === true) queueMicrotask(() => this.#cancelOwnTurn())
      }
      return
    }
    if (this.#interrupted !== undefined) {
      // The work a crash interrupted goes on in the turn that continues it: that turn's end is the result.
      const continues = event.type === 'turn/start' ? (event.data as unknown as CoreEventData['turn/start']).continues : undefined
      if (continues === claim.turn) {
        this.#claim = { turn: (event.data as unknown as CoreEventData['turn/start']).turn, turnStart: event.seq }
        this.#interrupted = undefined
      }
      return
    }
    if (this.#output !== undefined) this.#followAnswer(event, claim.turn)
    if (this.#onPart !== undefined && event.type !== 'turn/end') {
      const part = streamPartOf(event)
      if (part !== undefined && part.turn === claim.turn) this.#onPart(part as TurnStreamPart)
    }
    if (event.type !== 'turn/end' || (event.data as unknown as CoreEventData['turn/end']).turn !== claim.turn) return
    const { session, pricing } = this.#host
    const result = turnResult(session.id, turnEvents(session, claim.turnStart, event.seq), { turn: claim.turn, pricing })
    if (result === undefined) {
      this.#fail(new HarnessError(`turn ${claim.turn} has no turn/start at seq ${claim.turnStart}`, 'INVALID_STATE'))
      return
    }
    if (result.reason.kind === 'interrupted') {
      this.#interrupted = result
      return
    }
    const value = this.#answer.value
    const final = value !== undefined && result.reason.kind === 'completed' ? Object.freeze({ ...result, output: value.parsed }) : result
    this.#finish(final, event.seq)
  }

  #finish(result: TurnResult, endSeq: number | undefined): void {
    this.#settle()
    if (endSeq !== undefined) this.#onPart?.({ type: 'turn-end', seq: endSeq, turn: result.turn, reason: result.reason, result })
    this.#resolve(result)
  }

  /**
   * Structured output on the run's own turn: every request of it carries the output spec (so the header logs
   * it), and when the turn would end its answer is checked; a failed check steers a repair into the next step
   * while repairs are left, else fails the turn with `OUTPUT_INVALID` (turn.ts records it in `turn/end`).
   */
  #listenForOutput(hooks: RunHost['hooks'], output: { readonly mode: StructuredOutput; readonly repairs: number }): void {
    const { spec } = output.mode
    this.#offs.push(
      hooks.on('agent/request', async (payload, next) => {
        const config = await next()
        return payload.turn === this.#claim?.turn ? { ...config, output: spec } : config
      }),
    )
    this.#offs.push(
      hooks.on('agent/turn-stopping', async ({ turn }) => {
        const answer = this.#answer
        if (turn !== this.#claim?.turn || this.#settled) return
        delete answer.value
        // A reply cut at the output limit is no answer to repair: the turn ends max-tokens, without output.
        if (answer.truncated) return
        const verdict = output.mode.check(answer.message === undefined ? '' : answerText(answer.message))
        if (verdict.ok) {
          answer.value = { parsed: verdict.value }
          return
        }
        if (answer.repaired < output.repairs) {
          answer.repaired++
          this.#host.steer(repairMessage(spec, verdict.issues))
          return
        }
        const after = output.repairs === 0 ? '' : ` after ${output.repairs} repair step${output.repairs === 1 ? '' : 's'}`
        throw new HarnessError(`the answer is not valid under the output schema${after}: ${verdict.issues.join('; ')}`, 'OUTPUT_INVALID')
      }),
    )
  }

  /** The run's turn's last completed answer, and whether its reply stopped at the output limit. */
  #followAnswer(event: SessionEvent, turn: number): void {
    if (event.type === 'assistant/message') {
      const data = event.data as unknown as CoreEventData['assistant/message']
      if (data.turn === turn && data.interrupted !== true) this.#answer.message = data.message
    } else if (event.type === 'assistant/chunk') {
      const data = event.data as unknown as CoreEventData['assistant/chunk']
      if (data.turn === turn && data.chunk.type === 'finish') this.#answer.truncated = data.chunk.reason.kind === 'max-tokens'
    }
  }

  /** Cancels this run's turn if it is the one running; lets the driver go on with the input queued behind it. */
  #cancelOwnTurn(): void {
    const claim = this.#claim
    if (this.#settled || claim === undefined || this.#host.session.openTurn !== claim.turn) return
    this.#host.cancelTurn(cancelCauseOf(this.#signal?.reason))
    // A cancel that keeps the inbox ends the driver's activity: start what waits behind this turn.
    void this.#host.whenIdle().then(() => this.#host.wake())
  }

  #fail(error: unknown): void {
    if (this.#settled) return
    this.#settle()
    this.#reject(error)
  }

  #settle(): void {
    this.#settled = true
    for (const off of this.#offs) off()
    this.#offs.length = 0
    this.#host.settled(this)
  }
}

/** The output mode a run's options ask for (none without `output`), or why they cannot be used. */
function outputModeOf(
  options: RunOptions,
): { readonly kind: 'none' } | { readonly kind: 'output'; readonly output: { readonly mode: StructuredOutput; readonly repairs: number } } | { readonly kind: 'invalid'; readonly error: unknown } {
  if (options.output === undefined) return { kind: 'none' }
  const repairs = options.outputRepairs ?? DEFAULT_OUTPUT_REPAIRS
  if (!Number.isInteger(repairs) || repairs < 0) return { kind: 'invalid', error: new HarnessError(`outputRepairs must be a whole number ≥ 0, not ${String(repairs)}`, 'INVALID_CONFIG') }
  try {
    const naming = { ...(options.outputName !== undefined ? { name: options.outputName } : {}), ...(options.outputDescription !== undefined ? { description: options.outputDescription } : {}) }
    return { kind: 'output', output: { mode: structuredOutput(options.output, naming), repairs } }
  } catch (error) {
    return { kind: 'invalid', error }
  }
}

/**
 * The answer's text: its text blocks, a line apart — so an answer given after a sentence in a block of its own
 * (Anthropic's answer tool after some prose) starts a line of its own, where the check looks for it.
 */
function answerText(message: AssistantMessage): string {
  return message.content.flatMap((block) => (block.type === 'text' ? [block.text] : [])).join('\n')
}

/** The committed events of one turn, `from` ≤ seq ≤ `to`, streamed chunks left out (the result folds none). */
function turnEvents(session: Session, from: number, to: number): SessionEvent[] {
  const out: SessionEvent[] = []
  session.log.forEachEvent(from, (event) => {
    if (event.seq <= to) out.push(event)
  })
  return out
}

/**
 * The parts of a {@link TurnRun} as an async iterable (one consumer; a second iterator reads on from where the
 * first stopped). Parts wait in a buffer until read; leaving the loop drops them and stops buffering.
 */
export class PartStream implements TurnStream {
  readonly result: Promise<TurnResult>
  readonly #buffer: TurnStreamPart[] = []
  #waiting: { resolve: (r: IteratorResult<TurnStreamPart>) => void; reject: (e: unknown) => void } | undefined
  #ended = false
  #failure: { readonly error: unknown } | undefined
  #closed = false

  /** @param start - starts the run, given the function its parts go to */
  constructor(start: (push: (part: TurnStreamPart) => void) => { readonly result: Promise<TurnResult> }) {
    const run = start((part) => this.#push(part))
    this.result = run.result
    // The failure reaches an iterating caller through next(): a caller who only iterates has handled it.
    run.result.then(
      () => this.#end(undefined),
      (error: unknown) => this.#end({ error }),
    )
  }

  [Symbol.asyncIterator](): AsyncIterator<TurnStreamPart> {
    return {
      next: () => this.#next(),
      return: () => {
        this.#closed = true
        this.#buffer.length = 0
        this.#waiting?.resolve({ value: undefined, done: true })
        this.#waiting = undefined
        return Promise.resolve({ value: undefined, done: true })
      },
    }
  }

  #next(): Promise<IteratorResult<TurnStreamPart>> {
    const part = this.#buffer.shift()
    if (part !== undefined) return Promise.resolve({ value: part, done: false })
    if (this.#failure !== undefined && !this.#closed) {
      const { error } = this.#failure
      this.#closed = true
      return Promise.reject(error)
    }
    if (this.#ended || this.#closed) return Promise.resolve({ value: undefined, done: true })
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject }
    })
  }

  #push(part: TurnStreamPart): void {
    if (this.#closed) return
    const waiting = this.#waiting
    if (waiting === undefined) {
      this.#buffer.push(part)
      return
    }
    this.#waiting = undefined
    waiting.resolve({ value: part, done: false })
  }

  #end(failure: { readonly error: unknown } | undefined): void {
    this.#ended = true
    this.#failure = failure
    const waiting = this.#waiting
    if (waiting === undefined || this.#closed) return
    this.#waiting = undefined
    if (failure === undefined) {
      waiting.resolve({ value: undefined, done: true })
    } else {
      this.#closed = true
      waiting.reject(failure.error)
    }
  }
}
