import { listSessions } from '../app/session-listing.js'
import type { SessionStore, SessionSummary } from '../store/types.js'
import type { ContentMatch } from '../store/content-search.js'
import type { CostFigure, PricingCatalogue } from '../views/cost.js'
import { sessionRowFacts, unreadableSessionRow, type SessionRowFacts } from '../views/session-row.js'
import type { UsageTotals } from '../llm/token-usage.js'
import { quarantineOf, type QuarantineFact } from '../views/quarantine.js'
import type { SessionEventFeed, SessionInputPort, SessionRunStatus } from './session-ports.js'

/** One row of `GET /api/sessions`. */
export interface SessionListRow {
  readonly id: string
  /** The first prompt, clipped ('' before any). */
  readonly title: string
  /** ISO time of the last write. */
  readonly updatedAt: string
  readonly turns: number
  /** How the last turn ended, or null before any. */
  readonly lastReason: string | null
  readonly status: SessionRunStatus
  readonly usage?: UsageTotals
  readonly parentSession?: string
  /** Why the session could not be read, when it could not. */
  readonly problem?: string
  /** What the session cost from its logged usage, when its models have prices in the server's catalogue. */
  readonly cost?: CostFigure
  /** The quarantine in force, when the session is quarantined (no worker claims it; resume with force). */
  readonly quarantine?: QuarantineFact
  /** With a worker fleet: the worker holding the session's lease. */
  readonly owner?: string
  /** With `grep`: where the text was found. */
  readonly match?: ContentMatch
}

/** Query of {@link SessionDirectory.list}. */
export interface SessionListQuery {
  readonly status?: SessionRunStatus
  /** Case-insensitive part of the title or first prompt, or a prefix of the id: the store's `list({ search })` rule. */
  readonly q?: string
  /** Text of the prompts, answers or tool output: the store's `list({ grep })`; rows then carry `match`. */
  readonly grep?: string
  readonly limit: number
  readonly offset: number
}

interface CachedSummary {
  readonly key: string
  readonly facts: SessionRowFacts
  readonly quarantine: QuarantineFact | undefined
}

/**
 * The session list of the server: the store's list joined with a summary of each log, cached per session
 * until it changes (a stored session by its write time, one running here by its length), so listing is cheap
 * while sessions run.
 */
export class SessionDirectory {
  readonly #store: SessionStore
  readonly #feed: SessionEventFeed
  readonly #input: SessionInputPort
  readonly #cache = new Map<string, CachedSummary>()

  readonly #pricing: PricingCatalogue | undefined

  constructor(store: SessionStore, feed: SessionEventFeed, input: SessionInputPort, pricing?: PricingCatalogue) {
    this.#store = store
    this.#feed = feed
    this.#input = input
    this.#pricing = pricing
  }

  /**
   * Newest first, filtered, one page of rows plus the total that matched, with the CLI's search and filter
   * (app/session-listing.ts). Without a status filter the page comes from the store's listing (its session
   * index or table: the work grows with the page, not with the number of sessions); a status filter needs
   * every session's run status, so it lists every match, then sorts and pages by newest activity.
   */
  async list(query: SessionListQuery): Promise<{ sessions: SessionListRow[]; total: number }> {
    const search = query.q?.trim() ?? ''
    const grep = query.grep !== undefined && query.grep.trim() !== '' ? { grep: query.grep } : {}
    const status = query.status
    if (status === undefined) {
      const matches = await listSessions(this.#store, { search, ...grep, limit: query.limit, offset: query.offset })
      const rows: SessionListRow[] = []
      for (const stored of matches.sessions) rows.push(await this.#row(stored, this.#input.status(stored.id)))
      return { sessions: rows.sort(byActivity), total: matches.total }
    }
    const matches = await listSessions(this.#store, { search, ...grep, keep: (stored) => this.#input.status(stored.id) === status })
    const rows: SessionListRow[] = []
    for (const stored of matches.sessions) rows.push(await this.#row(stored, status))
    rows.sort(byActivity)
    return { sessions: rows.slice(query.offset, query.offset + query.limit), total: rows.length }
  }

  // One row: the shared row facts of the log (cached until the session changes: a stored one by its write
  // time, one running here by its length) with its run status and its newest activity.
  async #row(stored: SessionSummary, status: SessionRunStatus): Promise<SessionListRow> {
    let facts: SessionRowFacts
    let quarantine: QuarantineFact | undefined
    let updatedAt = stored.updatedAt
    try {
      const snapshot = status === 'stored' ? undefined : await this.#feed.read(stored.id)
      const key = snapshot !== undefined ? `live:${snapshot.events.length}` : `stored:${stored.updatedAt}`
      if (snapshot !== undefined) updatedAt = Math.max(updatedAt, snapshot.events[snapshot.events.length - 1]?.time ?? 0)
      const cached = this.#cache.get(stored.id)
      if (cached !== undefined && cached.key === key) ({ facts, quarantine } = cached)
      else {
        const events = snapshot?.events ?? (await this.#feed.read(stored.id)).events
        facts = sessionRowFacts(stored, events, this.#pricing)
        quarantine = quarantineOf(events)
        this.#cache.set(stored.id, { key, facts, quarantine })
      }
    } catch (error) {
      facts = unreadableSessionRow(stored, (error as Error).message)
    }
    const owner = this.#input.owner?.(stored.id)
    return {
      ...serverRow(facts, status, updatedAt),
      ...(quarantine !== undefined ? { quarantine } : {}),
      ...(owner !== undefined ? { owner } : {}),
      ...(stored.match !== undefined ? { match: stored.match } : {}),
    }
  }
}

/**
 * The shared row facts under the names `GET /api/sessions` has always answered with, in its order: no store
 * size or sub-agent fields, `parentSession` on readable rows only, the run status and the newest activity last.
 */
function serverRow(f: SessionRowFacts, status: SessionRunStatus, updatedAt: number): SessionListRow {
  return {
    id: f.id,
    title: f.title,
    turns: f.turns,
    lastReason: f.lastReason,
    ...(f.problem !== undefined
      ? { problem: f.problem }
      : {
          ...(f.usage !== undefined ? { usage: f.usage } : {}),
          ...(f.cost !== undefined ? { cost: f.cost } : {}),
          ...(f.parentSession !== undefined ? { parentSession: f.parentSession } : {}),
        }),
    status,
    updatedAt: new Date(updatedAt).toISOString(),
  }
}

// Newest activity first; equal times by id, so a page boundary does not depend on the store's listing order.
function byActivity(a: SessionListRow, b: SessionListRow): number {
  return a.updatedAt < b.updatedAt ? 1 : a.updatedAt > b.updatedAt ? -1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
}
