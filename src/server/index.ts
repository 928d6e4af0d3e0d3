/**
 * `ledgerloop/server`: the HTTP API, live event tails and web page of `ledgerloop serve`, for embedding the
 * server in a program of your own.
 * @packageDocumentation
 */
export { createLedgerServer } from './server.js'
export type { LedgerServer, LedgerServerOptions } from './server.js'
export { LocalSessionHost } from './local-session-host.js'
export type { LocalSessionHostOptions } from './local-session-host.js'
export { PostgresSessionPort } from './postgres-session-port.js'
export type { PostgresSessionPortOptions } from './postgres-session-port.js'
export type {
  ApprovalVerdict,
  NewSessionOptions,
  PendingApproval,
  RerunRequest,
  SessionEventFeed,
  SessionFeedListener,
  SessionInputPort,
  SessionRunStatus,
  SessionSnapshot,
} from './session-ports.js'
export { AccessGuard, generateToken, isLoopbackHost, isLoopbackHostHeader } from './access-guard.js'
export type { AccessGuardOptions, Refusal } from './access-guard.js'
export { eventFrame, resumePoint } from './event-stream.js'
export type { EventStreamOptions } from './event-stream.js'
export type { SessionListRow } from './session-directory.js'
