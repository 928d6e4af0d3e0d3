import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ContentBlock, UserMessage } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import { QUARANTINE_LIFTED, QUARANTINED } from '../session/continuation.js'
import { parseHeaderRecord, summaryLinks } from './session-file.js'
import type { SessionSummary } from './types.js'

/** How much of the first prompt a listing keeps (one line, whitespace collapsed). */
export const FIRST_PROMPT_MAX = 200
/** How long a title is: the first prompt clipped, as `sessions` and `serve` show it. */
export const TITLE_MAX = 60

/** Collapses whitespace and clips to `max` characters (with `…` when cut). */
export function clipLine(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`
}

/** The text of a user prompt's blocks, joined. */
function textOf(content: readonly ContentBlock[]): string {
  return content.map((b) => (b.type === 'text' ? b.text : '')).join(' ')
}

/** The prompt a `user/message` event carries when a user (not a tool or the harness) sent it. */
export function userPromptOf(event: Pick<SessionEvent, 'type' | 'data'>): string | undefined {
  if (event.type !== 'user/message') return undefined
  const message = event.data as unknown as UserMessage
  return message.source?.kind === 'user' && Array.isArray(message.content) ? textOf(message.content) : undefined
}

/** What a listing knows of a session's content, kept up to date event by event by its writer. */
export interface DigestFields {
  /** The first user prompt, clipped to {@link FIRST_PROMPT_MAX}; absent before any. */
  readonly firstPrompt?: string
  /** Turns ended so far. */
  readonly turns: number
  /** How the last turn ended, or null before any. */
  readonly lastReason: TurnEndReason['kind'] | null
  /** The reason of the quarantine in force, when the log's last quarantine mark is `session/quarantined`. */
  readonly quarantine?: string
}

/** The reason a `session/quarantined` event carries (a default when it carries none). */
export function quarantineReasonOf(event: Pick<SessionEvent, 'data'>): string {
  const reason = (event.data as { reason?: unknown } | undefined)?.reason
  return typeof reason === 'string' ? reason : 'quarantined'
}

/**
 * What the last quarantine mark among `events` says: `{ reason }` for a quarantine, `{ reason: null }` for a
 * lift, undefined when there is no mark (the session's quarantine state is what it was before them).
 */
export function lastQuarantineMark(events: Iterable<Pick<SessionEvent, 'type' | 'data'>>): { readonly reason: string | null } | undefined {
  let mark: { reason: string | null } | undefined
  for (const event of events) {
    if (event.type === QUARANTINED) mark = { reason: quarantineReasonOf(event) }
    else if (event.type === QUARANTINE_LIFTED) mark = { reason: null }
  }
  return mark
}

/**
 * The running summary of one session's log (first prompt, turns, last reason), fed every committed batch by
 * its writer, so a store can keep a listing up to date without ever reading the log again.
 */
export class SessionDigest implements DigestFields {
  firstPrompt: string | undefined
  turns = 0
  lastReason: TurnEndReason['kind'] | null = null
  quarantine: string | undefined

  /**
   * Folds events in.
   * @returns whether any of them ended a turn or a fork's seed, or quarantined the session or lifted its
   *   quarantine (the moments a listing is refreshed)
   */
  observe(events: Iterable<SessionEvent>): boolean {
    let boundary = false
    for (const event of events) {
      if (event.type === 'turn/end') {
        this.turns++
        this.lastReason = (event.data as { reason: TurnEndReason }).reason.kind
        boundary = true
      } else if (event.type === 'session/end-seed') boundary = true
      else if (event.type === QUARANTINED) {
        this.quarantine = quarantineReasonOf(event)
        boundary = true
      } else if (event.type === QUARANTINE_LIFTED) {
        this.quarantine = undefined
        boundary = true
      } else if (this.firstPrompt === undefined) {
        const prompt = userPromptOf(event)
        if (prompt !== undefined) this.firstPrompt = clipLine(prompt, FIRST_PROMPT_MAX)
      }
    }
    return boundary
  }

  /** The summary fields of this digest. */
  fields(): Pick<SessionSummary, 'title' | 'firstPrompt' | 'turns' | 'lastReason' | 'status' | 'quarantineReason'> {
    return {
      ...(this.firstPrompt !== undefined ? { title: clipLine(this.firstPrompt, TITLE_MAX), firstPrompt: this.firstPrompt } : {}),
      turns: this.turns,
      lastReason: this.lastReason,
      ...quarantineFields(this.quarantine),
    }
  }
}

/** The summary fields of a quarantine in force (`status` and its reason), none without one. */
export function quarantineFields(reason: string | null | undefined): Pick<SessionSummary, 'status' | 'quarantineReason'> {
  return typeof reason === 'string' ? { status: 'quarantined', quarantineReason: reason } : {}
}

/** A summary row of a session from its header and digest. */
export function summaryOf(header: SessionHeader, digest: SessionDigest, updatedAt: number, sizeBytes?: number): SessionSummary {
  return {
    id: header.id,
    createdAt: header.createdAt,
    updatedAt,
    ...(sizeBytes !== undefined ? { sizeBytes } : {}),
    ...summaryLinks(header),
    ...digest.fields(),
  }
}

const TURN_END = Buffer.from('\n{"type":"turn/end"')
const USER_MESSAGE = Buffer.from('\n{"type":"user/message"')
const QUARANTINE_MARK = Buffer.from(`\n{"type":"${QUARANTINED}"`)
const LIFT_MARK = Buffer.from(`\n{"type":"${QUARANTINE_LIFTED}"`)

/**
 * Digests a stored JSONL log without decoding it: finds the first user prompt and every `turn/end` line by
 * their prefix (events are stored with `type` first) and parses only those lines. Lines that do not parse
 * (a torn tail) are skipped: this feeds a listing, never the log's truth.
 */
export function digestLogText(bytes: Buffer): SessionDigest {
  const digest = new SessionDigest()
  const lineAt = (start: number): unknown => {
    const end = bytes.indexOf(10, start + 1)
    if (end < 0) return undefined
    try {
      return JSON.parse(bytes.toString('utf8', start + 1, end))
    } catch {
      return undefined
    }
  }
  for (let at = bytes.indexOf(USER_MESSAGE); at >= 0 && digest.firstPrompt === undefined; at = bytes.indexOf(USER_MESSAGE, at + 1)) {
    const event = lineAt(at) as SessionEvent | undefined
    if (event !== undefined) digest.observe([event])
  }
  let last = -1
  // Only complete lines: a torn `turn/end` is not a turn ended (loading cuts it off).
  const complete = bytes.lastIndexOf(10)
  for (let at = bytes.indexOf(TURN_END); at >= 0 && at < complete; at = bytes.indexOf(TURN_END, at + 1)) {
    digest.turns++
    last = at
  }
  if (last >= 0) {
    const event = lineAt(last) as { data?: { reason?: { kind?: TurnEndReason['kind'] } } } | undefined
    digest.lastReason = event?.data?.reason?.kind ?? null
  }
  // The last quarantine mark of a complete line decides: a quarantine not lifted since is in force.
  const quarantinedAt = lastCompleteIndexOf(bytes, QUARANTINE_MARK, complete)
  if (quarantinedAt >= 0 && quarantinedAt > lastCompleteIndexOf(bytes, LIFT_MARK, complete)) {
    const event = lineAt(quarantinedAt) as SessionEvent | undefined
    digest.quarantine = event !== undefined ? quarantineReasonOf(event) : 'quarantined'
  }
  return digest
}

// The last occurrence of `needle` that starts before `complete` (the last newline: later bytes are a torn line).
function lastCompleteIndexOf(bytes: Buffer, needle: Buffer, complete: number): number {
  for (let at = bytes.lastIndexOf(needle); at >= 0; at = at === 0 ? -1 : bytes.lastIndexOf(needle, at - 1)) if (at < complete) return at
  return -1
}

/**
 * A listing's summary of one JSONL log, read from its file (for the session index's rebuild and its stale
 * entries): the header parsed, the rest only searched for the first prompt and the turn ends
 * ({@link digestLogText}). A file whose header cannot be read is summarised with `problem` set.
 * @returns undefined when the file is gone
 */
export function summarizeSessionFile(dir: string, id: string): SessionSummary | undefined {
  const path = join(dir, `${id}.jsonl`)
  let bytes: Buffer
  let mtimeMs: number
  let size: number
  try {
    // O_NOFOLLOW: a session file that is a symlink is never followed.
    const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW)
    try {
      const stats = fstatSync(fd)
      mtimeMs = stats.mtimeMs
      size = stats.size
      bytes = readFileSync(fd)
    } finally {
      closeSync(fd)
    }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    return { id, createdAt: 0, updatedAt: 0, problem: (error as Error).message }
  }
  const base = { id, createdAt: 0, updatedAt: mtimeMs, sizeBytes: size }
  const end = bytes.indexOf(10)
  if (end < 0) return { ...base, problem: `${path}:1: the header line is incomplete` }
  try {
    const header = parseHeaderRecord(bytes.toString('utf8', 0, end), id, `${path}:1`)
    // The size of its complete lines, as a writer records it: a torn last line is not committed, and counting
    // it would make the session index witness more than was ever committed (see judgeCommitted).
    return summaryOf(header, digestLogText(bytes), mtimeMs, bytes.lastIndexOf(10) + 1)
  } catch (error) {
    return { ...base, problem: (error as Error).message }
  }
}
