import type pg from 'pg'
import type { JsonValue } from '../../json/lossless.js'
import type { StoreTables } from './schema.js'

/** What a worker asks about a tool call (the permission plugin's question). */
export interface ApprovalQuestion {
  readonly tool: string
  /** The call's parsed arguments. */
  readonly args: JsonValue
  /** What the call is about: its command, path or pattern. */
  readonly subject: string
  /** Why it needs approval. */
  readonly reason: string
}

/** A tool call waiting for a decision, as stored in the `approvals` table. */
export interface StoredApproval extends ApprovalQuestion {
  readonly callId: string
  /** ISO time of the question (database time). */
  readonly askedAt: string
}

/** An answer to a stored approval: `always` allows the tool for the rest of the session. */
export type StoredVerdict = 'allow' | 'deny' | 'always'

/** How a session looks to someone who does not run it: its row's status and whether a live owner holds it. */
export interface SessionState {
  readonly id: string
  /** `sessions.status`: a turn is open, nothing to do, or input waits in the log. */
  readonly status: 'idle' | 'running' | 'pending' | 'quarantined'
  /** A live lease holds the session (some worker serves it now). */
  readonly owned: boolean
  /** Approvals of the current owner wait for an answer. */
  readonly asking: boolean
  /** Who holds the live lease (`sessions.owner`: the worker's `ownerId`, `host:pid:…`), or null when nobody does. */
  readonly owner: string | null
}

// A row counts only while the epoch that asked still holds a live lease: rows of a dead or fenced asker are void.
const LIVE = (t: StoreTables, a: string): string =>
  `EXISTS (SELECT 1 FROM ${t.sessions} s WHERE s.id = ${a}.session_id AND s.epoch = ${a}.epoch AND s.owner IS NOT NULL AND s.lease_until > now())`

/**
 * Stores a question of lease `epoch` (replacing an older row of the same call, and dropping the void rows older
 * epochs left behind) and notifies followers.
 */
export async function askApproval(pool: pg.Pool, t: StoreTables, sessionId: string, epoch: number, callId: string, question: ApprovalQuestion): Promise<void> {
  await pool.query(
    `WITH old AS (DELETE FROM ${t.approvals} WHERE session_id = $1 AND epoch < $3 AND call_id <> $2),
     a AS (
       INSERT INTO ${t.approvals} (session_id, call_id, epoch, question) VALUES ($1, $2, $3, $4)
       ON CONFLICT (session_id, call_id) DO UPDATE SET epoch = EXCLUDED.epoch, question = EXCLUDED.question, asked_at = now(), answer = NULL
       RETURNING session_id)
     SELECT pg_notify($5, session_id) FROM a`,
    [sessionId, callId, epoch, JSON.stringify(question), t.approvalsChannel],
  )
}

/** Unanswered approvals of the session's live owner, oldest first. */
export async function pendingApprovals(pool: pg.Pool, t: StoreTables, sessionId: string): Promise<StoredApproval[]> {
  const found = await pool.query<{ call_id: string; question: string; asked_at: Date }>(
    `SELECT a.call_id, a.question, a.asked_at FROM ${t.approvals} a WHERE a.session_id = $1 AND a.answer IS NULL AND ${LIVE(t, 'a')} ORDER BY a.asked_at, a.call_id`,
    [sessionId],
  )
  return found.rows.map((r) => {
    const q = JSON.parse(r.question) as ApprovalQuestion
    return { callId: r.call_id, tool: q.tool, args: q.args, subject: q.subject, reason: q.reason, askedAt: r.asked_at.toISOString() }
  })
}

/** Answers a pending approval of the live owner; false when no such question waits. Notifies the asker. */
export async function answerApproval(pool: pg.Pool, t: StoreTables, sessionId: string, callId: string, verdict: StoredVerdict): Promise<boolean> {
  const done = await pool.query(
    `WITH a AS (
       UPDATE ${t.approvals} a SET answer = $3 WHERE a.session_id = $1 AND a.call_id = $2 AND a.answer IS NULL AND ${LIVE(t, 'a')}
       RETURNING a.session_id)
     SELECT pg_notify($4, session_id) FROM a`,
    [sessionId, callId, verdict, t.approvalsChannel],
  )
  return done.rows.length > 0
}

/** Takes the answer of the asker's own question (deleting its row), or undefined while none was given. */
export async function takeApprovalAnswer(pool: pg.Pool, t: StoreTables, sessionId: string, epoch: number, callId: string): Promise<StoredVerdict | undefined> {
  const taken = await pool.query<{ answer: StoredVerdict }>(
    `WITH a AS (
       DELETE FROM ${t.approvals} WHERE session_id = $1 AND call_id = $2 AND epoch = $3 AND answer IS NOT NULL RETURNING session_id, answer)
     SELECT answer, pg_notify($4, session_id) FROM a`,
    [sessionId, callId, epoch, t.approvalsChannel],
  )
  return taken.rows[0]?.answer
}

/** Withdraws the asker's question (a cancelled turn, a stopping worker) and notifies followers. */
export async function withdrawApproval(pool: pg.Pool, t: StoreTables, sessionId: string, epoch: number, callId: string): Promise<void> {
  await pool.query(
    `WITH a AS (DELETE FROM ${t.approvals} WHERE session_id = $1 AND call_id = $2 AND epoch = $3 RETURNING session_id)
     SELECT pg_notify($4, session_id) FROM a`,
    [sessionId, callId, epoch, t.approvalsChannel],
  )
}

/** States of the sessions some worker holds or that wait for one (every other session is idle and unowned). */
export async function sessionStates(pool: pg.Pool, t: StoreTables, ids: readonly string[] | undefined): Promise<SessionState[]> {
  const found = await pool.query<{ id: string; status: SessionState['status']; owned: boolean; asking: boolean; owner: string | null }>(
    `SELECT s.id, s.status, s.owner, (s.owner IS NOT NULL AND s.lease_until > now()) AS owned,
       EXISTS (SELECT 1 FROM ${t.approvals} a WHERE a.session_id = s.id AND a.epoch = s.epoch AND a.answer IS NULL) AS asking
     FROM ${t.sessions} s
     WHERE ($1::text[] IS NULL OR s.id = ANY($1::text[])) AND (s.owner IS NOT NULL OR s.status <> 'idle')`,
    [ids === undefined ? null : [...ids]],
  )
  // An expired lease's owner is history (a dead or stalled worker), not who serves the session.
  return found.rows.map((r) => ({ id: r.id, status: r.status, owned: r.owned, asking: r.owned && r.asking, owner: r.owned ? r.owner : null }))
}

/**
 * Asks for a forced resume of a quarantined session that nobody owns: marks it `pending` (claimable) with
 * `force_resume`, so the next worker resumes it with `force` (lifting the quarantine in its own fenced writer and
 * continuing the work). False when the session is not quarantined or someone holds its lease.
 */
export async function requestForcedResume(pool: pg.Pool, t: StoreTables, sessionId: string): Promise<boolean> {
  const done = await pool.query(
    `WITH u AS (
       UPDATE ${t.sessions} SET status = 'pending', force_resume = true
       WHERE id = $1 AND status = 'quarantined' AND (owner IS NULL OR lease_until < now()) RETURNING id)
     SELECT pg_notify($2, id) FROM u`,
    [sessionId, t.inboxChannel],
  )
  return done.rows.length > 0
}

/** Whether a forced resume was asked for (`clear`: and takes the request back, once the forced resume is durable). */
export async function forcedResume(pool: pg.Pool, t: StoreTables, sessionId: string, clear: boolean): Promise<boolean> {
  const found = await pool.query(
    clear
      ? `UPDATE ${t.sessions} SET force_resume = false WHERE id = $1 AND force_resume RETURNING id`
      : `SELECT id FROM ${t.sessions} WHERE id = $1 AND force_resume`,
    [sessionId],
  )
  return found.rows.length > 0
}
