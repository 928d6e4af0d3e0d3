// The claim statements of `PostgresStore.claimSessions` (docs/scaling.md, "Poison sessions and bystanders").
// A claimable session is one that needs an owner: input waiting with no live owner, an expired lease, or a
// release marked `pending`. Among them, a session whose row says a turn was running when its owner went away
// (`status = 'running'`: the owner crashed or stalled mid-turn), or that waits for a forced resume, needs a
// crash continuation; a worker claims such a session only when it can run the continuation alone.
import type pg from 'pg'
import type { StoreTables } from './schema.js'

/** Which claimable sessions a claim takes: `any`, only those needing a crash continuation, or all but those. */
export type ClaimKind = 'any' | 'continuations' | 'others'

/** One claimed row: the session, its new epoch, and whether it needs a crash continuation. */
export interface ClaimedSessionRow {
  readonly id: string
  readonly epoch: number
  readonly continuation: boolean
}

/** The claimable sessions (`s` the sessions table), minus `quarantined` ones and the ids in `$excluded`. */
function claimable(t: StoreTables, excluded: string): string {
  return `((s.owner IS NOT NULL AND s.lease_until < now())
            OR (s.owner IS NULL AND (s.status = 'pending' OR EXISTS (SELECT 1 FROM ${t.inbox} i WHERE i.session_id = s.id))))
         AND s.status <> 'quarantined' AND NOT (s.id = ANY(${excluded}::text[]))`
}

// A turn was open when its owner went away, or "resume anyway" was asked: the work goes on as a continuation.
const NEEDS_CONTINUATION = `(s.status = 'running' OR s.force_resume)`

function kindFilter(kind: ClaimKind): string {
  if (kind === 'continuations') return `AND ${NEEDS_CONTINUATION}`
  if (kind === 'others') return `AND NOT ${NEEDS_CONTINUATION}`
  return ''
}

/**
 * Claims up to `limit` claimable sessions of `kind` for `ownerId` (one statement with `FOR UPDATE SKIP LOCKED`,
 * so concurrent workers never claim the same session), oldest change first.
 */
export async function claimSessionRows(
  pool: pg.Pool,
  t: StoreTables,
  claim: { readonly limit: number; readonly ownerId: string; readonly leaseMs: number; readonly exclude: readonly string[]; readonly kind: ClaimKind },
): Promise<ClaimedSessionRow[]> {
  const claimed = await pool.query<ClaimedSessionRow>(
    `WITH c AS (
       SELECT s.id, ${NEEDS_CONTINUATION} AS continuation FROM ${t.sessions} s
       WHERE ${claimable(t, '$4')} ${kindFilter(claim.kind)}
       ORDER BY s.updated_at
       LIMIT $1
       FOR UPDATE SKIP LOCKED)
     UPDATE ${t.sessions} s SET owner = $2, epoch = s.epoch + 1, lease_until = now() + $3 * interval '1 millisecond'
     FROM c WHERE s.id = c.id
     RETURNING s.id, s.epoch, c.continuation`,
    [claim.limit, claim.ownerId, claim.leaseMs, claim.exclude],
  )
  return claimed.rows
}

/** How many claimable sessions (not in `exclude`) wait for a crash continuation. */
export async function waitingContinuations(pool: pg.Pool, t: StoreTables, exclude: readonly string[]): Promise<number> {
  const found = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.sessions} s WHERE ${claimable(t, '$1')} AND ${NEEDS_CONTINUATION}`, [exclude])
  return found.rows[0]?.n ?? 0
}
