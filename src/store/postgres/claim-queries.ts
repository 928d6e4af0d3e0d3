// The claim statements of `PostgresStore.claimSessions` (docs/scaling.md, "Poison sessions and bystanders").
// A claimable session is one that needs an owner: input waiting with no live owner, an expired lease, or a
// release marked `pending`. Among them, a session whose row says a turn was running when its owner went away
// (`status = 'running'`: the owner crashed or stalled mid-turn), or that waits for a forced resume, needs a
// crash continuation; a worker claims such a session only when it can run the continuation alone.
import type pg from 'pg'
import type { StoreTables } from './schema.js'

/** Which claimable sessions a claim takes: `any`, only those needing a crash continuation, or all but those. */
export type ClaimKind = 'any' | 'continuations' | 'others'

/**
 * One claimed row: the session, its new epoch, whether it needs a crash continuation, and what opening it needs
 * of the row (so `open` reads only the log): nobody else writes the row while the lease is this claim's.
 */
export interface ClaimedSessionRow {
  readonly id: string
  readonly epoch: number
  readonly continuation: boolean
  readonly header: string
  readonly head_seq: number
  readonly titled: boolean
  /** A forced resume was asked (it can only be asked while nobody owns the session, so this stays true). */
  readonly force_resume: boolean
}

/** What a claim statement returns of each claimed row (`s` the updated sessions row). */
const CLAIMED = `s.id, s.epoch, s.header, s.head_seq, s.title IS NOT NULL AS titled, s.force_resume`

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
     RETURNING ${CLAIMED}, c.continuation`,
    [claim.limit, claim.ownerId, claim.leaseMs, claim.exclude],
  )
  return claimed.rows
}

/**
 * A worker's usual claim in one round trip: whether claimable sessions wait for a crash continuation and, only
 * when none does, up to `limit` (0 for none: only the count) of the others. A worker that learns a continuation
 * waits claims nothing else (it drains, then claims the continuation alone with {@link claimSessionRows}).
 */
export async function claimUnlessContinuations(
  pool: pg.Pool,
  t: StoreTables,
  claim: { readonly limit: number; readonly ownerId: string; readonly leaseMs: number; readonly exclude: readonly string[] },
): Promise<{ readonly waiting: number; readonly rows: ClaimedSessionRow[] }> {
  const claimed = await pool.query<ClaimedSessionRow & { waiting: number }>(
    // Whether one waits is all the worker needs (LIMIT 1), not how many. The LEFT JOIN keeps the count's row
    // when nothing was claimed.
    `WITH w AS (
       SELECT count(*)::int AS n FROM (SELECT 1 FROM ${t.sessions} s WHERE ${claimable(t, '$4')} AND ${NEEDS_CONTINUATION} LIMIT 1) x),
     c AS (
       SELECT s.id FROM ${t.sessions} s
       WHERE ${claimable(t, '$4')} AND NOT ${NEEDS_CONTINUATION} AND (SELECT n FROM w) = 0
       ORDER BY s.updated_at
       LIMIT $1
       FOR UPDATE SKIP LOCKED),
     u AS (
       UPDATE ${t.sessions} s SET owner = $2, epoch = s.epoch + 1, lease_until = now() + $3 * interval '1 millisecond'
       FROM c WHERE s.id = c.id
       RETURNING ${CLAIMED}, false AS continuation)
     SELECT w.n AS waiting, u.* FROM w LEFT JOIN u ON true`,
    [claim.limit, claim.ownerId, claim.leaseMs, claim.exclude],
  )
  const waiting = claimed.rows[0]?.waiting ?? 0
  return { waiting, rows: claimed.rows.filter((r) => r.id !== null).map(({ waiting: _, ...row }) => row) }
}

/** Claims session `id` for `ownerId` when nobody holds a live lease on it (`open` of a session no one claimed). */
export async function claimOneRow(pool: pg.Pool, t: StoreTables, id: string, ownerId: string, leaseMs: number): Promise<ClaimedSessionRow | undefined> {
  const claimed = await pool.query<ClaimedSessionRow>(
    `WITH c AS (SELECT id FROM ${t.sessions} WHERE id = $1 AND (owner IS NULL OR lease_until < now()) FOR UPDATE SKIP LOCKED)
     UPDATE ${t.sessions} s SET owner = $2, epoch = s.epoch + 1, lease_until = now() + $3 * interval '1 millisecond'
     FROM c WHERE s.id = c.id
     RETURNING ${CLAIMED}, ${NEEDS_CONTINUATION} AS continuation`,
    [id, ownerId, leaseMs],
  )
  return claimed.rows[0]
}

/** Renews the leases `ids` at `epochs` in one statement; returns the ids still held (the rest were taken over). */
export async function renewLeaseRows(pool: pg.Pool, t: StoreTables, ids: readonly string[], epochs: readonly number[], leaseMs: number): Promise<Set<string>> {
  const renewed = await pool.query<{ id: string }>(
    `UPDATE ${t.sessions} s SET lease_until = now() + $3 * interval '1 millisecond'
     FROM unnest($1::text[], $2::int[]) AS o(id, epoch)
     WHERE s.id = o.id AND s.epoch = o.epoch
     RETURNING s.id`,
    [ids, epochs, leaseMs],
  )
  return new Set(renewed.rows.map((r) => r.id))
}

/** How many claimable sessions (not in `exclude`) wait for a crash continuation. */
export async function waitingContinuations(pool: pg.Pool, t: StoreTables, exclude: readonly string[]): Promise<number> {
  const found = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t.sessions} s WHERE ${claimable(t, '$1')} AND ${NEEDS_CONTINUATION}`, [exclude])
  return found.rows[0]?.n ?? 0
}
