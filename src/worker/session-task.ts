import type { Agent } from '../loop/agent.js'
import type { Harness } from '../harness/harness.js'
import { HarnessError } from '../errors/harness-error.js'
import type { InboxRow } from '../store/postgres/inbox-input.js'
import type { PostgresStore } from '../store/postgres/postgres-store.js'

/** Something a worker did or met, for logs and tests (one JSON line each in `ledgerloop worker`). */
export type WorkerEvent =
  | {
      readonly type: 'claimed'
      readonly sessionId: string
      readonly epoch: number
      readonly queued: number
      /** Claimed to continue a crashed turn alone: this worker runs nothing else until that continuation ends. */
      readonly alone?: true
    }
  | { readonly type: 'input'; readonly sessionId: string; readonly kinds: readonly string[] }
  | { readonly type: 'released'; readonly sessionId: string; readonly status: 'idle' | 'pending' }
  | { readonly type: 'quarantined'; readonly sessionId: string; readonly message: string }
  | { readonly type: 'lease-lost'; readonly sessionId: string; readonly during: 'flush' | 'renewal' | 'open'; readonly message: string }
  | { readonly type: 'error'; readonly sessionId?: string; readonly code: string; readonly message: string }

/** How long one session is served: the timings {@link runWorker} passes down. */
export interface SessionTaskTimings {
  /** Release an idle session after this long without new input. */
  readonly idleGraceMs: number
  /** Read the inbox at least this often (the fallback for a missed NOTIFY). */
  readonly pollMs: number
  /** On shutdown, wait this long for a running turn before cancelling it. */
  readonly shutdownGraceMs: number
}

/** What a session task needs from its worker. */
export interface SessionTaskContext {
  readonly harness: Harness
  readonly store: PostgresStore
  readonly agentDefaults: { readonly provider?: string; readonly model?: string; readonly quarantineAfter?: number }
  readonly timings: SessionTaskTimings
  report(event: WorkerEvent): void
  /** The worker's slots: told when the session goes idle and asked before it takes work again. */
  readonly slots: { idle(id: string): void; busy(id: string): boolean }
  /** True while this session must leave new turns' input in the inbox (another one continues alone here). */
  holdsInput(sessionId: string): boolean
  /** A turn ended while input was held: the worker may be able to claim a waiting continuation now. */
  idle(): void
}

/**
 * One claimed session, served until it has been idle for the grace period (or, idle, is evicted because a claim
 * needs its slot): resume (crash repair included), run the queued input its log holds, move inbox rows into the
 * log as they arrive, then release. A lost lease cancels the running turn at once (the in-flight request is
 * aborted) and ends the task without another write.
 */
export class SessionTask {
  readonly #id: string
  readonly #ctx: SessionTaskContext
  readonly #moving = new Set<string>()
  readonly #alone: boolean
  readonly #continued: Promise<void>
  #endContinued!: () => void
  #agent: Agent | undefined
  #opened = false
  #lost = false
  #stopping = false
  #evicted = false
  #poke: (() => void) | undefined
  #poked = false

  /**
   * @param id - a session this worker's store has claimed
   * @param ctx - the worker
   * @param alone - claimed to continue a crashed turn alone (`resumeAgent({ alone: true })`)
   */
  constructor(id: string, ctx: SessionTaskContext, alone = false) {
    this.#id = id
    this.#ctx = ctx
    this.#alone = alone
    this.#continued = new Promise<void>((resolve) => (this.#endContinued = resolve))
  }

  /** Opening, or running a turn: a worker claims a crash continuation only when none of its tasks is busy. */
  get busy(): boolean {
    return !this.#opened || this.#agent?.status === 'running'
  }

  /**
   * Settles once the continuation this task was claimed to run alone has ended (at once when the session did not
   * open, or there was nothing to continue).
   */
  get continued(): Promise<void> {
    return this.#continued
  }

  /** New input may be waiting (a NOTIFY named this session). */
  poke(): void {
    this.#poked = true
    this.#poke?.()
  }

  /** The lease is gone: abort the turn now; nothing more is written. */
  leaseLost(error: HarnessError, during: 'flush' | 'renewal' | 'open'): void {
    if (this.#lost) return
    this.#lost = true
    this.#ctx.report({ type: 'lease-lost', sessionId: this.#id, during, message: error.message })
    this.#agent?.cancel({ kind: 'hook', reason: 'lease lost' }, { keepInbox: true })
    this.poke()
  }

  /** Another session needs this idle session's slot: release it now instead of after the idle grace. */
  evict(): void {
    this.#evicted = true
    this.poke()
  }

  /** Graceful shutdown: take no more input, let a running turn finish (up to the grace), then release. */
  stop(): void {
    this.#stopping = true
    this.poke()
  }

  /** Serves the session until it is released; never rejects. Resolves false when the session did not open. */
  async run(): Promise<boolean> {
    const { harness, store, agentDefaults } = this.#ctx
    let agent: Agent
    try {
      // "Resume anyway" asked through serve: resume with force (lifting the quarantine in this lease's log), and
      // take the request back only once that resume is durable, so a crash in between leaves it for the next.
      const force = await store.forcedResume(this.#id, 'check')
      // Alone or not is this worker's promise, not a guess: the policy keeps everything else here still.
      agent = await harness.resumeAgent(this.#id, { ...agentDefaults, alone: this.#alone, ...(force ? { force } : {}) })
      if (force) await store.forcedResume(this.#id, 'clear')
    } catch (error) {
      this.#opened = true
      this.#endContinued()
      // A claim that ran out before it was opened (this process stalled) belongs to someone else now.
      if (isLeaseLost(error)) this.leaseLost(error as HarnessError, 'open')
      else if (isQuarantined(error)) this.#ctx.report({ type: 'quarantined', sessionId: this.#id, message: (error as Error).message })
      else this.#error(error)
      // A quarantined session stays so (no worker claims it) until a forced resume lifts it.
      await store.releaseClaim(this.#id, isQuarantined(error) ? 'quarantined' : undefined).catch(() => undefined)
      return false
    }
    this.#agent = agent
    this.#opened = true
    const writer = store.writerOf(this.#id)
    this.#ctx.report({ type: 'claimed', sessionId: this.#id, epoch: writer?.epoch ?? 0, queued: agent.inbox.nextTurn.length, ...(this.#alone ? { alone: true as const } : {}) })
    try {
      agent.wake()
      this.#untilContinuationEnds(agent)
      await this.#serve(agent)
    } catch (error) {
      if (!isLeaseLost(error)) this.#error(error)
    } finally {
      await this.#release(agent)
      this.#endContinued()
    }
    return true
  }

  /**
   * Settles {@link continued} when the continuation turn resume started has ended (its `turn/end`: the work it
   * carried on is done, or a crash took the process anyway), or at once when the agent is idle: the turns for
   * input queued behind it are ordinary turns and run beside other sessions again.
   */
  #untilContinuationEnds(agent: Agent): void {
    if (!this.#alone || agent.status === 'idle') return this.#endContinued()
    const from = agent.session.length
    const off = this.#ctx.harness.hooks.on('session/event', ({ session, event }) => {
      if (session !== agent.session || event.type !== 'turn/end' || event.seq < from) return
      off()
      this.#endContinued()
    })
    void agent.whenIdle().then(() => {
      off()
      this.#endContinued()
    })
  }

  async #serve(agent: Agent): Promise<void> {
    const { idleGraceMs, pollMs, shutdownGraceMs } = this.#ctx.timings
    let idleSince: number | undefined
    let stopDeadline: number | undefined
    let ran = false
    while (!this.#lost) {
      if (this.#stopping) {
        stopDeadline ??= Date.now() + shutdownGraceMs
        if (agent.status === 'idle' || Date.now() >= stopDeadline) return
        await this.#waitFor(Math.min(pollMs, stopDeadline - Date.now()), agent)
        continue
      }
      if (this.#evicted && agent.status !== 'running') return
      // A turn just ended and no NOTIFY came: offer the slot now, while the inbox is read (moving a row takes it
      // back), so the next claim overlaps that read. Not before the first read: that is what the claim was for.
      if (ran && agent.status !== 'running' && agent.inbox.nextTurn.length === 0 && !this.#poked && idleSince === undefined) {
        idleSince = Date.now()
        this.#ctx.slots.idle(this.#id)
      }
      this.#poked = false
      const moved = await this.#moveInput(agent)
      if (moved > 0 || agent.status === 'running') idleSince = undefined
      ran = agent.status === 'running'
      if (agent.status === 'running') {
        await this.#waitFor(pollMs, agent)
        // (Read again: the wait may have ended the turn.)
        if (!this.busy && this.#ctx.holdsInput(this.#id)) this.#ctx.idle()
        continue
      }
      if (this.#evicted) return
      if (idleSince === undefined) {
        idleSince = Date.now()
        this.#ctx.slots.idle(this.#id)
      }
      const left = idleGraceMs - (Date.now() - idleSince)
      if (left <= 0) return
      await this.#waitFor(Math.min(left, pollMs), undefined)
    }
  }

  /** Moves waiting inbox rows into the log, in order, deleting them in the flush that makes them durable. */
  async #moveInput(agent: Agent): Promise<number> {
    const rows = heldBack(
      (await this.#ctx.store.pendingInput(this.#id)).filter((r) => !this.#moving.has(r.id)),
      this.#ctx.holdsInput(this.#id) ? agent.status : undefined,
    )
    if (rows.length === 0 || this.#lost) return 0
    // An evicted session leaves the rows in the inbox, where they make it claimable again at once.
    if (!this.#ctx.slots.busy(this.#id)) return 0
    const writer = this.#ctx.store.writerOf(this.#id)
    if (writer === undefined) throw new HarnessError(`session '${this.#id}' has no open writer in this worker`, 'SESSION_CLOSED')
    for (const row of rows) this.#moving.add(row.id)
    await writer.moveInboxRows(
      rows.map((r) => r.id),
      () => {
        for (const row of rows) this.#apply(agent, row)
      },
    )
    // Only a committed move frees the ids: after a failed flush the rows are still deleted by its retry.
    for (const row of rows) this.#moving.delete(row.id)
    this.#ctx.report({ type: 'input', sessionId: this.#id, kinds: rows.map((r) => r.input.kind) })
    return rows.length
  }

  #apply(agent: Agent, row: InboxRow): void {
    try {
      const input = row.input
      if (input.kind === 'cancel') agent.cancel({ kind: 'user' })
      // A key the log already holds (a client's retry that raced its first send into the log) is ignored there.
      else if (input.kind === 'followup') agent.followup(input.message, input.key !== undefined ? { key: input.key } : {})
      else if (input.kind === 'steer') agent.steer(input.message, input.key !== undefined ? { key: input.key } : {})
      else agent.inject(input.message)
    } catch (error) {
      // A row that cannot be applied is dropped with its batch and reported, so it cannot block the inbox.
      if (isLeaseLost(error)) throw error
      this.#error(error)
    }
  }

  /** Waits for a poke, `ms`, or (when given) the agent going idle. */
  async #waitFor(ms: number, running: Agent | undefined): Promise<void> {
    if (this.#poked || this.#lost) return
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.max(0, ms))
      function done(): void {
        clearTimeout(timer)
        resolve()
      }
      this.#poke = done
      void running?.whenIdle().then(done)
    })
    this.#poke = undefined
  }

  async #release(agent: Agent): Promise<void> {
    const writer = this.#ctx.store.writerOf(this.#id)
    // `pending` when input waits, or when a turn is still running: dispose cuts it off (`aborted {disposed}`),
    // and whichever worker claims the session next continues it.
    const status = agent.inbox.nextTurn.length > 0 || agent.status === 'running' ? 'pending' : 'idle'
    writer?.releaseAs(status)
    try {
      await agent.dispose()
      if (!this.#lost && writer?.fenced === undefined) this.#ctx.report({ type: 'released', sessionId: this.#id, status })
    } catch (error) {
      if (!isLeaseLost(error)) this.#error(error)
    }
  }

  #error(error: unknown): void {
    const code = error instanceof HarnessError ? error.code : 'WORKER_FAILED'
    this.#ctx.report({ type: 'error', sessionId: this.#id, code, message: error instanceof Error ? error.message : String(error) })
  }
}

/**
 * The rows that may move now. While input is held (`status` given) nothing may start a turn: into a running turn
 * the leading steers and cancels still move (they start none), the rest waits in the inbox, in order.
 */
function heldBack(rows: readonly InboxRow[], status: 'idle' | 'running' | undefined): readonly InboxRow[] {
  if (status === undefined) return rows
  if (status === 'idle') return []
  const stop = rows.findIndex((r) => r.input.kind !== 'steer' && r.input.kind !== 'cancel')
  return stop < 0 ? rows : rows.slice(0, stop)
}

function isLeaseLost(error: unknown): boolean {
  return error instanceof HarnessError && error.code === 'LEASE_LOST'
}

function isQuarantined(error: unknown): boolean {
  return error instanceof HarnessError && error.code === 'SESSION_QUARANTINED'
}
