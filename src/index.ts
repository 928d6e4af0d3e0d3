/**
 * ledgerloop — an agent harness whose every model request is rebuildable from a durable session log.
 * @packageDocumentation
 */
export { HarnessError, InvariantError, errorChain } from './errors/harness-error.js'
export { checkJsonSnapshot, deepFreeze, isJsonValue, snapshotJson, snapshotJsonValue } from './json/lossless.js'
export type { JsonIssue, JsonObject, JsonSnapshotResult, JsonValue } from './json/lossless.js'
