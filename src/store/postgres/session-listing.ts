import type pg from 'pg'
import { clipLine, quarantineFields, quarantineReasonOf, TITLE_MAX } from '../session-digest.js'
import { parseHeaderRecord, summaryLinks } from '../session-file.js'
import { sessionList } from '../session-list.js'
import type { SessionList, SessionListOptions } from '../types.js'
import type { SessionEvent } from '../../session/events.js'
import type { StoreTables } from './schema.js'
import { grepNeedle } from '../content-search.js'
import { containsPattern, contentHitsJoin, contentMatches } from './content-search.js'

/**
 * One page of `PostgresStore.list`: sessions newest first from the `sessions` table (its `updated_at` index);
 * `search` matches the stored title (the first prompt, clipped to 80 characters) or an id prefix.
 *
 * A session is listed `quarantined` from its row's status, which its writers keep from the log's quarantine
 * marks (`session/quarantined` sets it; a lift, like a turn's start or end, moves it on). A "resume anyway" asked
 * of a session nobody owns marks the row `pending` with `force_resume` before any writer has lifted the
 * quarantine in the log: it is still quarantined until one has. The reason is read from the quarantine event
 * itself, for those rows only (the last mark of the session: found through the events' primary key).
 * @param where - names a session's header in error messages (never the connection string)
 */
export async function listSessions(pool: pg.Pool, t: StoreTables, options: SessionListOptions, where: (id: string) => string): Promise<SessionList> {
  const search = (options.search ?? '').toLowerCase()
  const grep = grepNeedle(options.grep)
  let filter = search === '' ? '' : "WHERE (strpos(lower(coalesce(title, '')), $1) > 0 OR left(lower(id), length($1)) = $1)"
  const params: unknown[] = search === '' ? [] : [search]
  // `grep`: only sessions the content index has a match for (see content-search.ts).
  if (grep !== undefined) {
    params.push(containsPattern(grep))
    filter = `${contentHitsJoin(t, params.length)} ${filter}`
  }
  const hitSeq = grep === undefined ? '' : ', hit_seq'
  const limit = options.limit === undefined ? null : Math.max(0, options.limit)
  const offset = Math.max(0, options.offset ?? 0)
  const found = await pool.query<{ id: string; header: string; created_at: number; updated_at: number; title: string | null; total: string; quarantined: boolean; mark: string | null; hit_seq?: number }>(
    `WITH page AS (
       SELECT id, header, created_at::float8 AS created_at, (extract(epoch FROM updated_at) * 1000)::float8 AS updated_at, title,
              count(*) OVER () AS total, (status = 'quarantined' OR (status = 'pending' AND force_resume)) AS quarantined${hitSeq}
       FROM ${t.sessions} ${filter} ORDER BY updated_at DESC, id LIMIT $${params.length + 1} OFFSET $${params.length + 2})
     SELECT page.*, mark.data AS mark FROM page
     LEFT JOIN LATERAL (
       SELECT e.data FROM ${t.events} e WHERE page.quarantined AND e.session_id = page.id AND e.type = 'session/quarantined'
       ORDER BY e.seq DESC LIMIT 1) mark ON true
     ORDER BY page.updated_at DESC, page.id`,
    [...params, limit, offset],
  )
  // A page past the end has no rows to carry the window count: count separately then.
  const total =
    found.rows.length > 0
      ? Number(found.rows[0]?.total)
      : Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ${t.sessions} ${filter}`, params)).rows[0]?.n ?? 0)
  const matches = grep === undefined ? undefined : await contentMatches(pool, t, found.rows.map((r) => ({ id: r.id, seq: r.hit_seq as number })), grep)
  return sessionList(
    found.rows.map((r) => {
      const match = matches?.get(r.id)
      const base = {
        id: r.id,
        createdAt: r.created_at,
        updatedAt: Math.round(r.updated_at),
        ...(r.title !== null ? { title: clipLine(r.title, TITLE_MAX), firstPrompt: r.title } : {}),
        ...(r.quarantined ? quarantineFields(reasonOf(r.mark)) : {}),
        ...(match !== undefined ? { match } : {}),
      }
      try {
        return { ...base, ...summaryLinks(parseHeaderRecord(r.header, r.id, where(r.id))) }
      } catch (error) {
        return { ...base, problem: (error as Error).message }
      }
    }),
    total,
  )
}

// The reason of a stored `session/quarantined` event (its row's `data` is the whole stored record; a default
// when it cannot be read).
function reasonOf(record: string | null): string {
  if (record === null) return 'quarantined'
  try {
    return quarantineReasonOf(JSON.parse(record) as Pick<SessionEvent, 'data'>)
  } catch {
    return 'quarantined'
  }
}
