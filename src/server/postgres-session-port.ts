import { HarnessError } from '../errors/harness-error.js'
import type { SessionEvent } from '../session/events.js'
import { Session } from '../session/session.js'
import { endsInsideTurn } from '../session/fork-point.js'
import { submissionState, type SubmissionState } from '../views/submission.js'
import { quarantineOf } from '../views/quarantine.js'
// Types only: `ledgerloop/server` must load without the optional `pg` package.
import type { PostgresStore } from '../store/postgres/postgres-store.js'
import type {
  ApprovalVerdict,
  NewSessionOptions,
  PendingApproval,
  ResumeAnswer,
  SendInputOptions,
  SessionEventFeed,
  SessionFeedListener,
  SessionInputPort,
  SessionRunStatus,
  SessionSnapshot,
} from './session-ports.js'

const READ_PAGE = 1000

interface Tail {
  /** Seq of the next event this follower gets. */
  next: number
  readonly listener: SessionFeedListener
}

interface Channel {
  readonly tails: Set<Tail>
  /** Something may have been committed, or a tail joined: read again. */
  ping(): void
  stop(): void
}

/** Options of {@link PostgresSessionPort}. */
export interface PostgresSessionPortOptions {
  /** The shared store the workers serve (the port never opens a session for writing, so it never takes a lease). */
  readonly store: PostgresStore
  /** Working folder recorded in the header of new sessions (the workers' tools have their own root). */
  readonly cwd?: string
  /** Longest wait of a live tail without a NOTIFY before it reads again (ms, default 1000). */
  readonly pollMs?: number
}

/**
 * Both ports of `serve` over a {@link PostgresStore} whose sessions `ledgerloop worker` processes run: the
 * server only writes (the `inbox` and `approvals` tables, new detached sessions) and reads (the log, followed
 * with LISTEN/NOTIFY); it holds no agent and takes no lease, so any number of servers can share one database.
 * Pending approvals are the questions workers store with `storeApprovalPlugin`.
 * Not available here: per-session provider, model or system prompt (the workers decide), and compaction by hand.
 */
export class PostgresSessionPort implements SessionInputPort, SessionEventFeed {
  readonly #store: PostgresStore
  readonly #options: PostgresSessionPortOptions
  readonly #status = new Map<string, SessionRunStatus>()
  readonly #owners = new Map<string, string>()
  readonly #channels = new Map<string, Channel>()
  #closed = false

  constructor(options: PostgresSessionPortOptions) {
    this.#store = options.store
    this.#options = options
  }

  async create(options: NewSessionOptions): Promise<string> {
    this.#checkOpen()
    const chosen = (['provider', 'model', 'system', 'maxCostUsd'] as const).filter((k) => options[k] !== undefined)
    if (chosen.length > 0) {
      throw new HarnessError(
        `${chosen.join(', ')} cannot be chosen per session on this server: its sessions run on workers, which use their own provider, model, system prompt and cost cap`,
        'UNSUPPORTED_OPTION',
      )
    }
    const session = new Session({ header: this.#options.cwd !== undefined ? { cwd: this.#options.cwd } : {} })
    await this.#store.createDetached(session.header)
    return session.id
  }

  async followup(id: string, text: string, options: SendInputOptions = {}): Promise<SubmissionState | undefined> {
    return this.#sendKeyed(id, 'followup', text, options.key)
  }

  async steer(id: string, text: string, options: SendInputOptions = {}): Promise<SubmissionState | undefined> {
    return this.#sendKeyed(id, 'steer', text, options.key)
  }

  async inject(id: string, text: string): Promise<void> {
    await this.#send(id, { kind: 'inject', message: text })
  }

  async cancel(id: string): Promise<void> {
    // The owner applies it like agent.cancel(): the running turn is aborted and input queued before it is dropped.
    await this.#send(id, { kind: 'cancel' })
  }

  async approvals(id: string): Promise<readonly PendingApproval[]> {
    this.#checkOpen()
    const pending = await this.#store.pendingApprovals(id)
    if (pending.length === 0 && !(await this.#store.has(id))) throw new HarnessError(`no session '${id}'`, 'SESSION_NOT_FOUND')
    return pending
  }

  async answer(id: string, callId: string, verdict: ApprovalVerdict): Promise<boolean> {
    this.#checkOpen()
    return this.#store.answerApproval(id, callId, verdict)
  }

  /** As of the last {@link refresh} that covered the session (`stored` before any, or when no worker holds it). */
  status(id: string): SessionRunStatus {
    return this.#status.get(id) ?? 'stored'
  }

  /** Reads the sessions' states from the store (all when `ids` is undefined) for {@link status}. */
  async refresh(ids?: readonly string[]): Promise<void> {
    const states = await this.#store.sessionStates(ids)
    if (ids === undefined) {
      this.#status.clear()
      this.#owners.clear()
    } else {
      for (const id of ids) {
        this.#status.delete(id)
        this.#owners.delete(id)
      }
    }
    for (const state of states) {
      if (state.owner !== null) this.#owners.set(state.id, state.owner)
      const status: SessionRunStatus = !state.owned ? 'stored' : state.asking ? 'awaiting-approval' : state.status === 'running' ? 'running' : 'idle'
      if (status !== 'stored') this.#status.set(state.id, status)
    }
  }

  /** The worker holding the session's live lease, as of the last {@link refresh} that covered it. */
  owner(id: string): string | undefined {
    return this.#owners.get(id)
  }

  /**
   * "Resume anyway" for a session a worker quarantined (`force` required; `SESSION_QUARANTINED` without). The
   * server cannot run the session, so it writes nothing to the log: it marks the row `pending` with a request
   * for a forced resume (`SESSION_LOCKED` when a worker holds the lease). The next free worker claims it and
   * resumes it with `force`, exactly as `run --session ID --force` would: the quarantine is lifted in the log by
   * the worker's fenced writer and the interrupted work continues; after `quarantineAfter` more crashes in a row
   * it is quarantined again. Without a quarantine it does nothing (input wakes a worker as always).
   */
  async resume(id: string, options: { readonly force: boolean }): Promise<ResumeAnswer> {
    this.#checkOpen()
    const quarantine = quarantineOf((await this.#store.read(id)).events)
    if (quarantine === undefined) return { lifted: false }
    if (!options.force) throw new HarnessError(`session '${id}' is quarantined: ${quarantine.reason}. Resume with force to try again`, 'SESSION_QUARANTINED')
    if (await this.#store.forcedResume(id, 'request')) return { lifted: true }
    // Not marked: a worker holds it (it is being resumed already), or another server's request won the race.
    if (await this.#store.forcedResume(id, 'check')) return { lifted: true }
    throw new HarnessError(`session '${id}' is held by a worker right now; try again when it is released`, 'SESSION_LOCKED')
  }

  async fork(id: string, at?: number): Promise<string> {
    this.#checkOpen()
    const parent = await this.#store.read(id)
    const events = parent.events
    const point = at ?? events.length - 1
    if (events.length > 0 && (!Number.isSafeInteger(point) || point < 0 || point >= events.length)) {
      throw new HarnessError(`fork point ${String(point)} is not a seq of session '${id}' (0..${events.length - 1})`, 'INVALID_BOUNDARY')
    }
    const prefix = events.slice(0, point + 1)
    if (endsInsideTurn(prefix)) throw new HarnessError(`cannot fork session '${id}' at seq ${point}: that point is inside an open turn`, 'OPEN_TURN')
    const child = new Session({
      header: { ...(parent.header.cwd !== undefined ? { cwd: parent.header.cwd } : {}), parentSession: id, seedLength: prefix.length },
      seed: prefix,
      endSeed: true,
    })
    // Detached like every session this server makes: the first input lets a worker claim it.
    await this.#store.createDetached(child.header, child.events)
    return child.id
  }

  async read(id: string): Promise<SessionSnapshot> {
    const { header, events } = await this.#store.read(id)
    return { header, events }
  }

  async follow(id: string, afterSeq: number, listener: SessionFeedListener): Promise<() => void> {
    this.#checkOpen()
    if (!(await this.#store.has(id))) throw new HarnessError(`no session '${id}'`, 'SESSION_NOT_FOUND')
    this.#checkOpen()
    const tail: Tail = { next: Math.max(0, afterSeq + 1), listener }
    const channel = this.#channel(id)
    channel.tails.add(tail)
    channel.ping()
    const offApprovals = this.#followApprovals(id, listener)
    return () => {
      offApprovals()
      channel.tails.delete(tail)
      if (channel.tails.size === 0) channel.stop()
    }
  }

  /** Ends every live tail. The store is the caller's (the server closes it). */
  async close(): Promise<void> {
    this.#closed = true
    for (const channel of [...this.#channels.values()]) channel.stop()
  }

  // One reader per followed session, however many tails follow it: on every commit NOTIFY naming the session
  // (or every pollMs) it reads the rows after the furthest-behind tail and hands each tail the events from its
  // own next seq, so the database answers one query per session and flush, not one per tail.
  #channel(id: string): Channel {
    const existing = this.#channels.get(id)
    if (existing !== undefined) return existing
    const pollMs = this.#options.pollMs ?? 1000
    let pinged = true
    let wake: (() => void) | undefined
    let stopped = false
    const tails = new Set<Tail>()
    const off = this.#store.onCommit((sessionId) => {
      if (sessionId === id) channel.ping()
    })
    const channel: Channel = {
      tails,
      ping: () => {
        pinged = true
        wake?.()
      },
      stop: () => {
        if (stopped) return
        stopped = true
        off()
        wake?.()
        if (this.#channels.get(id) === channel) this.#channels.delete(id)
      },
    }
    this.#channels.set(id, channel)
    void (async () => {
      // Listening before the first read: nothing committed in between can go unnoticed.
      await this.#store.listening().catch(() => undefined)
      while (!stopped && tails.size > 0) {
        pinged = false
        let from = Infinity
        for (const tail of tails) from = Math.min(from, tail.next)
        let events: readonly SessionEvent[]
        try {
          events = await this.#store.readEvents(id, { after: from - 1, limit: READ_PAGE })
        } catch (error) {
          if (stopped) return
          // The tails end (an SSE client resumes from its last id); a later follower starts a fresh reader.
          channel.stop()
          for (const tail of tails) tail.listener.error?.(error as Error)
          return
        }
        if (stopped) return
        for (const tail of [...tails]) {
          for (const event of events) {
            if (event.seq !== tail.next) continue
            tail.next++
            tail.listener.event(event)
          }
        }
        if (events.length === READ_PAGE || pinged) continue
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, pollMs)
          function done(): void {
            clearTimeout(timer)
            wake = undefined
            resolve()
          }
          wake = done
          if (pinged || stopped) done()
        })
      }
    })()
    return channel
  }

  // Approval lists are read one at a time per follower, so it never sees an older list after a newer one.
  #followApprovals(id: string, listener: SessionFeedListener): () => void {
    let stopped = false
    let reading: Promise<void> = Promise.resolve()
    let last = '[]'
    const read = (): void => {
      reading = reading.then(async () => {
        if (stopped) return
        try {
          const pending = await this.#store.pendingApprovals(id)
          const text = JSON.stringify(pending)
          if (text === last || stopped) return
          last = text
          listener.approvals?.(pending)
        } catch {
          // The next change will tell; a failed read of the list does not end the tail.
        }
      })
    }
    const off = this.#store.onApprovals((sessionId) => {
      if (sessionId === id) read()
    })
    read()
    return () => {
      stopped = true
      off()
    }
  }

  async #sendKeyed(id: string, kind: 'followup' | 'steer', text: string, key: string | undefined): Promise<SubmissionState | undefined> {
    this.#checkOpen()
    if (key === undefined) {
      await this.#store.send(id, { kind, message: text })
      return undefined
    }
    if ((await this.#store.send(id, { kind, message: text, key })) !== undefined) return undefined
    // Not queued: the first input with this key still waits in the inbox, or an owner has moved it into the log.
    const waiting = (await this.#store.pendingInput(id)).find((row) => row.input.kind !== 'cancel' && row.input.kind !== 'inject' && row.input.key === key)
    if (waiting !== undefined && waiting.input.kind !== 'cancel') return { messageId: waiting.input.message.id, state: 'queued' }
    const found = submissionState((await this.#store.read(id)).events, key)
    // Read in this order, a row moved meanwhile is found in the log: it leaves the inbox in the flush that logs it.
    if (found === undefined) throw new HarnessError(`input with key '${key}' was refused as a duplicate but is neither waiting nor logged in session '${id}'`, 'INTERNAL')
    return found
  }

  async #send(id: string, input: Parameters<PostgresStore['send']>[1]): Promise<void> {
    this.#checkOpen()
    await this.#store.send(id, input)
  }

  #checkOpen(): void {
    if (this.#closed) throw new HarnessError('the server is shutting down', 'HARNESS_CLOSED')
  }
}
