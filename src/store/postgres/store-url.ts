import { HarnessError } from '../../errors/harness-error.js'
import { PostgresStore, type PostgresStoreOptions } from './postgres-store.js'

/** Whether a `--store` value names a PostgreSQL database (`postgres://…` or `postgresql://…`). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value)
}

/**
 * Opens a {@link PostgresStore} from a `postgres://` URL, as `--store postgres://…` does. A `schema` query
 * parameter picks the PostgreSQL schema (`postgres://host/db?schema=agents`); the rest of the URL goes to `pg`
 * untouched. Waits until the schema is ready, so a bad URL fails here with a clear error.
 * @throws HarnessError `INVALID_CONFIG` for a URL that is not `postgres://`; `STORE_UNAVAILABLE` when the
 *   database cannot be reached (the message never contains the password)
 */
export async function openPostgresStoreFromUrl(url: string, options: Omit<PostgresStoreOptions, 'connectionString' | 'pool'> = {}): Promise<PostgresStore> {
  if (!isPostgresUrl(url)) throw new HarnessError('a PostgreSQL store URL starts with postgres:// or postgresql://', 'INVALID_CONFIG')
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new HarnessError('the PostgreSQL store URL is not a valid URL', 'INVALID_CONFIG')
  }
  const schema = parsed.searchParams.get('schema')
  parsed.searchParams.delete('schema')
  const store = new PostgresStore({ ...options, connectionString: parsed.toString(), ...(schema !== null && options.schema === undefined ? { schema } : {}) })
  try {
    await store.ready()
  } catch (error) {
    await store.close().catch(() => undefined)
    // The store's own STORE_UNAVAILABLE does not say which database: this message does (without the password).
    if (error instanceof HarnessError && error.code !== 'STORE_UNAVAILABLE') throw error
    const safe = new URL(parsed.toString())
    safe.password = ''
    const cause = error instanceof HarnessError ? error.cause : error
    const why = cause instanceof Error && cause.message !== '' ? cause.message : (error as Error).message
    throw new HarnessError(`cannot use the PostgreSQL store at ${safe.toString()}: ${why}`, 'STORE_UNAVAILABLE', { cause: error })
  }
  return store
}
