import type { CompactionOutcome } from '../plugins/compaction/replace.js'
import type { JsonValue } from '../json/lossless.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import type { SubmissionState } from '../views/submission.js'

/** A tool call waiting for a person's decision (the permission plugin asked). */
export interface PendingApproval {
  readonly callId: string
  readonly tool: string
  /** The call's parsed arguments. */
  readonly args: JsonValue
  /** What the call is about: its command, path or pattern. */
  readonly subject: string
  /** Why it needs approval. */
  readonly reason: string
  /** ISO time of the question. */
  readonly askedAt: string
}

/** An answer to a pending approval: `always` allows the tool for the rest of the session. */
export type ApprovalVerdict = 'allow' | 'deny' | 'always'

/** How a session is doing on this server: `stored` = nobody here runs it (it may run elsewhere). */
export type SessionRunStatus = 'running' | 'awaiting-approval' | 'idle' | 'stored'

/** Options of a send through {@link SessionInputPort}. */
export interface SendInputOptions {
  /**
   * Submission key (the HTTP API's `Idempotency-Key`): input sent with a key the session already holds is not
   * queued again.
   */
  readonly key?: string
}

/** What `resume` did: `lifted` when it lifted a quarantine. */
export interface ResumeAnswer {
  readonly lifted: boolean
}

/** What a new session starts with (unset fields take the server's defaults). */
export interface NewSessionOptions {
  readonly provider?: string
  readonly model?: string
  /** Persona section of this session's system prompt (replaces the server's). */
  readonly system?: string
  /**
   * This session's cost cap in US dollars (over the whole session, every request attempt billed): it replaces the
   * server's `--max-cost` for this session and is recorded in its log, so it holds after a restart too.
   */
  readonly maxCostUsd?: number
}

/**
 * What a rerun started through the API changes (`ledgerloop rerun`'s options). Unset fields: the recording's route
 * (the server's default when its provider is not served here), the server's system prompt, recorded tools, turn 1.
 */
export interface RerunRequest {
  readonly provider?: string
  readonly model?: string
  /** Persona section of the rerun's system prompt (replaces the server's, as for a new session). */
  readonly system?: string
  /** `recorded` (default): tools answer from the recording, nothing runs; `live`: the server's tools run. */
  readonly tools?: 'recorded' | 'live'
  /** First turn to rerun (default 1); earlier turns are copied as they were. */
  readonly fromTurn?: number
}

/**
 * The input side of `serve`: everything a client can ask a session to do. The in-process implementation runs
 * the agents itself (JSONL and SQLite stores on one host); a store-backed implementation (PostgreSQL with
 * workers) writes the inbox table and lets the session's owner act.
 */
export interface SessionInputPort {
  /** Creates a session and returns its id. */
  create(options: NewSessionOptions): Promise<string>
  /**
   * Queues a new turn's input and wakes the session. Resolves undefined when it was queued now, or, with a key
   * the session already holds (in its log, or waiting in a fleet's inbox), with where that first input stands.
   */
  followup(id: string, text: string, options?: SendInputOptions): Promise<SubmissionState | undefined>
  /** Queues input for the next step of the running turn (or a new turn) and wakes the session; `options` as for {@link followup}. */
  steer(id: string, text: string, options?: SendInputOptions): Promise<SubmissionState | undefined>
  /** Queues input for the next step without waking the session. */
  inject(id: string, text: string): Promise<void>
  /** Cancels the running turn (a no-op when none runs). */
  cancel(id: string): Promise<void>
  /** Tool calls of the session waiting for a decision, oldest first. */
  approvals(id: string): Promise<readonly PendingApproval[]>
  /** Answers one pending approval; false when no such call is waiting. */
  answer(id: string, callId: string, verdict: ApprovalVerdict): Promise<boolean>
  /**
   * The session's status as this server sees it. Synchronous: a port whose sessions run elsewhere answers from
   * a cache that {@link refresh} fills.
   */
  status(id: string): SessionRunStatus
  /**
   * Brings {@link status} up to date for these sessions (all when `ids` is undefined). Optional: only ports that
   * learn statuses from somewhere else need it; the routes call it before they read a status.
   */
  refresh?(ids?: readonly string[]): Promise<void>
  /**
   * Who runs the session, when sessions run on a fleet: the `ownerId` of the worker holding its lease, as of the
   * last {@link refresh}. Optional (a port that runs sessions itself has no owner to name).
   */
  owner?(id: string): string | undefined
  /**
   * Resumes a session so its interrupted work goes on. A quarantined session is refused with
   * `SESSION_QUARANTINED` unless `force`, which lifts the quarantine. Optional: without it the route answers 501.
   */
  resume?(id: string, options: { readonly force: boolean }): Promise<ResumeAnswer>
  /** Forks a stored session after `at` (default: its end); returns the child's id. */
  fork(id: string, at?: number): Promise<string>
  /**
   * Compacts an idle session's older history now (`AGENT_BUSY` while a turn runs). Optional: a port whose
   * sessions run elsewhere may leave it out, and the route then answers 501.
   */
  compact?(id: string): Promise<CompactionOutcome>
  /**
   * Starts a rerun of a stored session (see `rerunSession`) and resolves with the new session's id once its fork
   * is stored; the turns go on in the background. Optional: a port whose sessions run elsewhere may leave it out,
   * and the route then answers 501.
   */
  rerun?(id: string, options: RerunRequest): Promise<string>
  /** Stops every session this port runs (cancelling running turns, keeping queued input) and releases them. */
  close(): Promise<void>
}

/** A session's log as a reader sees it right now. */
export interface SessionSnapshot {
  readonly header: SessionHeader
  readonly events: readonly SessionEvent[]
}

/** What a follower of a live session receives. */
export interface SessionFeedListener {
  /** Each event exactly once, in seq order, starting right after the seq the follower asked for. */
  event(event: SessionEvent): void
  /** The session's pending approvals changed. */
  approvals?(pending: readonly PendingApproval[]): void
  /** The feed failed (e.g. the session was deleted); no more events follow. */
  error?(error: Error): void
}

/**
 * The output side of `serve`: reading sessions and following them live. Implementations must never skip or
 * repeat an event for a follower, whatever mix of stored and live events it is fed.
 */
export interface SessionEventFeed {
  /** The freshest log of a session (including events not yet flushed by a session this process runs). */
  read(id: string): Promise<SessionSnapshot>
  /** Follows a session from `afterSeq + 1` (-1: from the start). Resolves to the unsubscribe function. */
  follow(id: string, afterSeq: number, listener: SessionFeedListener): Promise<() => void>
}
