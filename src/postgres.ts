/**
 * `ledgerloop/postgres`: the PostgreSQL session store and the worker runtime that shares sessions across
 * processes and machines with leases and fencing. A separate entry point so that only programs which use it
 * load `pg` (an optional peer dependency: install it beside ledgerloop).
 * @packageDocumentation
 */
export * from './store/postgres.js'
export { runWorker } from './worker/run-worker.js'
export type { WorkerOptions, WorkerSummary } from './worker/run-worker.js'
export type { WorkerEvent } from './worker/session-task.js'
export { turnScript } from './worker/turn-script.js'
export { storeApprovalPlugin } from './worker/store-approvals.js'
export type { StoreApprovalOptions } from './worker/store-approvals.js'
