import { AsyncLocalStorage } from 'node:async_hooks'
import type { Agent } from '../loop/agent.js'
import { createHarness, type Harness, type HarnessOptions } from '../harness/harness.js'
import { compactNow } from '../plugins/compaction/compaction.js'
import type { CompactionOutcome } from '../plugins/compaction/replace.js'
import type { ToolCall } from '../loop/hook-types.js'
import { HarnessError } from '../errors/harness-error.js'
import { permissionPlugin, type PermissionAnswer, type PermissionQuestion, type PermissionRules } from '../plugins/permission.js'
import { costBudgetPlugin } from '../plugins/cost-budget.js'
import { COST_CAP_EVENT, type CostBudgetCapData } from '../views/cost-cap.js'
import { foldRequestHeader } from '../session/request-header.js'
import { rerunSession } from '../app/rerun-session.js'
import type { PricingCatalogue } from '../views/cost.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionStore } from '../store/types.js'
import { submissionState, type SubmissionState } from '../views/submission.js'
import { quarantineOf } from '../views/quarantine.js'
import { endsCutOff } from '../session/continuation.js'
import type {
  ApprovalVerdict,
  NewSessionOptions,
  PendingApproval,
  RerunRequest,
  ResumeAnswer,
  SendInputOptions,
  SessionEventFeed,
  SessionFeedListener,
  SessionInputPort,
  SessionRunStatus,
  SessionSnapshot,
} from './session-ports.js'

/** Options of {@link LocalSessionHost}. */
export interface LocalSessionHostOptions extends Omit<HarnessOptions, 'store'> {
  /** Where sessions live; the host closes it on {@link LocalSessionHost.close}. */
  readonly store: SessionStore
  /** Provider and model of sessions created without them, and of stored sessions whose provider is not served here. */
  readonly defaults: { readonly provider: string; readonly model: string }
  /** Tool root of new sessions (default: the current folder). */
  readonly cwd?: string
  /**
   * Rules of the permission plugin the host installs; its `ask` decisions wait for an answer through the API.
   * `false` installs no permission plugin (every tool call runs).
   */
  readonly permissions?: PermissionRules | false
  /** How often a session run by another process is re-read while someone follows it (ms, default 500). */
  readonly pollMs?: number
  /**
   * Release a session that has been idle this long (ms, default 10 minutes): its agent is disposed and its
   * store lock freed, so other processes (the CLI) can open it; the next input resumes it here. 0 = never.
   */
  readonly releaseIdleMs?: number
  /**
   * Prices for the cost figures of reruns' comparisons, and for the cost budget of sessions created with their
   * own cap when `plugins` holds no cost budget (the host then installs one that caps only those sessions).
   */
  readonly pricing?: PricingCatalogue
}

// A rerun this host started: it runs in its own harness (rerunSession's), so it is stopped through its signal.
interface Rerun {
  readonly controller: AbortController
  done?: Promise<void>
}

interface Waiting {
  readonly approval: PendingApproval
  readonly settle: (answer: PermissionAnswer) => void
}

interface Hosted {
  readonly agent: Agent
  readonly waiting: Map<string, Waiting>
  idleTimer?: NodeJS.Timeout
}

interface Follower {
  next: number
  readonly listener: SessionFeedListener
}

// A session's followers, fed from the agent when this process runs it and from the store otherwise.
interface Channel {
  readonly followers: Set<Follower>
  poller?: NodeJS.Timeout
  polling?: boolean
  /** Events the last store read found. */
  seen?: number
}

/**
 * Runs sessions in this process for `serve` on a JSONL or SQLite store: agents are created or resumed on
 * demand (taking the store's single-writer lock), permission questions wait in a list the API answers, and
 * followers get each event as it is committed. Implements both ports of the server.
 */
export class LocalSessionHost implements SessionInputPort, SessionEventFeed {
  /** The harness the agents run in (adapters, tools, plugins). */
  readonly harness: Harness
  readonly #options: LocalSessionHostOptions
  readonly #hosted = new Map<string, Hosted>()
  readonly #opening = new Map<string, Promise<Hosted>>()
  readonly #channels = new Map<string, Channel>()
  readonly #asking = new AsyncLocalStorage<{ agent: Agent; call: ToolCall }>()
  readonly #systems = new Map<string, string>()
  readonly #releasing = new Map<string, Promise<void>>()
  readonly #reruns = new Map<string, Rerun>()
  #closed = false
  /** Set by {@link drain}: input is refused while the running turns finish. */
  #draining = false
  /** Settles when the last crash continuation started here has ended: the next one waits for it. */
  #continuing: Promise<void> = Promise.resolve()

  constructor(options: LocalSessionHostOptions) {
    this.#options = options
    const plugins = [...(options.plugins ?? [])]
    if (options.permissions !== false) {
      plugins.push(permissionPlugin({ ...(options.permissions !== undefined ? { rules: options.permissions } : {}), ask: (q) => this.#ask(q) }))
    }
    // A session's own cap (`maxCostUsd`) needs a cost budget to hold it to it, also on a server without --max-cost.
    if (!plugins.some((p) => p.name === COST_BUDGET_PLUGIN)) plugins.push(costBudgetPlugin(options.pricing !== undefined ? { pricing: options.pricing } : {}))
    const { defaults: _defaults, cwd: _cwd, permissions: _permissions, pollMs: _pollMs, releaseIdleMs: _releaseIdleMs, pricing: _pricing, ...harnessOptions } = options
    this.harness = createHarness({ ...harnessOptions, plugins })
    // Outermost on the approval seam: remembers which call is being asked about, because the permission
    // plugin's question names the tool but not the call or the session.
    this.harness.hooks.on('tools/approve', (payload, next) => this.#asking.run({ agent: payload.agent, call: payload.call }, () => next()), { prepend: true })
    this.harness.hooks.on('agent/status', ({ agent, status }) => {
      const hosted = this.#hosted.get(agent.id)
      if (hosted !== undefined) this.#armRelease(hosted, status)
    })
    this.harness.hooks.on('session/event', ({ session }) => {
      const channel = this.#channels.get(session.id)
      const hosted = this.#hosted.get(session.id)
      if (channel !== undefined && hosted !== undefined) this.#pump(channel, (seq) => hosted.agent.session.at(seq), hosted.agent.session.length)
    })
  }

  async create(options: NewSessionOptions): Promise<string> {
    this.#checkAccepting()
    const provider = options.provider ?? this.#options.defaults.provider
    if (this.harness.llm.adapter(provider) === undefined) {
      throw new HarnessError(`no adapter for provider '${provider}' on this server (served: ${this.harness.llm.providers().join(', ')})`, 'NO_ADAPTER')
    }
    const model = options.model ?? (provider === this.#options.defaults.provider ? this.#options.defaults.model : undefined)
    if (model === undefined) throw new HarnessError(`provider '${provider}' needs a model`, 'INVALID_CONFIG')
    const cap = options.maxCostUsd
    if (cap !== undefined && (typeof cap !== 'number' || !Number.isFinite(cap) || cap <= 0)) {
      throw new HarnessError('maxCostUsd must be a number of US dollars greater than 0', 'INVALID_CONFIG')
    }
    const agent = await this.harness.createAgent({ provider, model, ...(this.#options.cwd !== undefined ? { cwd: this.#options.cwd } : {}) })
    if (options.system !== undefined) {
      this.#systems.set(agent.id, options.system)
      agent.ctx.prompt.section('persona', { order: 0, text: options.system })
    }
    if (cap !== undefined) {
      // In the log, not in this process: the cost budget reads it there, as inspect and the page do, after a restart too.
      const recorded: CostBudgetCapData = { maxUsd: cap, per: 'session', origin: 'session' }
      agent.session.append(COST_CAP_EVENT, recorded, { ignorable: true })
    }
    this.#adopt(agent)
    // The id is handed out only once the session (and its cost cap) would survive a crash.
    await agent.flush()
    return agent.id
  }

  async followup(id: string, text: string, options: SendInputOptions = {}): Promise<SubmissionState | undefined> {
    this.#checkAccepting()
    const { agent } = await this.#host(id)
    if (!agent.followup(text, sendOptions(options))) return duplicateOf(agent, options)
    // Accepted means kept: the route answers 202 only once the input's splice is on disk.
    await agent.flush()
    return undefined
  }

  async steer(id: string, text: string, options: SendInputOptions = {}): Promise<SubmissionState | undefined> {
    this.#checkAccepting()
    const { agent } = await this.#host(id)
    if (!agent.steer(text, sendOptions(options))) return duplicateOf(agent, options)
    await agent.flush()
    return undefined
  }

  async inject(id: string, text: string): Promise<void> {
    this.#checkAccepting()
    const { agent } = await this.#host(id)
    agent.inject(text)
    await agent.flush()
  }

  /**
   * Resumes a stored session here now (its interrupted work continues). A quarantined one is refused with
   * `SESSION_QUARANTINED` unless `force`, which lifts the quarantine (`resumeAgent(id, { force: true })`).
   */
  async resume(id: string, options: { readonly force: boolean }): Promise<ResumeAnswer> {
    this.#checkOpen()
    if (this.#hosted.has(id)) return { lifted: false }
    const quarantine = quarantineOf((await this.#options.store.read(id)).events)
    await this.#host(id, options.force)
    return { lifted: quarantine !== undefined }
  }

  async cancel(id: string): Promise<void> {
    const rerun = this.#reruns.get(id)
    if (rerun !== undefined) {
      rerun.controller.abort()
      return
    }
    const hosted = this.#hosted.get(id)
    if (hosted !== undefined) {
      hosted.agent.cancel({ kind: 'user' })
      return
    }
    // Only the process running a session can cancel it; a stored session has nothing running here.
    if (!(await this.#options.store.has(id))) throw new HarnessError(`no session '${id}'`, 'SESSION_NOT_FOUND')
  }

  async approvals(id: string): Promise<readonly PendingApproval[]> {
    const hosted = this.#hosted.get(id)
    if (hosted === undefined) {
      if (!(await this.#options.store.has(id))) throw new HarnessError(`no session '${id}'`, 'SESSION_NOT_FOUND')
      return []
    }
    return [...hosted.waiting.values()].map((w) => w.approval)
  }

  async answer(id: string, callId: string, verdict: ApprovalVerdict): Promise<boolean> {
    const waiting = this.#hosted.get(id)?.waiting.get(callId)
    if (waiting === undefined) return false
    waiting.settle(verdict === 'allow' ? 'yes' : verdict === 'always' ? 'always' : 'no')
    return true
  }

  status(id: string): SessionRunStatus {
    if (this.#reruns.has(id)) return 'running'
    const hosted = this.#hosted.get(id)
    if (hosted === undefined) return 'stored'
    if (hosted.waiting.size > 0) return 'awaiting-approval'
    return hosted.agent.status
  }

  async compact(id: string): Promise<CompactionOutcome> {
    return compactNow((await this.#host(id)).agent)
  }

  async fork(id: string, at?: number): Promise<string> {
    this.#checkOpen()
    // Reads the store: a session run here has its ended turns there already (turn/end is always flushed).
    return this.harness.forkSession(id, at !== undefined ? { at } : {})
  }

  /**
   * Reruns a stored session in a harness of its own (this host's adapters, tools and plugins; see
   * `rerunSession`), resolving with the new session's id once its fork is stored. Recorded tools run nothing, so
   * nothing is asked; with live tools the permission rules apply and what they leave at `ask` is denied — nobody
   * is asked about a rerun's calls, as `ledgerloop rerun --tools live` without `--yes` does.
   * @throws HarnessError `SESSION_NOT_FOUND`, `NO_ADAPTER`, `INVALID_CONFIG` (no such turn, no model for the provider)
   */
  async rerun(id: string, options: RerunRequest): Promise<string> {
    this.#checkOpen()
    const stored = await this.#options.store.read(id)
    const route = this.#rerunRoute(foldRequestHeader(stored.events)?.config, options)
    const toolMode = options.tools ?? 'recorded'
    const { defaults: _d, cwd: _c, permissions, pollMs: _p, releaseIdleMs: _r, pricing, store, plugins = [], ...composition } = this.#options
    const asked = toolMode === 'live' && permissions !== false ? [permissionPlugin({ ...(permissions !== undefined ? { rules: permissions } : {}), ask: async () => 'no' })] : []
    const rerun: Rerun = { controller: new AbortController() }
    return new Promise<string>((resolve, reject) => {
      let child: string | undefined
      const run = rerunSession({
        ...composition,
        ...(options.system !== undefined ? { system: options.system } : {}),
        plugins: [...plugins, ...asked],
        store,
        sessionId: id,
        toolMode,
        provider: route.provider,
        model: route.model,
        ...(options.fromTurn !== undefined ? { fromTurn: options.fromTurn } : {}),
        ...(pricing !== undefined ? { pricing } : {}),
        signal: rerun.controller.signal,
        onSession: (sessionId) => {
          child = sessionId
          this.#reruns.set(sessionId, rerun)
          resolve(sessionId)
        },
      })
      rerun.done = run.then(
        () => undefined,
        (error: unknown) => {
          if (child === undefined) return reject(error)
          // The turns' own failures are in the new session's log; this is the rerun itself failing (its store).
          process.stderr.write(`ledgerloop serve: the rerun of ${id} into ${child} stopped: ${error instanceof Error ? error.message : String(error)}\n`)
        },
      ).finally(() => {
        if (child !== undefined) this.#reruns.delete(child)
      })
    })
  }

  // The recording's route unless the request names another; a provider this server does not serve is refused.
  #rerunRoute(recorded: { provider: string; model: string } | undefined, options: RerunRequest): { provider: string; model: string } {
    const { defaults } = this.#options
    const recordedServed = recorded !== undefined && this.harness.llm.adapter(recorded.provider) !== undefined
    const provider = options.provider ?? (recordedServed ? recorded.provider : defaults.provider)
    if (this.harness.llm.adapter(provider) === undefined) {
      throw new HarnessError(`no adapter for provider '${provider}' on this server (served: ${this.harness.llm.providers().join(', ')})`, 'NO_ADAPTER')
    }
    const model = options.model ?? (recordedServed && recorded.provider === provider ? recorded.model : provider === defaults.provider ? defaults.model : undefined)
    if (model === undefined) throw new HarnessError(`provider '${provider}' needs a model`, 'INVALID_CONFIG')
    return { provider, model }
  }

  async read(id: string): Promise<SessionSnapshot> {
    const hosted = this.#hosted.get(id)
    if (hosted !== undefined) return { header: hosted.agent.session.header, events: hosted.agent.session.events }
    const stored = await this.#options.store.read(id)
    return { header: stored.header, events: stored.events }
  }

  async follow(id: string, afterSeq: number, listener: SessionFeedListener): Promise<() => void> {
    this.#checkOpen()
    const hosted = this.#hosted.get(id)
    if (hosted === undefined && !(await this.#options.store.has(id))) throw new HarnessError(`no session '${id}'`, 'SESSION_NOT_FOUND')
    let channel = this.#channels.get(id)
    if (channel === undefined) {
      channel = { followers: new Set() }
      this.#channels.set(id, channel)
    }
    const follower: Follower = { next: Math.max(0, afterSeq + 1), listener }
    channel.followers.add(follower)
    const current = this.#hosted.get(id)
    if (current !== undefined) {
      // Backlog and live events come from the same in-memory log, in this same tick: nothing can slip between.
      this.#pump(channel, (seq) => current.agent.session.at(seq), current.agent.session.length)
      if (current.waiting.size > 0) listener.approvals?.([...current.waiting.values()].map((w) => w.approval))
    } else {
      this.#startPolling(id, channel)
    }
    const owner = channel
    return () => {
      owner.followers.delete(follower)
      if (owner.followers.size === 0) {
        if (owner.poller !== undefined) clearTimeout(owner.poller)
        this.#channels.delete(id)
      }
    }
  }

  /**
   * A graceful stop's first half (`serve` on SIGTERM): new input and new sessions are refused (`HARNESS_CLOSED`,
   * 503), and the turns running now may finish for `graceMs`. `close()` then cuts off what still runs (`aborted
   * {disposed}`: the next resume continues it).
   */
  async drain(graceMs: number): Promise<void> {
    this.#draining = true
    const running = [...this.#hosted.values()].map((h) => h.agent).filter((a) => a.status === 'running')
    if (running.length === 0) return
    let timer: NodeJS.Timeout | undefined
    const graceOver = new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))
    await Promise.race([Promise.all(running.map((a) => a.whenIdle())), graceOver])
    clearTimeout(timer)
  }

  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    for (const channel of this.#channels.values()) if (channel.poller !== undefined) clearTimeout(channel.poller)
    this.#channels.clear()
    for (const hosted of this.#hosted.values()) {
      if (hosted.idleTimer !== undefined) clearTimeout(hosted.idleTimer)
      for (const w of hosted.waiting.values()) w.settle('no')
    }
    // A rerun writes through the store the harness closes: stop it and let it close its session first.
    for (const rerun of this.#reruns.values()) rerun.controller.abort()
    await Promise.all([...this.#reruns.values()].map((r) => r.done))
    await Promise.all(this.#releasing.values())
    await this.harness.close()
  }

  /** The agent of a session, resuming it here when it is stored (`SESSION_LOCKED` when another process runs it). */
  async #host(id: string, force = false): Promise<Hosted> {
    this.#checkOpen()
    const hosted = this.#hosted.get(id)
    if (hosted !== undefined) return hosted
    let opening = this.#opening.get(id)
    if (opening === undefined) {
      // A session being released is resumed once its lock is free.
      const released = this.#releasing.get(id) ?? Promise.resolve()
      opening = released.then(() => this.#resume(id, force)).finally(() => this.#opening.delete(id))
      this.#opening.set(id, opening)
    }
    return opening
  }

  async #resume(id: string, force: boolean): Promise<Hosted> {
    const stored = await this.#options.store.read(id)
    const recorded = foldRequestHeader(stored.events)?.config
    // A session recorded with a provider this server does not serve continues on the server's default route.
    const served = recorded !== undefined && this.harness.llm.adapter(recorded.provider) !== undefined
    const route = served ? {} : { provider: this.#options.defaults.provider, model: this.#options.defaults.model }
    // Crash continuations run one at a time (docs/scaling.md, "Poison sessions and bystanders"): one that starts
    // with no other turn running here runs alone and its crash counts toward quarantine; one that shares the
    // process is not counted. Two crash continuations never overlap, so a poison one never takes another down.
    const ended = endsCutOff(stored.events) ? await this.#continuationSlot() : undefined
    let agent: Agent
    try {
      agent = await this.harness.resumeAgent(id, force ? { ...route, force } : route)
    } catch (error) {
      ended?.(Promise.resolve())
      throw error
    }
    ended?.(agent.whenIdle())
    const system = this.#systems.get(id)
    if (system !== undefined) agent.ctx.prompt.section('persona', { order: 0, text: system })
    return this.#adopt(agent)
  }

  /** Waits for the crash continuation before; the returned function hands over when this one's work has ended. */
  async #continuationSlot(): Promise<(until: Promise<void>) => void> {
    const previous = this.#continuing
    let done!: () => void
    this.#continuing = new Promise<void>((resolve) => (done = resolve))
    await previous
    return (until) => void until.then(done, done)
  }

  #adopt(agent: Agent): Hosted {
    const hosted: Hosted = { agent, waiting: new Map() }
    this.#hosted.set(agent.id, hosted)
    this.#armRelease(hosted, agent.status)
    const channel = this.#channels.get(agent.id)
    if (channel !== undefined) {
      // Followers were reading the store; from now on the agent's log is the source (it starts with the store's).
      if (channel.poller !== undefined) clearTimeout(channel.poller)
      delete channel.poller
      this.#pump(channel, (seq) => agent.session.at(seq), agent.session.length)
    }
    return hosted
  }

  #armRelease(hosted: Hosted, status: 'idle' | 'running'): void {
    if (hosted.idleTimer !== undefined) clearTimeout(hosted.idleTimer)
    delete hosted.idleTimer
    const after = this.#options.releaseIdleMs ?? 600_000
    if (status !== 'idle' || after <= 0 || this.#closed) return
    hosted.idleTimer = setTimeout(() => this.#release(hosted), after)
    hosted.idleTimer.unref()
  }

  #release(hosted: Hosted): void {
    const { agent } = hosted
    if (this.#closed || this.#hosted.get(agent.id) !== hosted || agent.status !== 'idle' || agent.inbox.hasPending || hosted.waiting.size > 0) return
    this.#hosted.delete(agent.id)
    const done = agent
      .dispose()
      .catch(() => undefined)
      .finally(() => {
        this.#releasing.delete(agent.id)
        // Anyone still following now reads the session from the store.
        const channel = this.#channels.get(agent.id)
        if (channel !== undefined && !this.#hosted.has(agent.id)) {
          channel.seen = agent.session.length
          this.#startPolling(agent.id, channel)
        }
      })
    this.#releasing.set(agent.id, done)
  }

  #ask(question: PermissionQuestion): Promise<PermissionAnswer> {
    const asked = this.#asking.getStore()
    const hosted = asked !== undefined ? this.#hosted.get(asked.agent.id) : undefined
    if (asked === undefined || hosted === undefined) return Promise.resolve('no')
    const { call } = asked
    return new Promise<PermissionAnswer>((resolve) => {
      const done = (answer: PermissionAnswer): void => {
        if (!hosted.waiting.delete(call.callId)) return
        question.signal.removeEventListener('abort', onAbort)
        this.#announceApprovals(hosted)
        resolve(answer)
      }
      // A cancelled turn withdraws its questions.
      const onAbort = (): void => done('no')
      hosted.waiting.set(call.callId, {
        approval: { callId: call.callId, tool: question.tool, args: question.arguments, subject: question.subject, reason: question.reason, askedAt: new Date().toISOString() },
        settle: done,
      })
      if (question.signal.aborted) return done('no')
      question.signal.addEventListener('abort', onAbort, { once: true })
      this.#announceApprovals(hosted)
    })
  }

  #announceApprovals(hosted: Hosted): void {
    const channel = this.#channels.get(hosted.agent.id)
    if (channel === undefined) return
    const pending = [...hosted.waiting.values()].map((w) => w.approval)
    for (const follower of channel.followers) follower.listener.approvals?.(pending)
  }

  #pump(channel: Channel, at: (seq: number) => SessionEvent | undefined, length: number): void {
    for (const follower of channel.followers) {
      while (follower.next < length) {
        const event = at(follower.next)
        if (event === undefined) break
        follower.next++
        follower.listener.event(event)
      }
    }
  }

  // A session run elsewhere is re-read from the store while someone follows it: soon after a change, then less
  // and less often while it stays quiet (a full read of a long log is not free).
  #startPolling(id: string, channel: Channel): void {
    const base = this.#options.pollMs ?? 500
    const poll = async (delay: number): Promise<void> => {
      delete channel.poller
      if (channel.polling === true || this.#closed || channel.followers.size === 0 || this.#hosted.has(id)) return
      channel.polling = true
      let next = Math.min(delay * 2, base * 8)
      try {
        const { events } = await this.#options.store.read(id)
        if (this.#hosted.has(id)) return
        if (events.length !== channel.seen) next = base
        channel.seen = events.length
        this.#pump(channel, (seq) => events[seq], events.length)
      } catch (error) {
        for (const follower of channel.followers) follower.listener.error?.(error as Error)
      } finally {
        channel.polling = false
      }
      if (channel.poller === undefined && channel.followers.size > 0 && !this.#hosted.has(id) && !this.#closed) {
        channel.poller = setTimeout(() => void poll(next), next)
        channel.poller.unref()
      }
    }
    // A new follower needs its backlog now, not at the end of a long quiet interval.
    if (channel.poller !== undefined) clearTimeout(channel.poller)
    delete channel.poller
    if (channel.polling === true) {
      channel.poller = setTimeout(() => void poll(base), 0)
      channel.poller.unref()
    } else void poll(base)
  }

  #checkOpen(): void {
    if (this.#closed) throw new HarnessError('the server is shutting down', 'HARNESS_CLOSED')
  }

  #checkAccepting(): void {
    if (this.#closed || this.#draining) throw new HarnessError('the server is shutting down: it takes no new input', 'HARNESS_CLOSED')
  }
}

// The name the cost budget's plugin registers under (plugins/cost-budget.ts).
const COST_BUDGET_PLUGIN = 'ledgerloop/cost-budget'

function sendOptions(options: SendInputOptions): { key?: string } {
  return options.key !== undefined ? { key: options.key } : {}
}

// The agent refused the send only because the key is in its log (other refusals throw): say where that input is.
function duplicateOf(agent: Agent, options: SendInputOptions): SubmissionState {
  const key = options.key as string
  const events: SessionEvent[] = []
  agent.session.log.forEachEvent(0, (event) => events.push(event))
  return submissionState(events, key) ?? { messageId: agent.inbox.sentWithKey(key) ?? '', state: 'queued' }
}
