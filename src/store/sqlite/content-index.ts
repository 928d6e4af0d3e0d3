// The SQLite store's content index (schema version 3): the searchable text of every stored prompt, answer and
// tool result in `content_text`, indexed by the FTS5 table `content_fts` with the trigram tokenizer (substring
// matching, case-folded). Triggers on `events` keep both in the same transaction as the rows they index, so the
// write path needs no code of its own and an index can never lag behind a commit.
import type Database from 'better-sqlite3'
import { matchInText, needleMatcher, snippetAt, type ContentMatch, type ContentPart } from '../content-search.js'

// The searchable text of a stored event line, in SQL: the same rule as indexedTextOf (content-search.ts): a
// user's prompt's text blocks, an answer's text blocks, a tool result's text blocks, joined by newlines.
function extraction(line: string): string {
  const texts = (path: string): string =>
    `(SELECT group_concat(b.value ->> '$.text', char(10)) FROM json_each(${line}, '${path}') b WHERE b.value ->> '$.type' = 'text' AND b.value ->> '$.text' <> '')`
  return `
    SELECT part, body FROM (
      SELECT CASE t WHEN 'user/message' THEN 'prompt' WHEN 'assistant/message' THEN 'answer' ELSE 'tool-output' END AS part,
        CASE t
          WHEN 'user/message' THEN CASE WHEN ${line} ->> '$.data.source.kind' = 'user' THEN ${texts('$.data.content')} END
          WHEN 'assistant/message' THEN ${texts('$.data.message.content')}
          ELSE (SELECT group_concat(i.value ->> '$.text', char(10)) FROM json_each(${line}, '$.data.message.content') r, json_each(r.value, '$.content') i
                WHERE i.value ->> '$.type' = 'text' AND i.value ->> '$.text' <> '')
        END AS body
      FROM (SELECT ${line} ->> '$.type' AS t))
    WHERE body IS NOT NULL AND body <> ''`
}

// Rows whose stored line is one of the three searchable types (lines are stored with `type` first). Checked as a
// prefix before any JSON is parsed: the trigger costs a chunk row or a turn mark one comparison.
function searchable(line: string): string {
  return `(substr(${line}, 1, 23) = '{"type":"user/message",' OR substr(${line}, 1, 28) = '{"type":"assistant/message",' OR substr(${line}, 1, 22) = '{"type":"tool/result",')`
}

/**
 * Creates the content index and fills it from the stored events. Idempotent: whatever an earlier attempt left
 * (a half-made index, a draft's tables of the same names) is dropped first, and everything is created again
 * inside the caller's migration transaction, so running it twice, or on a database that has part of it,
 * ends in the same state.
 */
export function createContentIndex(db: Database.Database): void {
  db.exec(`
    DROP TRIGGER IF EXISTS events_content_insert;
    DROP TRIGGER IF EXISTS events_content_delete;
    DROP TRIGGER IF EXISTS content_text_insert;
    DROP TRIGGER IF EXISTS content_text_delete;
    DROP TABLE IF EXISTS content_fts;
    DROP TABLE IF EXISTS content_text;
    CREATE TABLE content_text (
      rowid INTEGER PRIMARY KEY,
      session_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      part TEXT NOT NULL,
      body TEXT NOT NULL
    ) STRICT;
    CREATE INDEX content_by_event ON content_text (session_id, seq);
    CREATE VIRTUAL TABLE content_fts USING fts5(body, content = 'content_text', content_rowid = 'rowid', tokenize = 'trigram');
    CREATE TRIGGER content_text_insert AFTER INSERT ON content_text BEGIN
      INSERT INTO content_fts (rowid, body) VALUES (NEW.rowid, NEW.body);
    END;
    CREATE TRIGGER content_text_delete AFTER DELETE ON content_text BEGIN
      INSERT INTO content_fts (content_fts, rowid, body) VALUES ('delete', OLD.rowid, OLD.body);
    END;
    CREATE TRIGGER events_content_insert AFTER INSERT ON events WHEN ${searchable('NEW.line')} AND json_valid(NEW.line) BEGIN
      INSERT INTO content_text (session_id, seq, part, body) SELECT NEW.session_id, NEW.seq, part, body FROM (${extraction('NEW.line')});
    END;
    CREATE TRIGGER events_content_delete AFTER DELETE ON events WHEN ${searchable('OLD.line')} BEGIN
      DELETE FROM content_text WHERE session_id = OLD.session_id AND seq = OLD.seq;
    END;
  `)
  // The stored events of an older database, session by session in seq order (rowid order is then each
  // session's log order). Only rows of the three searchable types are read, found by their stored prefix.
  const insert = db.prepare(`INSERT INTO content_text (session_id, seq, part, body) SELECT @id, @seq, part, body FROM (${extraction('@line')})`)
  const ids = db.prepare('SELECT id FROM sessions ORDER BY id').pluck()
  const rows = db.prepare(`SELECT session_id AS id, seq, line FROM events WHERE session_id = ? AND ${searchable('line')} AND json_valid(line) ORDER BY seq`)
  for (const id of ids.all() as string[]) for (const row of rows.all(id)) insert.run(row)
}

/** One matching session of {@link searchContent}, before the listing's own columns are joined. */
export interface ContentHit {
  readonly id: string
  /** The `content_text` row of its earliest match. */
  readonly first: number
}

// A LIKE pattern matching `needle` anywhere (\ escapes the pattern characters).
function likePattern(needle: string): string {
  return `%${needle.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

// An FTS5 phrase of the needle (double quotes doubled): with the trigram tokenizer, a substring query.
function ftsPhrase(needle: string): string {
  return `"${needle.replace(/"/g, '""')}"`
}

/**
 * The sessions whose indexed text contains `needle`, with their earliest matching row: through the trigram
 * index for needles of three characters or more; shorter ones (which no trigram can find) scan `content_text`
 * with LIKE.
 * @returns a SQL fragment to join as `hits` and its parameters
 */
export function contentHitsQuery(needle: string): { readonly sql: string; readonly params: Record<string, string> } {
  if ([...needle].length >= 3) {
    return {
      sql: 'SELECT c.session_id AS id, min(c.rowid) AS first FROM content_fts f JOIN content_text c ON c.rowid = f.rowid WHERE content_fts MATCH @grep GROUP BY c.session_id',
      params: { grep: ftsPhrase(needle) },
    }
  }
  return { sql: "SELECT session_id AS id, min(rowid) AS first FROM content_text WHERE body LIKE @grep ESCAPE '\\' GROUP BY session_id", params: { grep: likePattern(needle) } }
}

/**
 * The match (seq, part, snippet) of a hit's row. The snippet is found with the harness's own case-insensitive
 * rule; where SQLite's folding found a row that rule does not (a rare Unicode case), the snippet is the row's start.
 */
export function contentMatchOf(db: Database.Database, row: number, needle: string): ContentMatch | undefined {
  const found = db.prepare('SELECT seq, part, body FROM content_text WHERE rowid = ?').get(row) as { seq: number; part: ContentPart; body: string } | undefined
  if (found === undefined) return undefined
  const text = { seq: found.seq, part: found.part, text: found.body }
  return matchInText(text, needle, needleMatcher(needle)) ?? { seq: found.seq, part: found.part, snippet: snippetAt(found.body, 0, 0) }
}
