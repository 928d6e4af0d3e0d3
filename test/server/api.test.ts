import { request as httpRequest } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'

interface Row {
  id: string
  title: string
  status: string
  cost?: { total: number; currency: string; asOf?: string }
  turns: number
  lastReason: string | null
  usage?: { input: number; output: number; cacheRead: number }
}

let f: ServeFixture

beforeAll(async () => {
  f = await startServe()
})
afterAll(async () => {
  await f.close()
})

async function newSession(body: unknown = {}): Promise<string> {
  const res = await f.post('/api/sessions', body)
  expect(res.status).toBe(201)
  return ((await res.json()) as { id: string }).id
}

async function settled(id: string, turns: number): Promise<void> {
  await f.until(async () => {
    const s = (await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number; status: string }
    return s.turns >= turns && s.status === 'idle'
  })
}

// A raw request, for what fetch will not send (a forged Origin, a traversal path kept verbatim).
function raw(path: string, headers: Record<string, string> = {}, method = 'GET', body?: string): Promise<{ status: number; body: string }> {
  const url = new URL(f.base)
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (c: string) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }))
    })
    req.on('error', reject)
    if (body !== undefined) req.write(body)
    req.end()
  })
}

describe('serve API: security', () => {
  it('answers 401 without a token and with a wrong one, on every API route; GET / needs none', async () => {
    for (const path of ['/api/sessions', '/api/sessions/x/events', '/api/sessions/x/stream', '/api/openapi.json', '/api/nope']) {
      const none = await fetch(`${f.base}${path}`)
      expect(none.status, path).toBe(401)
      expect(((await none.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED')
      const wrong = await fetch(`${f.base}${path}`, { headers: { authorization: 'Bearer not-the-token' } })
      expect(wrong.status, path).toBe(401)
    }
    const post = await fetch(`${f.base}/api/sessions`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}x` }, body: '{}' })
    expect(post.status).toBe(401)
    expect((await fetch(`${f.base}/api/sessions?token=wrong`)).status).toBe(401)
    // Spellings the router decodes to an API route need the token too.
    for (const path of ['/%61pi/sessions', '/%61%70%69/sessions', '/api/sessions/', '/api%2Fsessions']) expect((await raw(path)).status, path).not.toBe(200)
    expect((await raw('/%61pi/sessions')).status).toBe(401)
    expect((await fetch(`${f.base}/api/sessions?token=${TOKEN}`)).status).toBe(200)
    const page = await fetch(`${f.base}/`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'")
  })

  it('refuses a foreign Origin with 403 even with the token, and accepts its own', async () => {
    const foreign = await raw('/api/sessions', { origin: 'http://evil.example', authorization: `Bearer ${TOKEN}` })
    expect(foreign.status).toBe(403)
    expect(JSON.parse(foreign.body).error.code).toBe('FORBIDDEN_ORIGIN')
    const post = await raw('/api/sessions', { origin: 'http://evil.example', authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, 'POST', '{}')
    expect(post.status).toBe(403)
    const own = await raw('/api/sessions', { origin: f.base, authorization: `Bearer ${TOKEN}` })
    expect(own.status).toBe(200)
  })

  it('answers 413 for an oversized body and 400 with a message for malformed JSON and invalid input', async () => {
    const id = await newSession()
    const big = await f.post(`/api/sessions/${id}/followup`, { text: 'x'.repeat(2 * 1024 * 1024) })
    expect(big.status).toBe(413)
    expect(((await big.json()) as { error: { code: string } }).error.code).toBe('BODY_TOO_LARGE')
    const malformed = await f.api(`/api/sessions/${id}/followup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text": "unterminated' })
    expect(malformed.status).toBe(400)
    const body = (await malformed.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('INVALID_JSON')
    expect(body.error.message).toMatch(/JSON/)
    const missing = await f.post(`/api/sessions/${id}/followup`, { txt: 'typo' })
    expect(missing.status).toBe(400)
    expect(((await missing.json()) as { error: { message: string } }).error.message).toMatch(/text/)
    const extra = await f.post('/api/sessions', { provider: 'scripted', apiKey: 'sk-should-not-be-accepted' })
    expect(extra.status).toBe(400)
    const badDecision = await f.post(`/api/sessions/${id}/approvals/c1`, { decision: 'maybe' })
    expect(badDecision.status).toBe(400)
    const badQuery = await f.api('/api/sessions?limit=0')
    expect(badQuery.status).toBe(400)
  })

  it('serves only the page files: traversal and unknown paths are 404', async () => {
    for (const path of ['/../package.json', '/assets/../../package.json', '/assets/%2e%2e/%2e%2e/package.json', '/assets/..%2f..%2fpackage.json', '/etc/passwd', '/assets/vendor/../../server.ts']) {
      const res = await raw(path)
      expect(res.status, path).toBe(404)
      expect(res.body).not.toContain('"name": "ledgerloop"')
    }
    const app = await fetch(`${f.base}/assets/app.js`)
    expect(app.status).toBe(200)
    expect(app.headers.get('content-type')).toContain('javascript')
    expect((await fetch(`${f.base}/assets/vendor/preact.mjs`)).status).toBe(200)
  })
})

describe('serve API: routes', () => {
  it('creates a session, runs a followup and lists it with status, turns, reason, usage and cost', async () => {
    const id = await newSession({ model: 'm1', system: 'You are a test persona.' })
    const queued = await f.post(`/api/sessions/${id}/followup`, { text: 'hi there' })
    expect(queued.status).toBe(202)
    await settled(id, 1)
    const list = (await (await f.api('/api/sessions')).json()) as { sessions: Row[]; total: number }
    const row = list.sessions.find((s) => s.id === id)
    expect(row).toMatchObject({ title: 'hi there', turns: 1, lastReason: 'completed', status: 'idle', usage: { input: 10, output: 2 } })
    // 10 input tokens at $1000/M + 2 output tokens at $2000/M.
    expect(row?.cost).toEqual({ total: 0.014, currency: 'USD', asOf: '2026-12-01' })
    const filtered = (await (await f.api('/api/sessions?q=HI%20THERE&status=idle&limit=1')).json()) as { sessions: Row[] }
    expect(filtered.sessions.map((s) => s.id)).toEqual([id])
    const none = (await (await f.api('/api/sessions?q=nothing-like-this')).json()) as { sessions: Row[]; total: number }
    expect(none.total).toBe(0)
    const one = (await (await f.api(`/api/sessions/${id}`)).json()) as { header: { id: string }; provider: string; model: string }
    expect(one).toMatchObject({ header: { id }, provider: 'scripted', model: 'm1', cost: { total: 0.014, currency: 'USD' } })
    const request = (await (await f.api(`/api/sessions/${id}/requests/1`)).json()) as { system: string }
    expect(request.system).toContain('You are a test persona.')
  })

  it('compacts a session by hand: POST /api/sessions/:id/compact answers the outcome and logs it like the plugin', async () => {
    const id = await newSession({ model: 'm1' })
    for (const [n, text] of ['one', 'two', 'three', 'four'].entries()) {
      await f.post(`/api/sessions/${id}/followup`, { text })
      await settled(id, n + 1)
    }
    const answer = await f.post(`/api/sessions/${id}/compact`)
    expect(answer.status).toBe(200)
    const outcome = (await answer.json()) as { outcome: string; shrank: boolean }
    expect(outcome).toMatchObject({ outcome: 'summarized', shrank: true })
    const events = ((await (await f.api(`/api/sessions/${id}/events?limit=1000`)).json()) as { events: { type: string }[] }).events
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['compaction/start', 'compaction/summary', 'compaction/end']))
    const verdict = (await (await f.api(`/api/sessions/${id}/verify`)).json()) as { ok: boolean }
    expect(verdict.ok).toBe(true)
    expect((await f.post('/api/sessions/no-such-session/compact')).status).toBe(404)
  })

  it('pages the session list', async () => {
    await newSession()
    await newSession()
    // The list is ordered by last activity: let earlier tests' sessions finish writing (timer flushes move a
    // session up), so the two pages are read from the same order.
    const order = async (): Promise<string> => ((await (await f.api('/api/sessions?limit=500')).json()) as { sessions: Row[] }).sessions.map((r) => r.id).join()
    await f.until(async () => {
      const before = await order()
      await new Promise((r) => setTimeout(r, 150))
      return before === (await order())
    })
    const first = (await (await f.api('/api/sessions?limit=1')).json()) as { sessions: Row[]; total: number; next?: number }
    expect(first.sessions).toHaveLength(1)
    expect(first.next).toBe(1)
    const second = (await (await f.api(`/api/sessions?limit=1&offset=${String(first.next)}`)).json()) as { sessions: Row[] }
    expect(second.sessions[0]?.id).not.toBe(first.sessions[0]?.id)
  })

  it('reads events by seq range with a next cursor, and 404s an unknown session', async () => {
    const id = await newSession()
    await f.post(`/api/sessions/${id}/followup`, { text: 'hello' })
    await settled(id, 1)
    const all = (await (await f.api(`/api/sessions/${id}/events`)).json()) as { events: { seq: number; type: string }[]; next?: number }
    expect(all.events.map((e) => e.seq)).toEqual(all.events.map((_, i) => i))
    expect(all.next).toBeUndefined()
    const page = (await (await f.api(`/api/sessions/${id}/events?after=2&limit=3`)).json()) as { events: { seq: number }[]; next?: number }
    expect(page.events.map((e) => e.seq)).toEqual([3, 4, 5])
    expect(page.next).toBe(5)
    expect((await f.api('/api/sessions/no-such-session/events')).status).toBe(404)
    // An id that could name a path never reaches a store: it fails validation.
    expect((await f.api('/api/sessions/..%2F..%2Fetc/events')).status).toBe(400)
    expect((await f.post('/api/sessions/no-such-session/followup', { text: 'x' })).status).toBe(404)
  })

  it('rebuilds request n with its diff and the stable prefix, and 404s a request that does not exist', async () => {
    const id = await newSession()
    await f.post(`/api/sessions/${id}/followup`, { text: 'echo one' })
    await settled(id, 1)
    const first = (await (await f.api(`/api/sessions/${id}/requests/1`)).json()) as { n: number; count: number; diff: unknown; messages: unknown[]; tools: { name: string }[]; config: { model: string } }
    expect(first).toMatchObject({ n: 1, count: 2, diff: null, config: { model: 'm1' } })
    expect(first.tools.map((t) => t.name).sort()).toEqual(['deploy', 'echo'])
    const second = (await (await f.api(`/api/sessions/${id}/requests/2`)).json()) as {
      messages: { role: string }[]
      diff: { from: number; to: number; commonMessages: number; addedMessages: { role: string }[]; stablePrefix: { tools: boolean; system: boolean; messages: number } }
    }
    expect(second.diff.from).toBe(1)
    expect(second.diff.to).toBe(2)
    expect(second.diff.commonMessages).toBe(first.messages.length)
    expect(second.diff.addedMessages.map((m) => m.role)).toEqual(['assistant', 'user'])
    expect(second.diff.stablePrefix).toEqual({ tools: true, system: true, messages: first.messages.length })
    expect((await f.api(`/api/sessions/${id}/requests/3`)).status).toBe(404)
    expect((await f.api(`/api/sessions/${id}/requests/0`)).status).toBe(400)
  })

  it('verifies a session, lays out its timeline, and forks it', async () => {
    const id = await newSession()
    await f.post(`/api/sessions/${id}/followup`, { text: 'echo two' })
    await settled(id, 1)
    expect(await (await f.api(`/api/sessions/${id}/verify`)).json()).toMatchObject({ ok: true, problems: [], requests: 2 })
    const timeline = (await (await f.api(`/api/sessions/${id}/timeline`)).json()) as { rows: { kind: string; status: string; request?: number }[] }
    expect(timeline.rows.map((r) => r.kind)).toEqual(['turn', 'step', 'request', 'tool', 'step', 'request'])
    expect(timeline.rows[0]?.status).toBe('completed')
    expect(timeline.rows.filter((r) => r.kind === 'request').map((r) => r.request)).toEqual([1, 2])
    const events = (await (await f.api(`/api/sessions/${id}/events`)).json()) as { events: unknown[] }
    const fork = await f.post(`/api/sessions/${id}/fork`, {})
    expect(fork.status).toBe(201)
    const child = ((await fork.json()) as { id: string }).id
    const childEvents = (await (await f.api(`/api/sessions/${child}/events`)).json()) as { events: unknown[] }
    expect(childEvents.events.length).toBe(events.events.length + 1) // + session/end-seed
    const bad = await f.post(`/api/sessions/${id}/fork`, { at: 3 })
    expect(bad.status).toBe(409)
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('OPEN_TURN')
  })

  it('serves pending approvals and lets an answer continue the turn (allow, deny)', async () => {
    const id = await newSession()
    await f.post(`/api/sessions/${id}/followup`, { text: 'deploy please' })
    const pending = await f.until(async () => {
      const list = (await (await f.api(`/api/sessions/${id}/approvals`)).json()) as { approvals: { callId: string; tool: string; args: unknown; askedAt: string }[] }
      return list.approvals.length > 0 ? list.approvals : undefined
    })
    expect(pending[0]).toMatchObject({ tool: 'deploy', args: { target: 'staging' } })
    expect(Number.isNaN(Date.parse(pending[0]?.askedAt ?? ''))).toBe(false)
    const status = (await (await f.api(`/api/sessions/${id}`)).json()) as { status: string }
    expect(status.status).toBe('awaiting-approval')
    expect((await f.post(`/api/sessions/${id}/approvals/not-a-call`, { decision: 'allow' })).status).toBe(404)
    const answer = await f.post(`/api/sessions/${id}/approvals/${pending[0]?.callId}`, { decision: 'allow' })
    expect(answer.status).toBe(200)
    await settled(id, 1)
    expect(f.deployed).toEqual(['staging'])
    const events = (await (await f.api(`/api/sessions/${id}/events`)).json()) as { events: { type: string; data: Record<string, unknown> }[] }
    expect(events.events.find((e) => e.type === 'permission/decision')?.data).toMatchObject({ decision: 'allow', by: 'user' })

    await f.post(`/api/sessions/${id}/followup`, { text: 'deploy again' })
    const second = await f.until(async () => ((await (await f.api(`/api/sessions/${id}/approvals`)).json()) as { approvals: { callId: string }[] }).approvals[0])
    await f.post(`/api/sessions/${id}/approvals/${second.callId}`, { decision: 'deny' })
    await settled(id, 2)
    expect(f.deployed).toEqual(['staging'])
    const results = (await (await f.api(`/api/sessions/${id}/events`)).json()) as { events: { type: string; data: { error?: { code: string } } }[] }
    expect(results.events.filter((e) => e.type === 'tool/result').map((e) => e.data.error?.code)).toEqual([undefined, 'TOOL_DENIED'])
  })

  it('cancels a running turn (aborted by the user), and steers and injects input', async () => {
    const id = await newSession()
    await f.post(`/api/sessions/${id}/followup`, { text: 'hang on' })
    await f.until(async () => ((await (await f.api(`/api/sessions/${id}`)).json()) as { status: string }).status === 'running')
    expect((await f.post(`/api/sessions/${id}/cancel`)).status).toBe(202)
    await settled(id, 1)
    const after = (await (await f.api(`/api/sessions/${id}`)).json()) as { lastReason: string }
    expect(after.lastReason).toBe('aborted')

    expect((await f.post(`/api/sessions/${id}/inject`, { text: 'context for later' })).status).toBe(202)
    expect((await f.post(`/api/sessions/${id}/steer`, { text: 'hello again' })).status).toBe(202)
    await settled(id, 2)
    const events = (await (await f.api(`/api/sessions/${id}/events`)).json()) as { events: { type: string; data: { content?: { text?: string }[] } }[] }
    const texts = events.events.filter((e) => e.type === 'user/message').map((e) => e.data.content?.[0]?.text)
    expect(texts).toEqual(expect.arrayContaining(['hang on', 'context for later', 'hello again']))
  })

  it('publishes an OpenAPI document naming every binding route', async () => {
    const doc = (await (await f.api('/api/openapi.json')).json()) as { openapi: string; paths: Record<string, Record<string, unknown>> }
    expect(doc.openapi).toMatch(/^3\./)
    const routes = Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`))
    for (const route of [
      'GET /api/sessions',
      'POST /api/sessions',
      'GET /api/sessions/{id}/events',
      'GET /api/sessions/{id}/stream',
      'POST /api/sessions/{id}/followup',
      'POST /api/sessions/{id}/steer',
      'POST /api/sessions/{id}/inject',
      'POST /api/sessions/{id}/cancel',
      'GET /api/sessions/{id}/approvals',
      'POST /api/sessions/{id}/approvals/{callId}',
      'GET /api/sessions/{id}/requests/{n}',
      'GET /api/sessions/{id}/verify',
      'POST /api/sessions/{id}/fork',
    ]) {
      expect(routes).toContain(route)
    }
  })
})
