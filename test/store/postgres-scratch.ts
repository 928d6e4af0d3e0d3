/**
 * A scratch PostgreSQL database per test file: created with a random name on the local server (127.0.0.1:5432,
 * trust auth, or LEDGERLOOP_TEST_PG_URL pointing at another maintenance database) and dropped WITH (FORCE).
 */
import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** The maintenance database the scratch databases are created from. */
export const ADMIN_URL = process.env.LEDGERLOOP_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'

/** A database that exists until `drop()`. */
export interface ScratchDatabase {
  readonly name: string
  /** Connection string of the scratch database. */
  readonly url: string
  drop(): Promise<void>
}

async function admin<T>(run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL })
  await client.connect()
  try {
    return await run(client)
  } finally {
    await client.end()
  }
}

/** Creates `ll_test_<random>` and returns its URL. */
export async function createScratchDatabase(prefix = 'll_test'): Promise<ScratchDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`
  await admin((c) => c.query(`CREATE DATABASE "${name}"`))
  const url = new URL(ADMIN_URL)
  url.pathname = `/${name}`
  return {
    name,
    url: url.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(() => undefined),
  }
}
