// The statement a PostgresStore flush sends (docs/scaling.md, "The lease protocol"): the fence and the write in
// one round trip.
import type { StoreTables } from './schema.js'

/**
 * The statement of one flush, fenced: the `sessions` row is updated only at the writer's epoch and head, and the
 * event rows are inserted (and the consumed inbox rows deleted, when `inbox`) only through that update, so a
 * fenced writer changes nothing. Parameters: $1 id, $2 epoch, $3 new head, $4 lease ms, $5 status, $6 title,
 * $7 first seq, $8..$10 the rows (seqs, types, data), $11 the events channel, $12 inbox row ids.
 */
export function flushStatement(t: StoreTables, inbox: boolean): string {
  return `WITH f AS (
       UPDATE ${t.sessions} SET head_seq = $3, updated_at = now(), lease_until = now() + $4 * interval '1 millisecond',
         status = COALESCE($5, status), title = COALESCE(title, $6)
       WHERE id = $1 AND epoch = $2 AND head_seq = $7
       RETURNING id),
     e AS (
       INSERT INTO ${t.events} (session_id, seq, type, data)
       SELECT f.id, r.seq, r.type, r.data FROM f, unnest($8::int[], $9::text[], $10::text[]) AS r(seq, type, data))${
       inbox
         ? `,
     d AS (
       DELETE FROM ${t.inbox} WHERE session_id = $1 AND id = ANY($12::bigint[]) AND EXISTS (SELECT 1 FROM f))`
         : ''
     }
     SELECT pg_notify($11, f.id || ' ' || $3) FROM f`
}
