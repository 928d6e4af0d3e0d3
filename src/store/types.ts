import type { SessionWriter } from '../session/session-writer.js'
import type { EventLog } from '../session/event-log.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import type { ForkChild, ForkPoint } from '../session/fork-point.js'
import type { ContentMatch } from './content-search.js'

export type { SessionWriter } from '../session/session-writer.js'
export type { ForkChild, ForkPoint } from '../session/fork-point.js'

/** What a store cut off the end of a damaged log while loading it (never anything before the last valid record). */
export interface TailRepair {
  /** Line (JSONL) where the cut-off part started. */
  readonly line: number
  /** Bytes cut off. */
  readonly bytes: number
  /** What was wrong with it. */
  readonly reason: string
}

/** A stored session read back: header and every event. */
export interface StoredSession {
  readonly header: SessionHeader
  readonly events: SessionEvent[]
  /**
   * The same events in compact form, when the store keeps one (the built-in stores do): packed chunk runs
   * stay packed. `new Session({ log })` adopts it without materialising them; the built-in stores build
   * `events` from it only when it is first read.
   */
  readonly log?: EventLog
  /**
   * Set when a torn or garbage tail (an interrupted write: never a flushed event) was cut off while loading.
   * `open` also truncates the stored file; `read` only skips it.
   */
  readonly tailRepair?: TailRepair
}

/** One row of {@link SessionStore.list}. */
export interface SessionSummary {
  readonly id: string
  readonly createdAt: number
  /** ms since epoch of the last write. */
  readonly updatedAt: number
  /** The session this one was forked from, or (with `parentCallId`) the parent of a sub-agent. */
  readonly parentSession?: string
  /** Set on a rerun's session: the recorded session it reran (its `SessionHeader.forkedFrom`). */
  readonly forkedFrom?: string
  /** A sub-agent's parent tool call (absent for top-level sessions and forks). */
  readonly parentCallId?: string
  /** A sub-agent's profile name. */
  readonly agentProfile?: string
  /** Delegation depth (absent = 0, a top-level session). */
  readonly delegationDepth?: number
  /** Stored size in bytes, when the store knows it. */
  readonly sizeBytes?: number
  /** Set when the session's header cannot be read: `read`/`open` give the precise error. */
  readonly problem?: string
  /** The first user prompt clipped to one line of 60 characters (absent before any prompt, or where the store does not know it). */
  readonly title?: string
  /** The first user prompt, whitespace collapsed, clipped to 200 characters (absent as `title`). */
  readonly firstPrompt?: string
  /** Turns ended so far, as of the store's last summary of the session (its last turn end), when it keeps one. */
  readonly turns?: number
  /** How the last ended turn ended (`completed`, `aborted`, …), null before any; absent where the store does not know. */
  readonly lastReason?: string | null
  /**
   * `'quarantined'` while the session's log holds a quarantine in force (its last quarantine mark is
   * `session/quarantined`, not lifted by a forced resume since): workers do not claim it and `resumeAgent`
   * refuses it without `force`. Absent otherwise (and where the store does not know).
   */
  readonly status?: 'quarantined'
  /** Why the session is quarantined (the reason logged with the quarantine), set with `status`. */
  readonly quarantineReason?: string
  /** With `list({ grep })`: where the text was found (the session's earliest matching prompt, answer or tool output). */
  readonly match?: ContentMatch
}

/** Options of {@link SessionStore.list}. */
export interface SessionListOptions {
  /** At most this many rows (default: all). */
  readonly limit?: number
  /** Rows to skip first, for paging (default 0). */
  readonly offset?: number
  /**
   * Only sessions whose title or first prompt contains this text (case-insensitive), or whose id starts with
   * it. Searching looks at every session's summary (never at the logs), so it costs more than a plain page.
   */
  readonly search?: string
  /**
   * Only sessions whose prompts, answers or tool output contain this text (case-insensitive substring, as
   * grep; surrounding whitespace trimmed; at most 100 characters, else `INVALID_INPUT`). Each row then carries
   * its `match`. Stores answer from a content index kept as sessions are written (see docs/sessions.md). With
   * `search` too, a session must match both.
   */
  readonly grep?: string
}

/**
 * What {@link SessionStore.list} returns: the rows (newest first), plus how many sessions matched in all and,
 * when the store had to rebuild its listing index, a note saying so (for a CLI to print on stderr). A plain
 * array is one too: a store that knows no `total` (one written before list options existed) returns every
 * session and lets the caller page (see `pageOf`).
 */
export type SessionList = SessionSummary[] & {
  /** Sessions that matched before `limit` and `offset` were applied (absent: the store ignored the options). */
  readonly total?: number
  /** Set when the store rebuilt its session index to answer (missing, damaged or stale), saying why. */
  readonly indexNote?: string
}

/**
 * Where sessions live. One writer per session: `create` and `open` take an exclusive lock (a second writer
 * gets `SESSION_LOCKED`); `read` and `list` take none.
 */
export interface SessionStore {
  /** Creates a session (with optional seed events, e.g. a fork prefix) and returns its writer. `SESSION_EXISTS` when taken. */
  create(header: SessionHeader, seed?: readonly SessionEvent[]): Promise<SessionWriter>
  /** Opens a session for writing: loads it (repairing a torn tail) and locks it. `SESSION_NOT_FOUND`, `SESSION_CORRUPT`, `SESSION_LOCKED`. */
  open(id: string): Promise<StoredSession & { readonly writer: SessionWriter }>
  /** Reads a session without locking it (inspect, verify, fork). */
  read(id: string): Promise<StoredSession>
  /** Whether a session exists. */
  has(id: string): Promise<boolean>
  /**
   * Stored sessions, newest first (by last write; equal times by id), one page of them when `limit`/`offset`
   * are given, only those matching `search` when it is. The result's `total` counts every match.
   */
  list(options?: SessionListOptions): Promise<SessionList>
  /** Flushes and closes every writer, releases locks. */
  close(): Promise<void>
  /** Where file checkpoints of this store's sessions are kept; without it, built-in tools checkpoint nothing. */
  readonly checkpointBlobs?: CheckpointBlobStore
  /**
   * Optional fast fork: creates a child of session `parentId` whose first events are the parent's seqs `0..at`
   * (default: all), copying their stored records as they are instead of decoding and re-encoding each event.
   * The store locates the fork point, calls `child` once with it, and writes the child's header, the copied
   * records and the child's `tail` as one durable unit (a crash leaves no child, or the whole child). It does
   * so only where it can vouch for the prefix without reading it event by event (a JSONL log whose bytes match
   * the session index's witness, a SQLite or PostgreSQL session's committed rows) and the point is a turn
   * boundary; otherwise it writes nothing and resolves `undefined`, and `forkSession` reads the parent and
   * creates the child from its events (which also raises the errors of a bad fork point).
   * @returns the child's id, or undefined when the store declined
   * @throws HarnessError `SESSION_EXISTS` when the child's id is taken; what `child` throws
   */
  copyPrefix?(parentId: string, at: number | undefined, child: (point: ForkPoint) => ForkChild): Promise<string | undefined>
}

/**
 * Content-addressed storage of file checkpoints (the bytes a built-in tool is about to overwrite or delete),
 * shared by every session of one store: a blob is stored once however many sessions, forks or calls name it.
 * Keys are the SHA-256 of the bytes, lower-case hex. The built-in stores all keep one beside their logs.
 */
export interface CheckpointBlobStore {
  /**
   * Stores blobs under their hashes; resolves once they are durable. A blob already stored is not written
   * again. The caller vouches that each key is the SHA-256 of its bytes.
   */
  put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void>
  /**
   * Optional: stores blobs that nothing needs yet (the bytes a tool just wrote: the pre-image of the file's next
   * change) with the store's next log commit instead of a commit of their own; resolves once they are durable. A
   * `put` of the same hash before that commit makes it durable at once. Without it, callers use `put`.
   */
  putWithNextCommit?(blobs: ReadonlyMap<string, Uint8Array>): Promise<void>
  /** The stored blob of `hash`, or undefined when none is stored. */
  get(hash: string): Promise<Buffer | undefined>
}
