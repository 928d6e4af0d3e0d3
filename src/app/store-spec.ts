import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { HarnessError } from '../errors/harness-error.js'
import { describeHolder, holderIsDead, parseHolder, type LockHolder } from '../store/file-lock.js'
import { JsonlStore } from '../store/jsonl/jsonl-store.js'
import type { SessionStore } from '../store/types.js'
import { UsageError } from './usage-error.js'

/** Where the CLI keeps sessions, as `--store URL|DIR` names it. */
export type StoreSpec =
  | { readonly kind: 'jsonl'; readonly dir: string }
  | { readonly kind: 'sqlite'; readonly path: string }
  | { readonly kind: 'postgres'; readonly url: string }

/**
 * Parses a `--store` value: `sqlite:PATH` (a SQLite database file), `postgres://…` / `postgresql://…`, or
 * anything else as a folder of JSONL session files. Relative paths resolve against `cwd`.
 * @throws UsageError for an empty value or another URL scheme
 */
export function parseStoreSpec(value: string, cwd: string = process.cwd()): StoreSpec {
  const text = value.trim()
  if (text === '') throw new UsageError('--store is empty: pass a folder, sqlite:PATH or postgres://…')
  if (text.startsWith('sqlite:')) {
    const path = text.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '')
    if (path === '') throw new UsageError(`--store ${text}: sqlite: needs a file path (sqlite:./sessions.db)`)
    return { kind: 'sqlite', path: resolve(cwd, path) }
  }
  if (/^postgres(ql)?:\/\//.test(text)) return { kind: 'postgres', url: text }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    throw new UsageError(`--store ${text.replace(/\/\/[^@/]*@/, '//…@')}: unknown kind of store (a folder, sqlite:PATH or postgres://…)`)
  }
  return { kind: 'jsonl', dir: resolve(cwd, text) }
}

/** The spec as shown to people (a password in a postgres URL is masked). */
export function describeStoreSpec(spec: StoreSpec): string {
  switch (spec.kind) {
    case 'jsonl':
      return spec.dir
    case 'sqlite':
      return `sqlite:${spec.path}`
    case 'postgres':
      return spec.url.replace(/(\/\/[^:/@]*:)[^@]*@/, '$1****@')
  }
}

/**
 * Opens the store a spec names. SQLite is loaded on demand (`better-sqlite3` is an optional peer).
 * @throws UsageError when the store cannot be used in this build
 */
export async function openStore(spec: StoreSpec): Promise<SessionStore> {
  switch (spec.kind) {
    case 'jsonl':
      return new JsonlStore({ dir: spec.dir })
    case 'sqlite': {
      let module: typeof import('../store/sqlite/sqlite-store.js')
      try {
        module = await import('../store/sqlite/sqlite-store.js')
      } catch (error) {
        throw new UsageError(`--store sqlite: needs the optional package better-sqlite3 (npm install better-sqlite3@12.11.1): ${(error as Error).message}`)
      }
      return new module.SqliteStore({ path: spec.path })
    }
    case 'postgres':
      return openPostgresStore(spec.url)
  }
}

/**
 * The PostgreSQL store module, loaded on demand: `pg` is an optional peer, so nothing the CLI loads at start may
 * import it. A missing `pg` is a usage error that says how to install it.
 */
export async function loadPostgresStoreModule(): Promise<typeof import('../store/postgres.js')> {
  try {
    return await import('../store/postgres.js')
  } catch (error) {
    throw new UsageError(`--store postgres://…: needs the optional package pg (npm install pg@8.23.1): ${(error as Error).message}`)
  }
}

/** Whether a `--store` value names a PostgreSQL database (`postgres://…` or `postgresql://…`). */
export function isPostgresStoreUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value)
}

/** The PostgreSQL store of `--store postgres://…`. */
async function openPostgresStore(url: string): Promise<SessionStore> {
  const module = await loadPostgresStoreModule()
  try {
    return await module.openPostgresStoreFromUrl(url)
  } catch (error) {
    if (error instanceof HarnessError && error.code === 'INVALID_CONFIG') throw new UsageError(`--store: ${error.message}`)
    throw error
  }
}

/**
 * Who holds a session open for writing, when it is a live process: read from the JSONL lock file (other stores
 * report their own `SESSION_LOCKED` when opened). Undefined when the session is not held or its holder is dead.
 */
export function liveHolder(spec: StoreSpec, sessionId: string): LockHolder | undefined {
  if (spec.kind !== 'jsonl') return undefined
  const path = join(spec.dir, `${sessionId}.lock`)
  if (!existsSync(path)) return undefined
  let holder: LockHolder | undefined
  try {
    holder = parseHolder(readFileSync(path, 'utf8'))
  } catch {
    return undefined
  }
  return holder !== undefined && !holderIsDead(holder) ? holder : undefined
}

/**
 * Refuses a command that needs a settled log (`verify`, `fork`) on a session another process is writing: its
 * open turn is work in progress, not a broken log.
 */
export function refuseLiveSession(spec: StoreSpec, sessionId: string, what: string): void {
  const holder = liveHolder(spec, sessionId)
  if (holder === undefined) return
  throw new HarnessError(
    `session '${sessionId}' is in use by ${describeHolder(holder)}: ${what} needs a settled log; run it again when that process has finished (or stop it)`,
    'SESSION_LOCKED',
  )
}
