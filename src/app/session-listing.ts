// Owns the one way a front end lists a store's sessions: `ledgerloop sessions` (and chat's `/sessions`) and the
// server's `GET /api/sessions` both take their matches from here, so `--search` and `?q=` mean the same thing —
// the store's own rule (title or first prompt contains the text, case-insensitive, or the id starts with it) —
// and a filter of their own (`--roots`, `?status=`) is applied to the matches the same way. The rows are then
// built by the one builder, views/session-row.ts.
import { pageOf } from '../store/session-list.js'
import type { SessionStore, SessionSummary } from '../store/types.js'

/** What to list: the store's search, a page, and a filter the front end applies to the matches. */
export interface SessionQuery {
  /** Case-insensitive part of the title or first prompt, or a prefix of the id ('' or absent: every session). */
  readonly search?: string
  /** Text of the sessions' prompts, answers or tool output (the store's `list({ grep })`); rows then carry `match`. */
  readonly grep?: string
  /** At most this many rows (default: all). */
  readonly limit?: number
  /** Rows to skip first, for paging (default 0). */
  readonly offset?: number
  /** Keeps a match (a root session, a run status). With it, every match is listed and filtered before paging. */
  readonly keep?: (summary: SessionSummary) => boolean
}

/** One page of matches, newest first. */
export interface SessionMatches {
  readonly sessions: readonly SessionSummary[]
  /** How many sessions matched (and were kept) before the page was cut. */
  readonly total: number
  /** The store's note about its session index (rebuilt to answer), when it made one. */
  readonly indexNote?: string
}

/**
 * The sessions of `store` that match `query.search` and that `query.keep` keeps, newest first, one page.
 * Without `keep` the store cuts the page (from its session index or table: the work grows with the page, not
 * with the number of sessions); with it, every match is listed and filtered here. A store that ignores list
 * options (written before they existed) lists everything, and the same rule is applied here (`pageOf`).
 * @example
 * ```ts
 * const { sessions, total } = await listSessions(store, { search: 'deploy', limit: 20, keep: (s) => s.parentCallId === undefined })
 * ```
 */
export async function listSessions(store: Pick<SessionStore, 'list'>, query: SessionQuery = {}): Promise<SessionMatches> {
  const search = {
    ...(query.search !== undefined && query.search !== '' ? { search: query.search } : {}),
    ...(query.grep !== undefined && query.grep.trim() !== '' ? { grep: query.grep } : {}),
  }
  const page = { ...(query.offset !== undefined ? { offset: query.offset } : {}), ...(query.limit !== undefined ? { limit: query.limit } : {}) }
  const keep = query.keep
  if (keep === undefined) {
    const listed = await store.list({ ...search, ...page })
    const sessions = listed.total === undefined ? pageOf(listed, { ...search, ...page }) : listed
    return { sessions, total: sessions.total ?? sessions.length, ...(listed.indexNote !== undefined ? { indexNote: listed.indexNote } : {}) }
  }
  const listed = await store.list(search)
  const kept = (listed.total === undefined ? pageOf(listed, search) : listed).filter(keep)
  const offset = Math.max(0, query.offset ?? 0)
  const sessions = kept.slice(offset, query.limit === undefined ? undefined : offset + Math.max(0, query.limit))
  return { sessions, total: kept.length, ...(listed.indexNote !== undefined ? { indexNote: listed.indexNote } : {}) }
}
