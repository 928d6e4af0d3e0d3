import type pg from 'pg'
import { HarnessError } from '../../errors/harness-error.js'

/** The schema version this build writes and reads; older databases are migrated up to it on open. */
export const POSTGRES_SCHEMA_VERSION = 7

/** What a PostgreSQL schema name may be: a plain lower-case identifier, so it can be quoted into SQL safely. */
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/

/**
 * Table names of one store, qualified by its PostgreSQL schema, and the two NOTIFY channels it uses.
 * Channel names carry the schema so stores in different schemas of one database do not wake each other.
 */
export interface StoreTables {
  readonly schema: string
  readonly sessions: string
  readonly events: string
  readonly inbox: string
  /** Tool calls of worker-run sessions waiting for a person's decision (answered through `serve`). */
  readonly approvals: string
  /** File checkpoints (the bytes built-in tools overwrote or deleted), keyed by SHA-256 and shared by all sessions. */
  readonly checkpointBlobs: string
  /** The content index: the searchable text of each stored prompt, answer and tool result (`list({ grep })`). */
  readonly content: string
  readonly version: string
  /** NOTIFY channel of new inbox rows (payload: session id). */
  readonly inboxChannel: string
  /** NOTIFY channel of committed events (payload: `<session id> <head seq>`). */
  readonly eventsChannel: string
  /** NOTIFY channel of asked, answered and withdrawn approvals (payload: session id). */
  readonly approvalsChannel: string
}

/**
 * Qualified table names for a schema.
 * @throws HarnessError `INVALID_CONFIG` for a name that is not a plain lower-case identifier
 */
export function storeTables(schema: string): StoreTables {
  // `pg_` names are reserved for PostgreSQL's own schemas.
  if (typeof schema !== 'string' || !SCHEMA_NAME.test(schema) || schema.startsWith('pg_')) {
    throw new HarnessError(`PostgresStore schema ${JSON.stringify(schema)} must be a lower-case identifier (a-z, 0-9, _; at most 48 characters; not pg_…)`, 'INVALID_CONFIG')
  }
  const q = (table: string): string => `"${schema}"."${table}"`
  return {
    schema,
    sessions: q('sessions'),
    events: q('events'),
    inbox: q('inbox'),
    approvals: q('approvals'),
    checkpointBlobs: q('checkpoint_blobs'),
    content: q('content'),
    version: q('schema_version'),
    inboxChannel: `${schema}_inbox`,
    eventsChannel: `${schema}_events`,
    approvalsChannel: `${schema}_approvals`,
  }
}

/**
 * Each migration takes the schema from version `index` to `index + 1`. Append new ones; never edit a shipped
 * one (a database that already ran it would not run it again).
 */
function migrations(t: StoreTables): readonly string[] {
  return [
    `
    CREATE TABLE ${t.sessions} (
      id          text PRIMARY KEY,
      header      text NOT NULL,
      created_at  bigint NOT NULL,
      updated_at  timestamptz NOT NULL DEFAULT now(),
      title       text,
      owner       text,
      epoch       integer NOT NULL DEFAULT 0,
      lease_until timestamptz,
      head_seq    integer NOT NULL DEFAULT 0,
      status      text NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'running', 'pending'))
    );
    CREATE TABLE ${t.events} (
      session_id  text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
      seq         integer NOT NULL,
      type        text NOT NULL,
      data        text NOT NULL,
      PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE ${t.inbox} (
      id          bigserial PRIMARY KEY,
      session_id  text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
      kind        text NOT NULL CHECK (kind IN ('followup', 'steer', 'inject', 'cancel')),
      message     text,
      created_at  timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX inbox_by_session ON ${t.inbox} (session_id, id);
    CREATE INDEX sessions_by_update ON ${t.sessions} (updated_at DESC);
    CREATE INDEX sessions_claimable ON ${t.sessions} (lease_until) WHERE owner IS NOT NULL;
    `,
    // 2: pending tool approvals of worker-run sessions. A row belongs to the lease epoch that asked: a row of an
    // older epoch (its asker died or lost the lease) is never listed or answered.
    `
    CREATE TABLE ${t.approvals} (
      session_id  text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
      call_id     text NOT NULL,
      epoch       integer NOT NULL,
      question    text NOT NULL,
      asked_at    timestamptz NOT NULL DEFAULT now(),
      answer      text CHECK (answer IN ('allow', 'deny', 'always')),
      PRIMARY KEY (session_id, call_id)
    );
    `,
    // 3: no foreign key from events to sessions. It was checked once per inserted row (a lookup and a row lock
    // per event, about a third of a flush's server time), and every store insert already goes through the
    // sessions row the same statement just inserted or updated (and holds locked). Deleting a session still
    // deletes its events: a statement trigger does what ON DELETE CASCADE did.
    `
    DO $$
    DECLARE c name;
    BEGIN
      FOR c IN SELECT conname FROM pg_constraint WHERE conrelid = '${t.events}'::regclass AND contype = 'f' LOOP
        EXECUTE format('ALTER TABLE ${t.events} DROP CONSTRAINT %I', c);
      END LOOP;
    END $$;
    CREATE FUNCTION "${t.schema}".delete_session_events() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      DELETE FROM ${t.events} e USING gone WHERE e.session_id = gone.id;
      RETURN NULL;
    END $$;
    CREATE TRIGGER sessions_delete_events AFTER DELETE ON ${t.sessions}
      REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION "${t.schema}".delete_session_events();
    `,
    // 4: a session whose work crashed its workers K times in a row is `quarantined`: no worker claims it until a
    // forced resume lifts it (docs/scaling.md, "Quarantine").
    `
    ALTER TABLE ${t.sessions} DROP CONSTRAINT IF EXISTS sessions_status_check;
    ALTER TABLE ${t.sessions} ADD CONSTRAINT sessions_status_check CHECK (status IN ('idle', 'running', 'pending', 'quarantined'));
    `,
    // 5: file checkpoints. Content-addressed and shared by every session (a fork's rewind reads its parent's),
    // so no session key and nothing deleted with a session.
    `
    CREATE TABLE IF NOT EXISTS ${t.checkpointBlobs} (
      hash        text PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
      data        bytea NOT NULL
    );
    `,
    // 6: the submission key an input was sent with (`store.send(id, { …, key })`): unique per session while the
    // row waits, so a client that retries after a timeout cannot queue the same prompt twice. IF NOT EXISTS: the
    // migration tests rebuild older versions by hand and run every later step again.
    `
    ALTER TABLE ${t.inbox} ADD COLUMN IF NOT EXISTS key text;
    CREATE UNIQUE INDEX IF NOT EXISTS inbox_by_key ON ${t.inbox} (session_id, key) WHERE key IS NOT NULL;
    -- "Resume anyway" from someone who does not own the session (serve): the next worker resumes it with force.
    ALTER TABLE ${t.sessions} ADD COLUMN IF NOT EXISTS force_resume boolean NOT NULL DEFAULT false;
    `,
    // 7: the content index of `list({ grep })`: the searchable text of every stored prompt, answer and tool
    // result (the rule of content-search.ts), kept by a row trigger on `events` in the committing statement, and
    // filled once from the stored events. Substring search: a pg_trgm GIN index on lower(body) where the
    // extension can be installed (without it the same query scans the table). A record the trigger cannot read
    // (text PostgreSQL's json functions refuse, such as \u0000) is left out of the index, never a failed write.
    `
    CREATE TABLE IF NOT EXISTS ${t.content} (
      session_id  text NOT NULL REFERENCES ${t.sessions} (id) ON DELETE CASCADE,
      seq         integer NOT NULL,
      part        text NOT NULL CHECK (part IN ('prompt', 'answer', 'tool-output')),
      body        text NOT NULL,
      PRIMARY KEY (session_id, seq)
    );
    CREATE OR REPLACE FUNCTION "${t.schema}".content_of(type text, record text) RETURNS TABLE (part text, body text) LANGUAGE plpgsql IMMUTABLE AS $$
    DECLARE r json;
    BEGIN
      BEGIN
        r := record::json;
        IF type = 'user/message' THEN
          IF (r #>> '{data,source,kind}') IS DISTINCT FROM 'user' THEN RETURN; END IF;
          part := 'prompt';
          SELECT string_agg(b ->> 'text', chr(10)) INTO body FROM json_array_elements(r #> '{data,content}') b WHERE b ->> 'type' = 'text' AND b ->> 'text' <> '';
        ELSIF type = 'assistant/message' THEN
          part := 'answer';
          SELECT string_agg(b ->> 'text', chr(10)) INTO body FROM json_array_elements(r #> '{data,message,content}') b WHERE b ->> 'type' = 'text' AND b ->> 'text' <> '';
        ELSIF type = 'tool/result' THEN
          part := 'tool-output';
          SELECT string_agg(i ->> 'text', chr(10)) INTO body FROM json_array_elements(r #> '{data,message,content}') o, json_array_elements(o -> 'content') i
            WHERE i ->> 'type' = 'text' AND i ->> 'text' <> '';
        ELSE RETURN;
        END IF;
      EXCEPTION WHEN others THEN RETURN;
      END;
      IF body IS NOT NULL AND body <> '' THEN RETURN NEXT; END IF;
    END $$;
    CREATE OR REPLACE FUNCTION "${t.schema}".index_content() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${t.content} (session_id, seq, part, body) SELECT NEW.session_id, NEW.seq, c.part, c.body FROM "${t.schema}".content_of(NEW.type, NEW.data) c
        ON CONFLICT (session_id, seq) DO UPDATE SET part = EXCLUDED.part, body = EXCLUDED.body;
      RETURN NULL;
    END $$;
    DROP TRIGGER IF EXISTS events_content ON ${t.events};
    CREATE TRIGGER events_content AFTER INSERT ON ${t.events} FOR EACH ROW
      WHEN (NEW.type IN ('user/message', 'assistant/message', 'tool/result')) EXECUTE FUNCTION "${t.schema}".index_content();
    INSERT INTO ${t.content} (session_id, seq, part, body)
      SELECT e.session_id, e.seq, c.part, c.body FROM ${t.events} e, "${t.schema}".content_of(e.type, e.data) c
      WHERE e.type IN ('user/message', 'assistant/message', 'tool/result')
      ON CONFLICT (session_id, seq) DO NOTHING;
    DO $$
    DECLARE ns name;
    BEGIN
      BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm;
      EXCEPTION WHEN others THEN RAISE NOTICE 'pg_trgm is not available (%): content search scans the content table', SQLERRM;
      END;
      SELECT extnamespace::regnamespace::name INTO ns FROM pg_extension WHERE extname = 'pg_trgm';
      IF ns IS NOT NULL THEN
        EXECUTE format('CREATE INDEX IF NOT EXISTS content_trgm ON ${t.content} USING gin (lower(body) %I.gin_trgm_ops)', ns);
      END IF;
    END $$;
    `,
  ]
}

/**
 * Creates the store's schema and tables, or migrates them up to {@link POSTGRES_SCHEMA_VERSION}. Runs in one
 * transaction under an advisory lock, so workers that start together migrate once and the rest wait.
 * @throws HarnessError `SESSION_VERSION` when the database is newer than this build
 */
export async function migrateSchema(pool: pg.Pool, t: StoreTables): Promise<void> {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`ledgerloop schema ${t.schema}`])
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${t.schema}"`)
    await client.query(`CREATE TABLE IF NOT EXISTS ${t.version} (version integer NOT NULL)`)
    const found = await client.query<{ version: number }>(`SELECT version FROM ${t.version}`)
    const current = found.rows[0]?.version ?? 0
    if (current > POSTGRES_SCHEMA_VERSION) {
      throw new HarnessError(
        `schema "${t.schema}" has session schema version ${current}; this build of ledgerloop reads version ${POSTGRES_SCHEMA_VERSION}`,
        'SESSION_VERSION',
      )
    }
    const steps = migrations(t)
    for (let version = current; version < POSTGRES_SCHEMA_VERSION; version++) await client.query(steps[version] as string)
    if (found.rows.length === 0) await client.query(`INSERT INTO ${t.version} (version) VALUES ($1)`, [POSTGRES_SCHEMA_VERSION])
    else if (current !== POSTGRES_SCHEMA_VERSION) await client.query(`UPDATE ${t.version} SET version = $1`, [POSTGRES_SCHEMA_VERSION])
    await client.query('COMMIT')
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined)
    throw error
  } finally {
    client.release()
  }
}
