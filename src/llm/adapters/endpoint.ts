import type { StreamChunk } from '../types.js'

/* Addressing an endpoint: its URL and the API key for one request. */

/** Where an adapter's API key comes from, resolved on every request (never at construction). */
export interface ApiKeySource {
  /** An explicit key (wins over the environment). */
  readonly apiKey?: string
  /** Environment variable read at request time when no explicit key is set. */
  readonly env?: string
  /** When true, a missing key ends the request with `AUTH`; when false (local servers) no header is sent. */
  readonly required: boolean
}

/**
 * Reads the API key for one request. The environment is read here, at request time, so a registry can be built
 * (and the catalog browsed) before the key exists, and a rotated key is picked up without re-registering.
 */
export function resolveApiKey(source: ApiKeySource): string | undefined {
  const explicit = source.apiKey?.trim()
  if (explicit !== undefined && explicit !== '') return explicit
  if (source.env === undefined) return undefined
  const fromEnv = process.env[source.env]?.trim()
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : undefined
}

/** The failure of a request whose required key is missing: names where the key was looked for. */
export function missingKeyFinish(provider: string, env: string | undefined): StreamChunk {
  const where = env !== undefined ? `set ${env} or pass apiKey` : 'pass apiKey'
  return { type: 'finish', reason: { kind: 'error', failure: { message: `no API key for ${provider}: ${where}`, code: 'AUTH' } } }
}

/** Joins a base URL and a path without doubling or dropping the slash. */
export function joinUrl(baseURL: string, path: string): string {
  return `${baseURL.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`
}
