import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { rawHttp, type RawAnswer } from './raw-http.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'

// Requests written byte for byte over node:net (see raw-http.ts), as an attacker or a broken client sends them:
// DNS rebinding against a server without a token, and everything Fastify or Node's parser refuses before a route.

let open: ServeFixture // --unsafe-no-token
let guarded: ServeFixture // a token in force
beforeAll(async () => {
  open = await startServe({ token: false })
  guarded = await startServe()
})
afterAll(async () => {
  await open.close()
  await guarded.close()
})

const portOf = (f: ServeFixture): number => Number(new URL(f.base).port)

/** A request with `Connection: close`; `headers` are written verbatim, in order. */
function request(method: string, path: string, headers: readonly string[], body = ''): string {
  const length = body === '' && method === 'GET' ? [] : [`Content-Length: ${Buffer.byteLength(body)}`]
  return [`${method} ${path} HTTP/1.1`, ...headers, ...length, 'Connection: close', '', body].join('\r\n')
}

/** The error body of an answer, checked to be exactly `{ error: { code, message } }`. */
function errorOf(answer: RawAnswer): { code: string; message: string } {
  expect(answer.headers['content-type'], answer.body).toMatch(/^application\/json/)
  const parsed = JSON.parse(answer.body) as { error: { code: string; message: string } }
  expect(Object.keys(parsed)).toEqual(['error'])
  expect(Object.keys(parsed.error).sort()).toEqual(['code', 'message'])
  expect(parsed.error.code).toMatch(/^[A-Z][A-Z_]+$/)
  expect(typeof parsed.error.message).toBe('string')
  return parsed.error
}

async function sessionCount(f: ServeFixture): Promise<number> {
  return ((await (await f.api('/api/sessions')).json()) as { total: number }).total
}

describe('serve without a token: DNS rebinding', () => {
  it('refuses a request naming a foreign Host with 403, even with a matching Origin, and creates nothing', async () => {
    const before = await sessionCount(open)
    const created = await rawHttp(
      portOf(open),
      request('POST', '/api/sessions', ['Host: attacker.example:4141', 'Origin: http://attacker.example:4141', 'Content-Type: application/json'], '{}'),
    )
    expect(created.status).toBe(403)
    expect(errorOf(created).code).toBe('FORBIDDEN_HOST')
    expect(await sessionCount(open)).toBe(before)
    // GETs too, without an Origin (what a rebound page's fetch of a read route looks like to some browsers),
    // the page itself, and the live tail.
    for (const path of ['/api/sessions', '/', '/api/openapi.json', '/api/sessions/x/stream']) {
      const read = await rawHttp(portOf(open), request('GET', path, ['Host: attacker.example']))
      expect(read.status, path).toBe(403)
      expect(errorOf(read).code).toBe('FORBIDDEN_HOST')
      expect(read.body).not.toContain('"sessions"')
    }
  })

  it('serves only Hosts that name the loopback interface, with or without a port', async () => {
    const port = portOf(open)
    for (const host of ['127.0.0.1', `127.0.0.1:${port}`, `localhost:${port}`, 'LOCALHOST', `[::1]:${port}`, '[::1]', `127.1.2.3:${port}`]) {
      expect((await rawHttp(port, request('GET', '/api/sessions', [`Host: ${host}`]))).status, host).toBe(200)
    }
    // Names that only resolve to loopback through DNS (which the attacker controls), and near-misses.
    for (const host of ['localhost.', 'x.localhost', '127.0.0.1.attacker.example', 'attacker.example', '127.256.0.1', '[::ffff:127.0.0.1]', '0.0.0.0', `localhost:${port}:1`]) {
      const answer = await rawHttp(port, request('GET', '/api/sessions', [`Host: ${host}`]))
      expect(answer.status, host).toBe(403)
      expect(errorOf(answer).code).toBe('FORBIDDEN_HOST')
    }
    // No Host at all (HTTP/1.0) is not a loopback name either.
    const bare = await rawHttp(port, 'GET /api/sessions HTTP/1.0\r\n\r\n')
    expect(bare.status).toBe(403)
  })

  it('with a token in force, serves another Host (a reverse proxy forwarding its public name)', async () => {
    const proxied = await rawHttp(portOf(guarded), request('GET', '/api/sessions', ['Host: agents.example.com', `Authorization: Bearer ${TOKEN}`]))
    expect(proxied.status).toBe(200)
    const withOrigin = await rawHttp(
      portOf(guarded),
      request('POST', '/api/sessions', ['Host: agents.example.com', 'Origin: https://agents.example.com', `Authorization: Bearer ${TOKEN}`, 'Content-Type: application/json'], '{}'),
    )
    expect(withOrigin.status).toBe(201)
    // The token still decides.
    expect((await rawHttp(portOf(guarded), request('GET', '/api/sessions', ['Host: agents.example.com']))).status).toBe(401)
  })
})

describe('serve: one error shape for every refusal, Fastify and Node included', () => {
  const auth = `Authorization: Bearer ${TOKEN}`
  const json = 'Content-Type: application/json'

  it('answers malformed URLs, over-long ids, bad content types and bodies with { error: { code, message } }', async () => {
    const cases: [string, string, number, string][] = [
      ['%ff in the path', request('GET', '/api/sessions/%ff', ['Host: 127.0.0.1', auth]), 400, 'INVALID_URL'],
      ['%ff in a page path', request('GET', '/%ff', ['Host: 127.0.0.1']), 400, 'INVALID_URL'],
      ['an id over 128 characters', request('GET', `/api/sessions/${'a'.repeat(300)}`, ['Host: 127.0.0.1', auth]), 400, 'INVALID_REQUEST'],
      ['an id past the router limit', request('POST', `/api/sessions/${'a'.repeat(600)}/cancel`, ['Host: 127.0.0.1', auth]), 414, 'URI_TOO_LONG'],
      ['an unknown route', request('DELETE', '/api/sessions', ['Host: 127.0.0.1', auth]), 404, 'NOT_FOUND'],
      ['a content type that is not JSON', request('POST', '/api/sessions', ['Host: 127.0.0.1', auth, 'Content-Type: application/x-www-form-urlencoded'], 'a=1'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['a malformed content type', request('POST', '/api/sessions', ['Host: 127.0.0.1', auth, 'Content-Type: application /json'], '{}'), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['a control character in the content type', request('POST', '/api/sessions', ['Host: 127.0.0.1', auth, 'Content-Type: application/json\x01'], '{}'), 400, 'BAD_REQUEST'],
      ['invalid JSON', request('POST', '/api/sessions', ['Host: 127.0.0.1', auth, json], '{"system": '), 400, 'INVALID_JSON'],
      ['an empty JSON body', request('POST', '/api/sessions', ['Host: 127.0.0.1', auth, json], ''), 400, 'INVALID_JSON'],
      ['a prototype key', request('POST', '/api/sessions', ['Host: 127.0.0.1', auth, json], '{"__proto__":{"model":"x"}}'), 400, 'INVALID_JSON'],
      ['a bad Content-Length', 'POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: abc\r\n\r\n{}', 400, 'BAD_REQUEST'],
      ['Content-Length with chunked', 'POST /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n{}', 400, 'BAD_REQUEST'],
      ['a request line that is not HTTP', 'GARBAGE\r\n\r\n', 400, 'BAD_REQUEST'],
      ['an unknown method', 'BREW /api/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n', 400, 'BAD_REQUEST'],
    ]
    for (const [what, text, status, code] of cases) {
      const answer = await rawHttp(portOf(guarded), text)
      expect(answer.error, what).toBeUndefined()
      expect(answer.status, what).toBe(status)
      expect(errorOf(answer).code, what).toBe(code)
    }
  })

  it('answers a 100 KB header with a 431 in the same shape, and the client reads it instead of meeting a reset', async () => {
    const big = request('GET', '/api/sessions', ['Host: 127.0.0.1', auth, `X-Padding: ${'a'.repeat(100 * 1024)}`])
    const answer = await rawHttp(portOf(guarded), big)
    expect(answer.error).toBeUndefined()
    expect(answer.status).toBe(431)
    expect(errorOf(answer).code).toBe('HEADERS_TOO_LARGE')
    // A client still sending when the answer arrives (the rest of its header block) is read out, not reset.
    const still = await rawHttp(portOf(guarded), big, { more: 'b'.repeat(256 * 1024) })
    expect(still.error).toBeUndefined()
    expect(still.status).toBe(431)
    expect(errorOf(still).code).toBe('HEADERS_TOO_LARGE')
    // The server is fine afterwards.
    expect((await guarded.api('/api/sessions')).status).toBe(200)
  })
})

describe('serve: JSON bodies are taken as sent', () => {
  it('answers exactly 400 for wrong types and unknown fields, and changes nothing', async () => {
    const { id } = (await (await guarded.post('/api/sessions', {})).json()) as { id: string }
    expect((await guarded.post(`/api/sessions/${id}/followup`, { text: 'hello' })).status).toBe(202)
    await guarded.until(async () => ((await (await guarded.api(`/api/sessions/${id}`)).json()) as { turns: number; status: string }).status === 'idle')
    const events = async (): Promise<number> => ((await (await guarded.api(`/api/sessions/${id}`)).json()) as { events: number }).events
    const sessions = await sessionCount(guarded)
    const stored = await events()
    const cases: [string, unknown][] = [
      [`/api/sessions/${id}/followup`, { text: 5 }],
      [`/api/sessions/${id}/steer`, { text: 5 }],
      [`/api/sessions/${id}/inject`, { text: true }],
      [`/api/sessions/${id}/followup`, { text: 'hi', keep: 'x' }],
      ['/api/sessions', { system: 5 }],
      ['/api/sessions', { model: ['m1'] }],
      [`/api/sessions/${id}/fork`, { at: '0' }],
      [`/api/sessions/${id}/cancel`, { x: 1 }],
      [`/api/sessions/${id}/compact`, { keep: 'x' }],
      [`/api/sessions/${id}/compact`, []],
      [`/api/sessions/${id}/approvals/c1`, { decision: 'allow', also: 1 }],
    ]
    for (const [path, body] of cases) {
      const answer = await guarded.post(path, body)
      expect(answer.status, `${path} ${JSON.stringify(body)}`).toBe(400)
      expect(((await answer.json()) as { error: { code: string } }).error.code).toBe('INVALID_REQUEST')
    }
    expect(await sessionCount(guarded)).toBe(sessions)
    expect(await events()).toBe(stored)
    // What is right still works: no body or {} where a route takes none, and the typed fields.
    expect((await guarded.post(`/api/sessions/${id}/cancel`)).status).toBe(202)
    expect((await guarded.post(`/api/sessions/${id}/cancel`, {})).status).toBe(202)
    expect((await guarded.post(`/api/sessions/${id}/compact`, {})).status).toBe(200)
    expect((await guarded.post(`/api/sessions/${id}/fork`, { at: 0 })).status).toBe(201)
    // Query strings and paths are text on the wire: they are still read as numbers.
    expect((await guarded.api(`/api/sessions/${id}/events?after=0&limit=2`)).status).toBe(200)
    expect((await guarded.api(`/api/sessions/${id}/requests/1`)).status).toBe(200)
  })

  it('describes the strict bodies in the OpenAPI document', async () => {
    const doc = (await (await guarded.api('/api/openapi.json')).json()) as {
      openapi: string
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { type: string; additionalProperties?: boolean; properties?: Record<string, { type: string }> } }> } }>>
    }
    expect(doc.openapi).toBe('3.1.0')
    const body = (path: string) => doc.paths[path]?.post?.requestBody?.content['application/json']?.schema
    for (const path of ['/api/sessions', '/api/sessions/{id}/followup', '/api/sessions/{id}/steer', '/api/sessions/{id}/inject', '/api/sessions/{id}/fork', '/api/sessions/{id}/approvals/{callId}']) {
      expect(body(path), path).toMatchObject({ type: 'object', additionalProperties: false })
    }
    expect(body('/api/sessions/{id}/followup')?.properties?.text?.type).toBe('string')
    expect(body('/api/sessions/{id}/fork')?.properties?.at?.type).toBe('integer')
    // Routes that take no body declare none.
    expect(doc.paths['/api/sessions/{id}/cancel']?.post?.requestBody).toBeUndefined()
    expect(doc.paths['/api/sessions/{id}/compact']?.post?.requestBody).toBeUndefined()
  })
})
