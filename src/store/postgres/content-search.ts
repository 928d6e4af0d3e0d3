// `PostgresStore.list({ grep })`: which sessions the content index (schema version 7, the `content` table) has a
// match for, and the match of each listed one. Matching is `lower(body) LIKE '%needle%'`: substring and
// case-insensitive, answered by the pg_trgm GIN index on lower(body) where the extension is installed.
import type pg from 'pg'
import { matchInText, needleMatcher, snippetAt, type ContentMatch, type ContentPart } from '../content-search.js'
import type { StoreTables } from './schema.js'

/**
 * The join that keeps only sessions with a match, naming each one's earliest matching seq `hit_seq`.
 * @param param - the positional parameter number the needle's pattern takes
 */
export function contentHitsJoin(t: StoreTables, param: number): string {
  return `JOIN (SELECT session_id AS hit_id, min(seq) AS hit_seq FROM ${t.content} WHERE lower(body) LIKE lower($${param}) ESCAPE '\\' GROUP BY session_id) hits ON hits.hit_id = id`
}

/** The LIKE pattern of a needle anywhere in a text (`\` escapes LIKE's own characters). */
export function containsPattern(needle: string): string {
  return `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/**
 * The matches (seq, part, snippet) of listed sessions, by id, from their earliest matching rows. The snippet is
 * found with the harness's own case-insensitive rule; where PostgreSQL's lower() found a row that rule does not
 * (a rare Unicode case), the snippet is the row's start.
 */
export async function contentMatches(pool: pg.Pool, t: StoreTables, hits: readonly { id: string; seq: number }[], needle: string): Promise<Map<string, ContentMatch>> {
  const out = new Map<string, ContentMatch>()
  if (hits.length === 0) return out
  const found = await pool.query<{ session_id: string; seq: number; part: ContentPart; body: string }>(
    `SELECT c.session_id, c.seq, c.part, c.body FROM ${t.content} c JOIN unnest($1::text[], $2::int[]) AS h (id, seq) ON c.session_id = h.id AND c.seq = h.seq`,
    [hits.map((h) => h.id), hits.map((h) => h.seq)],
  )
  const find = needleMatcher(needle)
  for (const r of found.rows) {
    const text = { seq: r.seq, part: r.part, text: r.body }
    out.set(r.session_id, matchInText(text, needle, find) ?? { seq: r.seq, part: r.part, snippet: snippetAt(r.body, 0, 0) })
  }
  return out
}
