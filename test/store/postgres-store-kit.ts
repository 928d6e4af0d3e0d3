// The lifecycle PostgreSQL store tests share: one scratch database per file, an admin pool on it, stores opened
// in schemas of their own and closed after each test.
import pg from 'pg'
import { afterAll, afterEach, beforeAll } from 'vitest'
import { PostgresStore } from '../../src/postgres.js'
import { createScratchDatabase, type ScratchDatabase } from './postgres-scratch.js'

/** What a test file gets from `usePostgresStores` (valid inside its tests). */
export interface PostgresStoreKit {
  /** Connection string of the file's scratch database. */
  readonly url: string
  /** A pool on the scratch database, for reading and changing tables behind a store's back. */
  readonly admin: pg.Pool
  /** A store in `schema` (closed after the test). */
  storeIn(schema: string, options?: { leaseMs?: number }): PostgresStore
  /** A schema name no other test of the file used (`<prefix>_<n>`). */
  freshSchema(prefix?: string): string
}

/** Registers the file's hooks: the scratch database before all tests, stores closed after each, dropped after all. */
export function usePostgresStores(): PostgresStoreKit {
  let db: ScratchDatabase | undefined
  let admin: pg.Pool | undefined
  const opened: PostgresStore[] = []
  let schemaNumber = 0
  beforeAll(async () => {
    db = await createScratchDatabase()
    admin = new pg.Pool({ connectionString: db.url, max: 2 })
  })
  afterEach(async () => {
    await Promise.allSettled(opened.splice(0).map((s) => s.close()))
  })
  afterAll(async () => {
    await admin?.end()
    await db?.drop()
  })
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the scratch database is made in beforeAll: use the kit inside tests')
    return value
  }
  return {
    get url() {
      return ready(db).url
    },
    get admin() {
      return ready(admin)
    },
    storeIn(schema, options = {}) {
      const store = new PostgresStore({ connectionString: ready(db).url, schema, leaseMs: options.leaseMs ?? 30_000 })
      opened.push(store)
      return store
    },
    freshSchema: (prefix = 't') => `${prefix}_${schemaNumber++}`,
  }
}
