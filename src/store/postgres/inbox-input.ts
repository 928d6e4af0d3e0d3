import { HarnessError } from '../../errors/harness-error.js'
import { toUserMessage } from '../../llm/messages.js'
import type { UserMessage } from '../../llm/types.js'

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
