// Layer 1 of the seed's layer table (§1), "Driver activity": starts when a waking input finds the agent idle;
// owns one AbortController per turn, the initiator scope and the drain of consecutive queued turns; ends when
// no work can go on, or once a failure or cancel has settled. How it loops, contains and settles is §2. Read
// first; each turn is turn.ts.
import type { InterruptedWork } from '../session/continuation.js'
import type { CancelCause } from '../session/events.js'
import { runWithInitiator } from './initiator.js'
import type { LoopContext } from './loop-context.js'
import { runTurn, type TurnActivity } from './turn.js'

/** A running activity: what its turns read and update, its controller, and whether to wake again once idle. */
interface Running extends TurnActivity {
  readonly kind: 'running'
  /** The current turn's controller (a fresh one for each turn of the drain). */
  abort: AbortController
  /** A waking send the driver will not see by itself: wake again once idle. */
  wakeRequested: boolean
  /** Work a crash interrupted, carried on by this activity's first turn. */
  continuation: InterruptedWork | undefined
}

type Phase = { readonly kind: 'idle'; readonly lastTurn: number } | Running

/** What the driver needs besides the loop: whether the agent is disposed, and whether to open initiator frames. */
export interface DriverOptions {
  /** True once the agent is disposed: a latched wake is not replayed then. */
  readonly disposed: () => boolean
  /** Run each activity inside an AsyncLocalStorage frame (`currentInitiator()`). */
  readonly initiatorScope: boolean
}

/**
 * The driver of one agent: `wake` sets the phase to running synchronously and starts an activity (`kick`)
 * that runs turns while queued work remains (`while (await turn())`), swallows the failures and cancels its
 * turns already reported and recorded, returns to idle, and replays a wake latched while it was settling.
 * A failed turn never breaks the agent: the next wake starts a new turn.
 */
export class Driver {
  readonly #loop: LoopContext
  readonly #options: DriverOptions
  #phase: Phase
  #activity: Promise<void> = Promise.resolve()

  /** An idle driver; its next turn is the one after the log's last. */
  constructor(loop: LoopContext, options: DriverOptions) {
    this.#loop = loop
    this.#options = options
    this.#phase = { kind: 'idle', lastTurn: loop.session.lastTurn }
  }

  /** `running` while an activity works, else `idle`. */
  get status(): 'idle' | 'running' {
    return this.#phase.kind === 'running' ? 'running' : 'idle'
  }

  /** True while the running turn is being cancelled (a waking send then becomes its own turn). */
  get cancelling(): boolean {
    return this.#phase.kind === 'running' && this.#phase.abort.signal.aborted
  }

  /**
   * Starts an activity when idle (with `continuation`, its first turn carries on work a crash interrupted). While running it starts nothing: a live activity sees new work itself; one
   * that is dying (`afterAbort`: the send came after a cancel that is not a dispose) or has decided to stop is
   * woken again once idle.
   */
  wake(afterAbort = false, continuation?: InterruptedWork): void {
    const phase = this.#phase
    if (phase.kind === 'running') {
      const signal = phase.abort.signal
      const reason = signal.reason as CancelCause | undefined
      if (signal.aborted ? afterAbort && reason?.kind !== 'disposed' : phase.stopping) phase.wakeRequested = true
      return
    }
    const running: Running = { kind: 'running', abort: new AbortController(), turn: phase.lastTurn, step: 0, wakeRequested: false, stopping: false, continuation }
    this.#setPhase(running)
    // The initiator scope is opt-in: on Node 20 an AsyncLocalStorage frame makes every promise in the process
    // pay for async hooks (measured: ~25% of a short step).
    this.#activity = this.#options.initiatorScope ? runWithInitiator(this.#loop.agent, () => this.#kick(running)) : this.#kick(running)
  }

  /**
   * Cancels the running turn with `cause` and, with `clearInbox`, durably clears queued input first — even when
   * idle. When the store refuses the clearing splice, the turn is still cancelled and the error is thrown.
   */
  cancel(cause: CancelCause, clearInbox: boolean): void {
    const phase = this.#phase
    if (!clearInbox) {
      if (phase.kind === 'running') phase.abort.abort(cause)
      return
    }
    if (phase.kind === 'running') phase.wakeRequested = false
    try {
      this.#loop.inbox.clear()
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

  /** One activity: turn after turn while queued work remains, each under a fresh controller. */
  async #kick(running: Running): Promise<void> {
    const inbox = this.#loop.inbox
    try {
      for (;;) {
        const signal = running.abort.signal
        const continuation = running.continuation
        running.continuation = undefined
        const exit = await runTurn(this.#loop, running, signal, continuation)
        // A cancel that landed during the turn's flush ends this activity too: a `keepInbox` one (dispose, a
        // budget) must not be dropped with the controller below.
        if (exit === 'stop' || signal.aborted || !inbox.hasPending) {
          running.stopping = true
          return
        }
        // More queued work: a fresh activity segment (a latch on the old controller goes stale on purpose).
        running.abort = new AbortController()
        running.wakeRequested = false
        running.step = 0
      }
    } catch {
      // Already reported through agent/error and recorded in turn/end, or a cancellation. Input queued behind
      // a failed turn still gets its own turn (a run waiting for it would otherwise wait forever) — unless the
      // session refuses appends, where every turn would fail the same way.
      if (!running.abort.signal.aborted && this.#loop.session.writeFailure === undefined) running.wakeRequested = true
    } finally {
      const phase = this.#phase
      if (phase.kind === 'running') {
        this.#setPhase({ kind: 'idle', lastTurn: phase.turn })
        // Never after dispose: its cancel may find the turn already aborted (a user cancel, then a followup).
        if (phase.wakeRequested && !this.#options.disposed() && inbox.hasPending) this.wake()
      }
    }
  }

  #setPhase(next: Phase): void {
    const changed = (next.kind === 'running') !== (this.#phase.kind === 'running')
    this.#phase = next
    if (changed) this.#loop.hooks.emit('agent/status', { agent: this.#loop.agent, status: this.status }, this.#loop.agent.id)
  }
}
