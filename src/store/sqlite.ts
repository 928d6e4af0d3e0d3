/**
 * `ledgerloop/sqlite`: the SQLite session store. A separate entry point so that only programs which use it
 * load `better-sqlite3` (an optional peer dependency: install it beside ledgerloop).
 * @packageDocumentation
 */
export { SqliteStore } from './sqlite/sqlite-store.js'
export type { SqliteStoreOptions } from './sqlite/sqlite-store.js'
