// File checkpoints of a PostgreSQL store: the `checkpoint_blobs` table of the store's schema (migration 4),
// keyed by SHA-256. A batch is one INSERT … ON CONFLICT DO NOTHING statement: committed (and so durable) when
// it returns, and a blob another process stored first is simply kept.
import type pg from 'pg'
import { checkBlobHash } from '../checkpoint-blobs.js'
import type { CheckpointBlobStore } from '../types.js'
import type { StoreTables } from './schema.js'

// Bytes per INSERT: large pre-images go in several statements rather than one huge message.
const BATCH_BYTES = 8 * 1024 * 1024

/** What the blobs use of their store: its pool, its tables, and its schema migration (`ready`). */
export interface BlobStoreParts {
  readonly pool: pg.Pool
  readonly tables: StoreTables
  readonly ready: PromiseLike<void>
}

/** Checkpoint blobs in the store's database. */
export class PostgresCheckpointBlobs implements CheckpointBlobStore {
  readonly #parts: () => BlobStoreParts

  /** @param parts - read at each call (the store creates its blobs before its pool exists) */
  constructor(parts: () => BlobStoreParts) {
    this.#parts = parts
  }

  async put(blobs: ReadonlyMap<string, Uint8Array>): Promise<void> {
    for (const hash of blobs.keys()) checkBlobHash(hash)
    if (blobs.size === 0) return
    const { pool, tables, ready } = this.#parts()
    await ready
    let hashes: string[] = []
    let datas: Buffer[] = []
    let bytes = 0
    const send = async (): Promise<void> => {
      if (hashes.length === 0) return
      await pool.query(
        `INSERT INTO ${tables.checkpointBlobs} (hash, data) SELECT * FROM unnest($1::text[], $2::bytea[]) ON CONFLICT (hash) DO NOTHING`,
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
    const { pool, tables, ready } = this.#parts()
    await ready
    const found = await pool.query<{ data: Buffer }>(`SELECT data FROM ${tables.checkpointBlobs} WHERE hash = $1`, [hash])
    return found.rows[0]?.data
  }
}
