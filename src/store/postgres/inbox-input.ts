import type pg from 'pg'
import { HarnessError } from '../../errors/harness-error.js'
import { toUserMessage } from '../../llm/messages.js'
import type { UserMessage } from '../../llm/types.js'
import type { StoreTables } from './schema.js'

/**
 * Input for a session someone else may own, as it travels through the `inbox` table: the same four sends an
 * {@link Agent} offers (`followup`, `steer`, `inject`, `cancel`).
 */
export type InboxInput =
  | {
      readonly kind: 'followup' | 'steer'
      readonly message: string | UserMessage
      /**
       * Submission key (1–200 characters, as `agent.followup(input, { key })`): a second send with a key already
       * waiting in the inbox or in the session's log queues nothing.
       */
      readonly key?: string
    }
  | { readonly kind: 'inject'; readonly message: string | UserMessage }
  | { readonly kind: 'cancel' }

/** One inbox row read back by the session's owner. */
export interface InboxRow {
  /** Row id (a bigint, as text): the order rows were sent in. */
  readonly id: string
  readonly input:
    | { readonly kind: 'followup' | 'steer'; readonly message: UserMessage; readonly key?: string }
    | { readonly kind: 'inject'; readonly message: UserMessage }
    | { readonly kind: 'cancel' }
}

const KINDS = new Set(['followup', 'steer', 'inject', 'cancel'])

/**
 * Checks an input and serialises its message (the text of a string becomes a user message here, so its id is
 * fixed when it is sent, not when it is delivered).
 * @throws HarnessError `INVALID_INPUT`
 */
export function encodeInboxInput(input: InboxInput): { kind: string; message: string | null; key: string | null } {
  if (typeof input !== 'object' || input === null || !KINDS.has(input.kind)) {
    throw new HarnessError(`inbox input needs kind followup | steer | inject | cancel, got ${JSON.stringify((input as { kind?: unknown } | null)?.kind)}`, 'INVALID_INPUT')
  }
  if (input.kind === 'cancel') return { kind: 'cancel', message: null, key: null }
  const { message } = input
  const key = (input as { key?: unknown }).key
  if (key !== undefined && (input.kind === 'inject' || typeof key !== 'string' || key.length === 0 || key.length > 200)) {
    throw new HarnessError(
      input.kind === 'inject' ? 'an inject takes no submission key (only followup and steer do)' : `a submission key must be a string of 1 to 200 characters, got ${JSON.stringify(key)}`,
      'INVALID_INPUT',
    )
  }
  if (typeof message !== 'string' && (typeof message !== 'object' || message === null || message.role !== 'user')) {
    throw new HarnessError(`a ${input.kind} needs a text or a user message`, 'INVALID_INPUT')
  }
  return { kind: input.kind, message: JSON.stringify(toUserMessage(message)), key: typeof key === 'string' ? key : null }
}

/**
 * Reads one stored inbox row.
 * @throws HarnessError `SESSION_CORRUPT` for a row this build cannot read
 */
export function decodeInboxRow(row: { id: string; kind: string; message: string | null; key?: string | null }): InboxRow {
  if (row.kind === 'cancel') return { id: row.id, input: { kind: 'cancel' } }
  if ((row.kind === 'followup' || row.kind === 'steer' || row.kind === 'inject') && row.message !== null) {
    try {
      const message = JSON.parse(row.message) as UserMessage
      if (message?.role === 'user' && typeof message.id === 'string') {
        if (row.kind === 'inject') return { id: row.id, input: { kind: 'inject', message } }
        return { id: row.id, input: { kind: row.kind, message, ...(typeof row.key === 'string' ? { key: row.key } : {}) } }
      }
    } catch {
      // reported below
    }
  }
  throw new HarnessError(`inbox row ${row.id} (${row.kind}) is not a readable input`, 'SESSION_CORRUPT')
}

/**
 * Inserts one inbox row and NOTIFYs the owner, in one statement; the row id, or undefined when the input has a
 * submission key that the session's log already holds or a waiting row already has (nothing is inserted).
 * @throws HarnessError `INVALID_INPUT`; the driver's foreign-key error (23503) for an unknown session
 */
export async function insertInboxRow(pool: pg.Pool, t: StoreTables, sessionId: string, input: InboxInput): Promise<string | undefined> {
  const { kind, message, key } = encodeInboxInput(input)
  const sent = await pool.query<{ id: string }>(
    // The log check and the insert are one statement; the partial unique index refuses a key still waiting.
    `WITH i AS (
       INSERT INTO ${t.inbox} (session_id, kind, message, key)
       SELECT $1, $2, $3, $4::text
       WHERE $4::text IS NULL OR NOT EXISTS (
         SELECT 1 FROM ${t.events} e WHERE e.session_id = $1 AND e.type = 'agent/inbox/spliced' AND (e.data::jsonb #>> '{data,key}') = $4::text)
       ON CONFLICT (session_id, key) WHERE key IS NOT NULL DO NOTHING
       RETURNING id)
     SELECT id::text AS id, pg_notify($5, $1) FROM i`,
    [sessionId, kind, message, key, t.inboxChannel],
  )
  return sent.rows[0]?.id
}
