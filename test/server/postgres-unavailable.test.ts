import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarness, defineTool, HarnessError, scriptedAdapter, type SessionEvent } from '../../src/index.js'
import type { GenerateOptions } from '../../src/llm/types.js'
import { PostgresStore } from '../../src/postgres.js'
import { createLedgerServer, PostgresSessionPort, type LedgerServer } from '../../src/server/index.js'
import { ADMIN_URL, createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'
import { TOKEN } from './serve-fixture.js'

// A PostgreSQL store that cannot be reached, or that refuses one more client: one stable code (STORE_UNAVAILABLE)
// from the store, a 503 with that code from `serve`, and a turn that says so instead of UNKNOWN. The machine's
// PostgreSQL keeps running for everyone else: a scratch database is made to refuse connections, a scratch role
// is capped with CONNECTION LIMIT, and a closed port stands for a server that is down.

let db: ScratchDatabase
const roles: string[] = []
beforeAll(async () => {
  db = await createScratchDatabase()
})
afterAll(async () => {
  await admin(`ALTER DATABASE "${db.name}" ALLOW_CONNECTIONS true`)
  await db.drop()
  // Roles are the cluster's, not the database's: dropped once the database holding their objects is gone.
  for (const role of roles) await admin(`DROP ROLE IF EXISTS "${role}"`)
})

async function admin(sql: string, values: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: ADMIN_URL })
  await client.connect()
  try {
    return await client.query(sql, values)
  } finally {
    await client.end()
  }
}

/** Ends every backend matching `where` (on `pg_stat_activity`) and waits until they are gone. */
async function terminate(where: string, value: string): Promise<void> {
  await admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE ${where} = $1 AND pid <> pg_backend_pid()`, [value])
  for (;;) {
    const left = await admin(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE ${where} = $1`, [value])
    if ((left.rows[0] as { n: number }).n === 0) return
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** A TCP port on loopback that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    expect(error).toBeInstanceOf(HarnessError)
    return (error as HarnessError).code
  }
  throw new Error('expected a rejection')
}

async function serveOver(store: PostgresStore): Promise<{ server: LedgerServer; base: string; api: (path: string, init?: RequestInit) => Promise<Response> }> {
  const port = new PostgresSessionPort({ store, pollMs: 200 })
  const server = await createLedgerServer({ store, sessions: { input: port, feed: port, close: () => port.close() }, token: TOKEN, port: 0 })
  const base = await server.listen()
  const api = (path: string, init: RequestInit = {}): Promise<Response> =>
    fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...(init.headers as Record<string, string> | undefined) } })
  return { server, base, api }
}

async function expect503(answer: Response, what: string): Promise<void> {
  expect(answer.status, what).toBe(503)
  const body = (await answer.json()) as { error: { code: string; message: string } }
  expect(Object.keys(body), what).toEqual(['error'])
  expect(body.error.code, what).toBe('STORE_UNAVAILABLE')
  expect(body.error.message, what).toMatch(/unavailable/)
}

describe('PostgreSQL unreachable', () => {
  it('a store pointed at a closed port rejects with STORE_UNAVAILABLE, without the password', async () => {
    const port = await closedPort()
    const store = new PostgresStore({ connectionString: `postgres://someone:sekrit-pw@127.0.0.1:${port}/nothing` })
    try {
      expect(await codeOf(store.ready())).toBe('STORE_UNAVAILABLE')
      expect(await codeOf(store.has('abc'))).toBe('STORE_UNAVAILABLE')
      expect(await codeOf(store.list())).toBe('STORE_UNAVAILABLE')
      expect(await codeOf(store.listening())).toBe('STORE_UNAVAILABLE')
      const error = (await store.read('abc').then(
        () => undefined,
        (e: unknown) => e,
      )) as HarnessError
      expect(error.message).toMatch(/ECONNREFUSED/)
      expect(error.message).not.toContain('sekrit-pw')
    } finally {
      await store.close()
    }
  })

  it('a store created while its database refuses connections works once the database is back', async () => {
    await admin(`ALTER DATABASE "${db.name}" ALLOW_CONNECTIONS false`)
    const store = new PostgresStore({ connectionString: db.url, schema: 'late' })
    try {
      expect(await codeOf(store.ready())).toBe('STORE_UNAVAILABLE')
      expect(await codeOf(store.list())).toBe('STORE_UNAVAILABLE')
      await admin(`ALTER DATABASE "${db.name}" ALLOW_CONNECTIONS true`)
      await store.ready()
      expect((await store.list()).total).toBe(0)
    } finally {
      await admin(`ALTER DATABASE "${db.name}" ALLOW_CONNECTIONS true`)
      await store.close()
    }
  })

  it('serve answers 503 STORE_UNAVAILABLE while the database refuses connections, and recovers when it is back', async () => {
    const store = new PostgresStore({ connectionString: db.url, schema: 'down' })
    await store.ready()
    const { server, api } = await serveOver(store)
    try {
      const created = await api('/api/sessions', { method: 'POST', body: '{}' })
      expect(created.status).toBe(201)
      const { id } = (await created.json()) as { id: string }

      await admin(`ALTER DATABASE "${db.name}" ALLOW_CONNECTIONS false`)
      await terminate('datname', db.name)
      await expect503(await api('/api/sessions'), 'list')
      await expect503(await api(`/api/sessions/${id}`), 'session')
      await expect503(await api(`/api/sessions/${id}/events`), 'events')
      await expect503(await api(`/api/sessions/${id}/stream`), 'stream')
      await expect503(await api(`/api/sessions/${id}/followup`, { method: 'POST', body: JSON.stringify({ text: 'hello' }) }), 'followup')
      await expect503(await api('/api/sessions', { method: 'POST', body: '{}' }), 'create')
      // The page needs no database.
      expect((await fetch(`${server.pageUrl()}`)).status).toBe(200)

      await admin(`ALTER DATABASE "${db.name}" ALLOW_CONNECTIONS true`)
      expect((await api('/api/sessions')).status).toBe(200)
      expect((await api(`/api/sessions/${id}/followup`, { method: 'POST', body: JSON.stringify({ text: 'hello' }) })).status).toBe(202)
    } finally {
      await admin(`ALTER DATABASE "${db.name}" ALLOW_CONNECTIONS true`)
      await server.close()
      await store.close()
    }
  })
})

describe('PostgreSQL: too many clients', () => {
  it('a turn whose tool-call flush meets SQLSTATE 53300 ends error with STORE_UNAVAILABLE, not UNKNOWN', async () => {
    // A role of its own, capped later with CONNECTION LIMIT (which answers 53300 like a full server does).
    const role = `ll_test_limited_${randomBytes(4).toString('hex')}`
    await admin(`CREATE ROLE "${role}" LOGIN`)
    roles.push(role)
    await admin(`ALTER DATABASE "${db.name}" OWNER TO "${role}"`)
    const url = new URL(db.url)
    url.username = role
    const store = new PostgresStore({ connectionString: url.toString(), schema: 'limited' })
    const holder = new pg.Client({ connectionString: url.toString() })
    const ran: string[] = []
    const echo = defineTool({ name: 'echo', description: 'Echoes', parameters: z.object({ text: z.string() }), execute: ({ text }) => (ran.push(text), text) })
    const script = (request: GenerateOptions) => {
      const last = request.messages[request.messages.length - 1]
      return last?.content.some((b) => b.type === 'tool-result') === true ? { text: 'done' } : { toolCalls: [{ name: 'echo', arguments: { text: 'hi' } }] }
    }
    const harness = createHarness({ store, adapters: [scriptedAdapter({ script, models: { m1: { contextWindow: 10_000, defaultMaxTokens: 100 } } })], tools: [echo] })
    try {
      const agent = await harness.createAgent({ provider: 'scripted', model: 'm1' })
      // From here on the role gets one connection, and someone else holds it.
      await admin(`ALTER ROLE "${role}" CONNECTION LIMIT 1`)
      await terminate('usename', role)
      await holder.connect()
      const refused = (await new pg.Client({ connectionString: url.toString() }).connect().then(
        () => undefined,
        (e: unknown) => e,
      )) as { code?: string } | undefined
      expect(refused?.code).toBe('53300')

      agent.followup('echo hi')
      await agent.whenIdle()
      const end = agent.session.events.filter((e: SessionEvent) => e.type === 'turn/end').at(-1)
      expect(end?.data).toMatchObject({ reason: { kind: 'error', error: { code: 'STORE_UNAVAILABLE' } } })
      expect((end?.data as { reason: { error: { message: string } } }).reason.error.message).toMatch(/53300/)
      // The body was not run: its intent could not be recorded.
      expect(ran).toEqual([])
    } finally {
      await holder.end().catch(() => undefined)
      await admin(`ALTER ROLE "${role}" CONNECTION LIMIT -1`)
      await harness.close().catch(() => undefined)
      await store.close().catch(() => undefined)
    }
  })
})
