import { createHarness, type HarnessOptions } from '../harness/harness.js'
import { HarnessError } from '../errors/harness-error.js'
import type { PostgresStore } from '../store/postgres/postgres-store.js'
import { ClaimPolicy } from './claim-policy.js'
import { SessionTask, type WorkerEvent } from './session-task.js'
import { SlotBook } from './slots.js'

/** Options of {@link runWorker}: the harness a worker builds (adapters, tools, plugins, …) plus its own. */
export interface WorkerOptions extends Omit<HarnessOptions, 'store'> {
  /** Where sessions, leases and the inbox live. The worker never closes it. */
  readonly store: PostgresStore
  /** Sessions served at once (default 4). */
  readonly concurrency?: number
  /** Provider for a session that has no recorded request yet (e.g. created with `createDetached`). */
  readonly provider?: string
  /** Model for a session that has no recorded request yet. */
  readonly model?: string
  /**
   * Release a session after this long without input or a running turn (default 2000 ms). An idle session holds no
   * slot: when a claim needs one, the longest idle session is released at once instead.
   */
  readonly idleGraceMs?: number
  /** Look for claimable sessions and read owned inboxes at least this often (default 1000 ms): NOTIFY's fallback. */
  readonly pollMs?: number
  /** On shutdown, let running turns finish for this long before cancelling them (default 10 s). */
  readonly shutdownGraceMs?: number
  /**
   * After how many interruptions in a row of the same work a session is quarantined instead of continued (default
   * 3; see `ResumeOptions.quarantineAfter`). A quarantined session is never claimed again until a forced resume.
   */
  readonly quarantineAfter?: number
  /** Stops the worker: turns finish (or are cancelled after the grace), logs are flushed, sessions released. */
  readonly signal?: AbortSignal
  /** Every claim, input move, release, lost lease and error (default: none). */
  readonly onEvent?: (event: WorkerEvent) => void
}

/** What a worker did, once it has stopped. */
export interface WorkerSummary {
  readonly claimed: number
  readonly released: number
  readonly leaseLost: number
  readonly errors: number
}

/** How long a session that failed to open is left alone before this worker claims it again. */
const FAILED_BACKOFF_MS = 30_000

/**
 * Serves sessions from a {@link PostgresStore} until `signal` aborts: claims sessions with input waiting and no
 * live owner (or whose owner's lease ran out: crash repair, then the queued input), runs their turns, moves
 * inbox rows into their logs as they arrive, renews leases, releases sessions after `idleGraceMs` without work.
 * Any number of workers on any number of machines can share one database; a tool body runs at most once per
 * logged `tool/call` across all of them.
 * @example
 * ```ts
 * import { PostgresStore, runWorker } from 'ledgerloop/postgres'
 * const store = new PostgresStore({ connectionString: process.env.DATABASE_URL })
 * const stop = new AbortController()
 * process.once('SIGTERM', () => stop.abort())
 * await runWorker({ store, adapters: [deepseekAdapter()], tools: builtinTools({ root: '.' }), concurrency: 8, signal: stop.signal })
 * await store.close()
 * ```
 */
export async function runWorker(options: WorkerOptions): Promise<WorkerSummary> {
  const { store, concurrency = 4, provider, model, idleGraceMs = 2000, pollMs = 1000, shutdownGraceMs = 10_000, quarantineAfter, signal, onEvent, ...harnessOptions } = options
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) throw new HarnessError('concurrency must be a positive integer', 'INVALID_CONFIG')
  for (const [name, value] of Object.entries({ idleGraceMs, pollMs, shutdownGraceMs })) {
    if (!Number.isFinite(value) || value < 0) throw new HarnessError(`${name} must be a number of milliseconds ≥ 0`, 'INVALID_CONFIG')
  }
  await store.ready()
  const harness = createHarness({ ...harnessOptions, store })
  const summary = { claimed: 0, released: 0, leaseLost: 0, errors: 0 }
  const report = (event: WorkerEvent): void => {
    if (event.type === 'claimed') summary.claimed++
    else if (event.type === 'released') summary.released++
    else if (event.type === 'lease-lost') summary.leaseLost++
    else if (event.type === 'error') summary.errors++
    onEvent?.(event)
  }
  let wakeMain: (() => void) | undefined
  let pending = true
  // When this worker last asked the database for work: a full worker asks again once a poll interval has passed
  // (by the clock, not the timer, which NOTIFY traffic keeps resetting).
  let askedAt = -Infinity
  const wake = (): void => {
    pending = true
    wakeMain?.()
  }
  // An idle session frees its slot at once: the next claim may take it (evicting the session if it does).
  const slots = new SlotBook(concurrency, wake)
  const policy = new ClaimPolicy(store)
  const ctx = {
    harness,
    holdsInput: (id: string) => policy.holdsInput(id),
    idle: () => wake(),
    store,
    agentDefaults: {
      ...(provider !== undefined ? { provider } : {}),
      ...(model !== undefined ? { model } : {}),
      ...(quarantineAfter !== undefined ? { quarantineAfter } : {}),
    },
    timings: { idleGraceMs, pollMs: Math.max(10, pollMs), shutdownGraceMs },
    report,
    slots,
  }
  const tasks = new Map<string, { task: SessionTask; done: Promise<void> }>()
  const backoff = new Map<string, number>()
  const offInput = store.onInput((id) => {
    const running = tasks.get(id)
    if (running !== undefined) running.task.poke()
    else wake()
  })
  const offLost = store.onLeaseLost((id, error, during) => tasks.get(id)?.task.leaseLost(error, during))
  const onAbort = (): void => wake()
  const stopped = (): boolean => signal?.aborted === true
  signal?.addEventListener('abort', onAbort)
  await store.listening().catch(() => undefined)

  try {
    while (!stopped()) {
      pending = false
      const free = slots.free
      try {
        const now = Date.now()
        for (const [id, until] of backoff) if (until <= now) backoff.delete(id)
        // A crash continuation runs alone here (claim-policy.ts): the policy says what may be claimed now.
        // (A tenth of slack: the timer and Date.now() round differently, and a tick early must not wait two.)
        const polled = now - askedAt >= 0.9 * ctx.timings.pollMs
        const claims = await policy.next(free, tasks, [...backoff.keys()], polled)
        if (polled || free > 0) askedAt = now
        const started = claims.map((claim) => ({ id: claim.id, claim, holder: new SessionTask(claim.id, ctx, claim.continuation) }))
        // An idle session that took input back while the claim was in flight keeps its slot: the surplus goes back.
        const fit = slots.admit(started)
        for (const { id, claim } of started.slice(fit)) {
          if (claim.continuation) policy.continued(id)
          await store.releaseClaim(id)
        }
        for (const { id, claim, holder: task } of started.slice(0, fit)) {
          if (claim.continuation) void task.continued.then(() => (policy.continued(id), wake()))
          const done = task.run().then((opened) => {
            if (!opened) backoff.set(id, Date.now() + FAILED_BACKOFF_MS)
            slots.closed(id)
            if (tasks.get(id)?.task === task) tasks.delete(id)
            wake()
          })
          tasks.set(id, { task, done })
        }
      } catch (error) {
        report({ type: 'error', code: error instanceof HarnessError ? error.code : 'WORKER_FAILED', message: (error as Error).message })
      }
      if (pending || stopped()) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, ctx.timings.pollMs)
        function done(): void {
          clearTimeout(timer)
          resolve()
        }
        wakeMain = done
      })
      wakeMain = undefined
    }
  } finally {
    offInput()
    signal?.removeEventListener('abort', onAbort)
    for (const { task } of tasks.values()) task.stop()
    await Promise.allSettled([...tasks.values()].map((t) => t.done))
    offLost()
  }
  return summary
}
