/**
 * `ledgerloop/postgres`: the PostgreSQL session store and the worker runtime on top of it. A separate entry point
 * so that only programs which use it load `pg` (an optional peer dependency: install it beside ledgerloop).
 * @packageDocumentation
 */
export { PostgresStore } from './postgres/postgres-store.js'
export { isPostgresUrl, openPostgresStoreFromUrl } from './postgres/store-url.js'
export type { LeaseLostListener, PostgresStoreOptions, SessionClaim } from './postgres/postgres-store.js'
export { PostgresWriter } from './postgres/postgres-writer.js'
export type { SessionStatus } from './postgres/postgres-writer.js'
export type { InboxInput, InboxRow } from './postgres/inbox-input.js'
export type { ApprovalQuestion, SessionState, StoredApproval, StoredVerdict } from './postgres/approvals.js'
export type { FollowOptions } from './postgres/stored-events.js'
export type { ClaimKind } from './postgres/claim-queries.js'
export { POSTGRES_SCHEMA_VERSION } from './postgres/schema.js'
