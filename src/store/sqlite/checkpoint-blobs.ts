// File checkpoints of a SQLite store: a `checkpoint_blobs` table in the same database, keyed by SHA-256. The
// table is created on the first write (CREATE TABLE IF NOT EXISTS, additive: a build that knows no checkpoints
// ignores it), so opening a database never changes its schema for a feature nobody used.
//
// Two ways in. `put` is one transaction of its own (one WAL fsync, `synchronous=FULL`), for a pre-image the tool
// is waiting for. `putWithNextCommit` stages the blobs, and the store's next log flush inserts them inside its
// own transaction (`insertStaged`, called by the store): the bytes a tool just wrote, which are the pre-image of
// the file's next change, cost no commit of their own. If that next change comes before any flush, its `put`
// inserts the staged blob itself.
import type Database from 'better-sqlite3'
import { checkBlobHash } from '../checkpoint-blobs.js'
import type { CheckpointBlobStore } from '../types.js'

const TABLE = `CREATE TABLE IF NOT EXISTS checkpoint_blobs (
  hash TEXT PRIMARY KEY,
  data BLOB NOT NULL
) STRICT, WITHOUT ROWID`

/** Runs `work`, turning SQLite's errors into the store's (`SESSION_WRITE_FAILED`, `SESSION_CORRUPT`). */
export type SqliteGuard = <T>(doing: string, writing: boolean, work: () => T) => T

/** A blob waiting for the next log commit, and whoever waits for it to be durable. */
interface Staged {
  readonly bytes: Buffer
  readonly durable: Promise<void>
  readonly resolve: () => void
}

/** What a flush took from the staged blobs: settle it once its transaction committed or rolled back. */
export interface StagedBlobs {
  /** The transaction committed: the blobs are durable. */
  committed(): void
  /** The transaction rolled back: the blobs stay staged for the next one. */
  rolledBack(): void
}

/** Checkpoint blobs in a table of the store's database. */
export class SqliteCheckpointBlobs implements CheckpointBlobStore {
  readonly #db: Database.Database
  readonly #guard: SqliteGuard
  #created = false
  #insert: Database.Statement | undefined
  readonly #staged = new Map<string, Staged>()

  constructor(db: Database.Database, guard: SqliteGuard) {
    this.#db = db
    this.#guard = guard
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const hash of blobs.keys()) checkBlobHash(hash)
    if (blobs.size === 0) return
    const taken = [...blobs].map(([hash, bytes]) => [hash, asBuffer(bytes), this.#staged.get(hash)] as const)
    this.#guard('storing file checkpoints', true, () => {
      // One transaction for the batch: one WAL fsync makes all of it durable.
      try {
        this.#db.transaction(() => {
          const insert = this.#insertStatement()
          for (const [hash, bytes] of taken) insert.run(hash, bytes)
        }).immediate()
      } catch (error) {
        this.#forgetTable()
        throw error
      }
    })
    // A staged copy is durable now too: whoever waits for it need not wait for the next flush.
    for (const [hash, , staged] of taken) {
      if (staged === undefined) continue
      if (this.#staged.get(hash) === staged) this.#staged.delete(hash)
      staged.resolve()
    }
  }

  /** Stages `blobs` for the store's next log commit; resolves once that commit (or a `put` of them) made them durable. */
  putWithNextCommit(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const hash of blobs.keys()) checkBlobHash(hash)
    const waits: Promise<void>[] = []
    for (const [hash, bytes] of blobs) {
      let staged = this.#staged.get(hash)
      if (staged === undefined) {
        let resolve!: () => void
        const durable = new Promise<void>((done) => (resolve = done))
        // A copy: the caller's buffer may change while it waits for the flush.
        staged = { bytes: Buffer.from(bytes), durable, resolve }
        this.#staged.set(hash, staged)
      }
      waits.push(staged.durable)
    }
    return Promise.all(waits).then(() => undefined)
  }

  /**
   * @internal Called by the store inside a log flush's transaction: inserts every staged blob there. Returns
   * undefined when none is staged.
   */
  insertStaged(): StagedBlobs | undefined {
    if (this.#staged.size === 0) return undefined
    const taken = [...this.#staged]
    const insert = this.#insertStatement()
    for (const [hash, staged] of taken) insert.run(hash, staged.bytes)
    return {
      committed: () => {
        for (const [hash, staged] of taken) {
          if (this.#staged.get(hash) === staged) this.#staged.delete(hash)
          staged.resolve()
        }
      },
      // The table a rolled-back transaction created is gone too.
      rolledBack: () => this.#forgetTable(),
    }
  }

  async get(hash: string): Promise<Buffer | undefined> {
    checkBlobHash(hash)
    const staged = this.#staged.get(hash)
    if (staged !== undefined) return Buffer.from(staged.bytes)
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

  // A transaction that may have created the table rolled back: look again next time.
  #forgetTable(): void {
    this.#created = false
    this.#insert = undefined
  }

  // Inside a transaction: the table (on the first write) and the insert, prepared once.
  #insertStatement(): Database.Statement {
    if (!this.#created) {
      this.#db.exec(TABLE)
      this.#created = true
      this.#insert = undefined
    }
    this.#insert ??= this.#db.prepare('INSERT INTO checkpoint_blobs (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING')
    return this.#insert
  }
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}
