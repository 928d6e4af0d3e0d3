import pg from 'pg'
import { expect } from 'vitest'
import { scriptedAdapter } from '../../src/index.js'
import type { GenerateOptions, LlmAdapter, StreamChunk } from '../../src/llm/types.js'
import { PostgresStore, runWorker, storeApprovalPlugin } from '../../src/postgres.js'
import { createLedgerServer, PostgresSessionPort, type LedgerServer } from '../../src/server/index.js'
import { serveScript, serveTools, TOKEN } from './serve-fixture.js'

// `serve --store postgres://…` with a worker fleet: the server writes the inbox and follows the log, a worker
// (runWorker in this process, over its own store and pool) runs the sessions. The model is serve-fixture's,
// plus `stream …`, which streams a first piece of text and then waits until the turn is cancelled.

/** The PostgreSQL schema of the fleet tests (one per scratch database). */
export const SCHEMA = 'fleet'

/** The text of a request's last message. */
export function lastText(request: GenerateOptions): string {
  const last = request.messages[request.messages.length - 1]
  return last?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? ''
}

// `stream …` streams a first piece of text and then waits until the turn is cancelled: a tail that shows that
// piece while the turn is still open proves the worker commits chunks as they arrive, not at the turn's end.
async function* streamThenWait(signal: AbortSignal | undefined): AsyncGenerator<StreamChunk> {
  yield { type: 'block-start', index: 0, blockType: 'text' }
  yield { type: 'text-delta', index: 0, text: 'first words ' }
  await new Promise<void>((resolve) => {
    if (signal === undefined || signal.aborted) return resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })
}

function fleetModel(): LlmAdapter {
  const scripted = scriptedAdapter({ script: serveScript, recordRequests: false, models: { m1: { contextWindow: 100_000, defaultMaxTokens: 1000 } } })
  return {
    provider: 'scripted',
    resolveModel: (model) => scripted.resolveModel?.(model),
    stream: (request) => (lastText(request).startsWith('stream') ? streamThenWait(request.signal) : scripted.stream(request)),
  }
}

/** A server over PostgreSQL plus one worker, sharing a scratch database. */
export interface Fleet {
  readonly server: LedgerServer
  readonly base: string
  readonly serverStore: PostgresStore
  readonly workerStore: PostgresStore
  readonly deployed: string[]
  /** Calls of store methods that take a lease, made through the server's store. */
  readonly leaseCalls: string[]
  api(path: string, init?: RequestInit): Promise<Response>
  post(path: string, body?: unknown): Promise<Response>
  close(): Promise<void>
}

/** Starts the server (token {@link TOKEN}, a free port) and a worker over `url`. */
export async function startFleet(url: string): Promise<Fleet> {
  const serverStore = new PostgresStore({ connectionString: url, schema: SCHEMA })
  const leaseCalls: string[] = []
  // Whatever the server does must never open, create (owned) or claim a session: only the workers own them.
  for (const method of ['open', 'create', 'claimSessions'] as const) {
    const original = serverStore[method].bind(serverStore) as (...args: never[]) => unknown
    ;(serverStore as unknown as Record<string, unknown>)[method] = (...args: never[]) => {
      leaseCalls.push(method)
      return original(...args)
    }
  }
  const port = new PostgresSessionPort({ store: serverStore, cwd: '/srv/work', pollMs: 200 })
  const server = await createLedgerServer({ store: serverStore, sessions: { input: port, feed: port, close: () => port.close() }, token: TOKEN, port: 0 })
  const base = await server.listen()
  const workerStore = new PostgresStore({ connectionString: url, schema: SCHEMA, leaseMs: 5000 })
  const deployed: string[] = []
  const stop = new AbortController()
  const worker = runWorker({
    store: workerStore,
    adapters: [fleetModel()],
    tools: serveTools(deployed),
    plugins: [storeApprovalPlugin({ store: workerStore, rules: { allow: ['echo'] }, pollMs: 200 })],
    provider: 'scripted',
    model: 'm1',
    idleGraceMs: 300,
    pollMs: 100,
    signal: stop.signal,
  })
  const api = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, ...(init.headers as Record<string, string> | undefined) } })
  return {
    server,
    base,
    serverStore,
    workerStore,
    deployed,
    leaseCalls,
    api,
    post: (path, body) => api(path, { method: 'POST', ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) }),
    async close() {
      stop.abort()
      const summary = await worker
      expect(summary.errors).toBe(0)
      await server.close()
      await serverStore.close()
      await workerStore.close()
    },
  }
}

/** The `owner` column of a session's row: who holds its lease. */
export async function leaseOwner(url: string, id: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<{ owner: string | null }>(`SELECT owner FROM "${SCHEMA}".sessions WHERE id = $1`, [id])).rows[0]?.owner ?? null
  } finally {
    await client.end()
  }
}

/** Polls until `check` gives a value (or fails after `ms`). */
export async function until<T>(check: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined && value !== false) return value
    if (Date.now() > deadline) throw new Error('condition not reached in time')
    await new Promise((r) => setTimeout(r, 50))
  }
}
