// File checkpoints of a SQLite store: a `checkpoint_blobs` table in the same database, keyed by SHA-256. The
// table is created on the first `put` (CREATE TABLE IF NOT EXISTS, additive: a build that knows no checkpoints
// ignores it), so opening a database never changes its schema for a feature nobody used.
import type Database from 'better-sqlite3'
import { checkBlobHash } from '../checkpoint-blobs.js'
import type { CheckpointBlobStore } from '../types.js'

const TABLE = `CREATE TABLE IF NOT EXISTS checkpoint_blobs (
  hash TEXT PRIMARY KEY,
  data BLOB NOT NULL
) STRICT, WITHOUT ROWID`

/** Runs `work`, turning SQLite's errors into the store's (`SESSION_WRITE_FAILED`, `SESSION_CORRUPT`). */
export type SqliteGuard = <T>(doing: string, writing: boolean, work: () => T) => T

/** Checkpoint blobs in a table of the store's database. */
export class SqliteCheckpointBlobs implements CheckpointBlobStore {
  readonly #db: Database.Database
  readonly #guard: SqliteGuard
  #created = false

  constructor(db: Database.Database, guard: SqliteGuard) {
    this.#db = db
    this.#guard = guard
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const hash of blobs.keys()) checkBlobHash(hash)
    if (blobs.size === 0) return
    this.#guard('storing file checkpoints', true, () => {
      const db = this.#db
      // One transaction for the batch: one WAL fsync (synchronous=FULL) makes all of it durable.
      db.transaction(() => {
        if (!this.#created) db.exec(TABLE)
        const insert = db.prepare('INSERT INTO checkpoint_blobs (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING')
        for (const [hash, bytes] of blobs) insert.run(hash, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
      }).immediate()
      this.#created = true
    })
  }

  async get(hash: string): Promise<Buffer | undefined> {
    checkBlobHash(hash)
    return this.#guard('reading a file checkpoint', false, () => {
      if (!this.#created) {
        const table = this.#db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'checkpoint_blobs'").get()
        if (table === undefined) return undefined
        this.#created = true
      }
      const row = this.#db.prepare('SELECT data FROM checkpoint_blobs WHERE hash = ?').get(hash) as { data: Buffer } | undefined
      return row?.data
    })
  }
}
