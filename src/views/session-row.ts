// The one builder of session-list rows. `ledgerloop sessions` and the server's `GET /api/sessions` used to build
// their rows each their own way; now both take the facts from here and differ only in what their documented
// shapes call them (the CLI's `--json` keeps `pricesAsOf` and its store fields, the server keeps `asOf` and adds
// the run status). Pure: the shells read the logs, this only looks at what they read.
import type { UsageTotals } from '../llm/token-usage.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'
import { costFigure, type CostFigure, type PricingCatalogue } from './cost.js'
import { summarizeLog } from './session-summary.js'

/** What a store's listing says about a session before its log is read (a store's `SessionSummary` is one). */
export interface ListedSession {
  readonly id: string
  /** ms since epoch of the last write. */
  readonly updatedAt: number
  readonly sizeBytes?: number
  readonly parentSession?: string
  /** A rerun's original session. */
  readonly forkedFrom?: string
  readonly parentCallId?: string
  readonly agentProfile?: string
  /** The listing's own summary of the log, shown when the log cannot be read. */
  readonly title?: string
  readonly turns?: number
  readonly lastReason?: string | null
}

/** The facts of one session-list row, before a shell names them for its output. */
export interface SessionRowFacts {
  readonly id: string
  /** ms since epoch of the last write, as the listing said. */
  readonly updatedAt: number
  /** The first prompt, clipped to one line ('' before any). */
  readonly title: string
  /** Turns ended so far. */
  readonly turns: number
  /** How the last turn ended, or null before any. */
  readonly lastReason: TurnEndReason['kind'] | null
  /** Token totals of every model response; absent when the log could not be read. */
  readonly usage?: UsageTotals
  /** What the session cost, when a catalogue was given and its models have prices there. */
  readonly cost?: CostFigure
  /** Why the log could not be read, when it could not (the other facts then come from the listing). */
  readonly problem?: string
  readonly sizeBytes?: number
  readonly parentSession?: string
  /** Set on a rerun's session: the recorded session it reran. */
  readonly forkedFrom?: string
  /** Set on a sub-agent's session: the parent's tool call that started it. */
  readonly parentCallId?: string
  /** A sub-agent's profile. */
  readonly agentProfile?: string
}

/**
 * The row of a session whose log was read: title, turns, last end reason and usage from the events, cost priced
 * with `pricing`, the store's links and size from the listing.
 * @example
 * ```ts
 * const row = sessionRowFacts(summary, (await store.read(summary.id)).events, DEEPSEEK_MODELS)
 * ```
 */
export function sessionRowFacts(listed: ListedSession, events: readonly SessionEvent[], pricing: PricingCatalogue | undefined): SessionRowFacts {
  const cost = costFigure(events, pricing)
  return { ...listingFacts(listed), ...summarizeLog(events), ...(cost !== undefined ? { cost } : {}) }
}

/** The row of a session whose log could not be read: what the listing knows, and why. */
export function unreadableSessionRow(listed: ListedSession, problem: string): SessionRowFacts {
  return {
    ...listingFacts(listed),
    title: listed.title ?? '',
    turns: listed.turns ?? 0,
    // The listing's reason was written from a turn end of this log, so it is one of the kinds.
    lastReason: (listed.lastReason ?? null) as SessionRowFacts['lastReason'],
    problem,
  }
}

function listingFacts(listed: ListedSession): Pick<SessionRowFacts, 'id' | 'updatedAt' | 'sizeBytes' | 'parentSession' | 'forkedFrom' | 'parentCallId' | 'agentProfile'> {
  return {
    id: listed.id,
    updatedAt: listed.updatedAt,
    ...(listed.sizeBytes !== undefined ? { sizeBytes: listed.sizeBytes } : {}),
    ...(listed.parentSession !== undefined ? { parentSession: listed.parentSession } : {}),
    ...(listed.forkedFrom !== undefined ? { forkedFrom: listed.forkedFrom } : {}),
    ...(listed.parentCallId !== undefined ? { parentCallId: listed.parentCallId } : {}),
    ...(listed.agentProfile !== undefined ? { agentProfile: listed.agentProfile } : {}),
  }
}
