// File checkpoints of a PostgreSQL store: the `checkpoint_blobs` table of the store's schema (migration 4),
// keyed by SHA-256. A batch is one INSERT … ON CONFLICT DO NOTHING statement: committed (and so durable) when
// it returns, and a blob another process stored first is simply kept.
import type pg from 'pg'
import { checkBlobHash } from '../checkpoint-blobs.js'
import type { CheckpointBlobStore } from '../types.js'
import type { StoreTables } from './schema.js'

// Bytes per INSERT: large pre-images go in several statements rather than one huge message.
const BATCH_BYTES = 8 * 1024 * 1024

/** Checkpoint blobs in the store's database. */
export class PostgresCheckpointBlobs implements CheckpointBlobStore {
  readonly #pool: pg.Pool
  readonly #tables: StoreTables
  readonly #ready: PromiseLike<void>

  /** @param ready - resolves once the schema is migrated */
  constructor(pool: pg.Pool, tables: StoreTables, ready: PromiseLike<void>) {
    this.#pool = pool
    this.#tables = tables
    this.#ready = ready
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const hash of blobs.keys()) checkBlobHash(hash)
    if (blobs.size === 0) return
    await this.#ready
    let hashes: string[] = []
    let datas: Buffer[] = []
    let bytes = 0
    const send = async (): Promise<void> => {
      if (hashes.length === 0) return
      await this.#pool.query(
        `INSERT INTO ${this.#tables.checkpointBlobs} (hash, data) SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT (hash) DO NOTHING`,
        [hashes, datas],
      )
      hashes = []
      datas = []
      bytes = 0
    }
    for (const [hash, data] of blobs) {
      hashes.push(hash)
      datas.push(Buffer.from(data.buffer, data.byteOffset, data.byteLength))
      bytes += data.byteLength
      if (bytes >= BATCH_BYTES) await send()
    }
    await send()
  }

  async get(hash: string): Promise<Buffer | undefined> {
    checkBlobHash(hash)
    await this.#ready
    const found = await this.#pool.query<{ data: Buffer }>(`SELECT data FROM ${this.#tables.checkpointBlobs} WHERE hash = $1`, [hash])
    return found.rows[0]?.data
  }
}
