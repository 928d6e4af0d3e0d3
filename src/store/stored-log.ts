import { homedir } from 'node:os'
import { join } from 'node:path'
import { HarnessError } from '../errors/harness-error.js'
import { EventLog, eventLogOf } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import { Session, type SessionHeader } from '../session/session.js'
import type { VerifiedLog } from '../session/verified-log.js'
import type { StoredSession, TailRepair } from './types.js'

/** What session ids a file or row may be named after: the Session's own rule, so no id can escape a path. */
const SESSION_ID = /^[A-Za-z0-9._-]{1,128}$/

/**
 * Checks a session id before it becomes part of a path or a query.
 * @throws HarnessError `INVALID_SESSION_ID`
 */
export function checkSessionId(id: string): void {
  if (typeof id !== 'string' || !SESSION_ID.test(id)) {
    throw new HarnessError(`session id ${JSON.stringify(id)} must be 1-128 characters of A-Z a-z 0-9 . _ -`, 'INVALID_SESSION_ID')
  }
}

/**
 * Validates a loaded log exactly as the harness will adopt it (envelope, known types, surface rules), so a
 * bad log is refused by the store with its location rather than later without one.
 * @returns the same log with the fold the check built: return that as `StoredSession.log` so the Session that
 * resumes it does not walk it again
 * @param locate - "file:line" (or "db:row") of a seq
 * @throws HarnessError `SESSION_CORRUPT` prefixed with the location of the offending event
 */
export function validateStoredLog(header: SessionHeader, events: EventLog | readonly SessionEvent[], locate: (seq: number) => string, knownTypes?: Iterable<string>): VerifiedLog {
  const log = events instanceof EventLog ? events : eventLogOf(events)
  try {
    return Session.verify({ id: header.id, header, log, ...(knownTypes !== undefined ? { knownTypes } : {}) })
  } catch (error) {
    if (!(error instanceof HarnessError) || error.code !== 'SESSION_CORRUPT') throw error
    // The Session names the seq in its message ("… at seq N: …"); map it to where that event is stored.
    const seq = /at seq (\d+)/.exec(error.message)
    const where = seq === null ? locate(0) : locate(Number(seq[1]))
    throw new HarnessError(`${where}: ${error.message}`, 'SESSION_CORRUPT', { cause: error })
  }
}

/** Checks that a seed is a log of its own: seqs 0, 1, 2, … */
export function checkSeed(id: string, seed: readonly SessionEvent[]): void {
  seed.forEach((event, index) => {
    if (event.seq !== index) throw new HarnessError(`seed of session '${id}' has seq ${event.seq} at index ${index}`, 'SESSION_CORRUPT')
  })
}

/**
 * The default session directory of the CLI: `$LEDGERLOOP_HOME/sessions`, with `LEDGERLOOP_HOME` defaulting to
 * `~/.ledgerloop`.
 */
export function defaultSessionsDir(env: NodeJS.ProcessEnv = process.env): string {
  const home = env.LEDGERLOOP_HOME
  return join(home !== undefined && home !== '' ? home : join(homedir(), '.ledgerloop'), 'sessions')
}

/**
 * A {@link StoredSession} over a compact log: `log` as is, and `events` materialised from it on first read
 * (then the same array on every read), so a caller that adopts `log` never pays for a million event objects.
 */
export function storedSession(header: SessionHeader, log: EventLog, tailRepair?: TailRepair): StoredSession {
  let events: SessionEvent[] | undefined
  const stored = {
    header,
    get events(): SessionEvent[] {
      events ??= log.toArray()
      return events
    },
    ...(tailRepair !== undefined ? { tailRepair } : {}),
  }
  // Not enumerable: a stored session still compares and prints as {header, events, tailRepair?}.
  Object.defineProperty(stored, 'log', { value: log, enumerable: false })
  return stored as StoredSession
}
