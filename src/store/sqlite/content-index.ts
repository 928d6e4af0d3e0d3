// The SQLite store's content index (schema version 3, written by the store since version 5): the searchable text
// of every stored prompt, answer and tool result in `content_text`, indexed by the FTS5 table `content_fts` with
// the trigram tokenizer (substring matching, case-folded). The store inserts a batch's `content_text` rows in the
// flush's own transaction, from the events it already holds (indexedTextOf, the rule JSONL's index uses too), so
// an index can never lag behind a commit; triggers keep `content_fts` in step with `content_text`, and drop the
// rows of deleted events. Versions 3 and 4 extracted the text in SQL with a trigger on `events`: the JSON
// functions cost about 0.08 ms a step, and a fork's copy ran them again on every copied row.
import type Database from 'better-sqlite3'
import type { SessionEvent } from '../../session/events.js'
import { indexedTextOf, matchInText, needleMatcher, snippetAt, type ContentMatch, type ContentPart } from '../content-search.js'

// Rows whose stored line is one of the three searchable types (lines are stored with `type` first). Checked as a
// prefix before any JSON is parsed: the trigger costs a chunk row or a turn mark one comparison.
function searchable(line: string): string {
  return `(substr(${line}, 1, 23) = '{"type":"user/message",' OR substr(${line}, 1, 28) = '{"type":"assistant/message",' OR substr(${line}, 1, 22) = '{"type":"tool/result",')`
}

/** The statement that stores one searchable text: `run(sessionId, seq, part, body)`. */
export type ContentInsert = Database.Statement<[string, number, ContentPart, string]>

/** Prepares {@link ContentInsert} on `db` (once per connection: the write path keeps it). */
export function prepareContentInsert(db: Database.Database): ContentInsert {
  return db.prepare('INSERT INTO content_text (session_id, seq, part, body) VALUES (?, ?, ?, ?)')
}

/**
 * Stores the searchable texts of `events` of session `id`: call inside the transaction that stores the events.
 * Most events carry none (chunks, turn marks, calls), and are passed over on their type alone.
 */
export function indexEvents(insert: ContentInsert, id: string, events: Iterable<SessionEvent>): void {
  for (const event of events) {
    const text = indexedTextOf(event)
    if (text !== undefined) insert.run(id, text.seq, text.part, text.text)
  }
}

/**
 * Copies the `content_text` rows of `parentId` up to seq `upTo` to `childId` (a fork of its prefix): the texts
 * as stored, never extracted again; the FTS trigger indexes the copies.
 */
export function copyContentRows(db: Database.Database, parentId: string, upTo: number, childId: string): void {
  db.prepare('INSERT INTO content_text (session_id, seq, part, body) SELECT ?, seq, part, body FROM content_text WHERE session_id = ? AND seq <= ? ORDER BY seq').run(childId, parentId, upTo)
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
    CREATE TRIGGER events_content_delete AFTER DELETE ON events WHEN ${searchable('OLD.line')} BEGIN
      DELETE FROM content_text WHERE session_id = OLD.session_id AND seq = OLD.seq;
    END;
  `)
  // The stored events of an older database, session by session in seq order (rowid order is then each
  // session's log order). Only rows of the three searchable types are read, found by their stored prefix; a
  // row that does not parse is left out (read() reports it).
  const insert = prepareContentInsert(db)
  const ids = db.prepare('SELECT id FROM sessions ORDER BY id').pluck()
  const lines = db.prepare(`SELECT line FROM events WHERE session_id = ? AND ${searchable('line')} ORDER BY seq`).pluck()
  for (const id of ids.all() as string[]) {
    for (const line of lines.all(id) as string[]) {
      let event: SessionEvent
      try {
        event = JSON.parse(line) as SessionEvent
      } catch {
        continue
      }
      indexEvents(insert, id, [event])
    }
  }
}

/**
 * Version 5: the store writes `content_text` itself; the version-3 trigger that extracted it from `events` in
 * SQL goes (the rows it wrote stay: they are the same texts).
 */
export function dropContentExtractionTrigger(db: Database.Database): void {
  db.exec('DROP TRIGGER IF EXISTS events_content_insert')
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
