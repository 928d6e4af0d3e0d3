// The OpenAPI document of `serve`, checked two ways: by a third-party OpenAPI validator, and by sending every
// operation real requests (a success and errors) and validating each real answer against the document's schema
// for its status.
import { Validator } from '@seriousme/openapi-schema-validator'
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js'
import formats from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readSse } from './sse-client.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'
import { writeQuarantinedSession } from './stored-session.js'

interface Operation {
  readonly responses?: Record<string, { content?: Record<string, { schema?: object }> }>
}
interface Document {
  readonly openapi: string
  readonly paths: Record<string, Record<string, Operation>>
}

let f: ServeFixture
let doc: Document
beforeAll(async () => {
  f = await startServe()
  doc = (await (await f.api('/api/openapi.json')).json()) as Document
})
afterAll(async () => {
  await f.close()
})

const METHODS = ['get', 'post', 'put', 'patch', 'delete']
/** `GET /api/sessions/{id}` for every operation the document lists. */
function operations(): string[] {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${path}`))
}

/** The document's path template a concrete request path falls under (`/api/sessions/abc/verify` → `…/{id}/verify`). */
function templateOf(path: string): string {
  const bare = path.split('?')[0] ?? path
  const match = Object.keys(doc.paths).find((template) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(bare))
  if (match === undefined) throw new Error(`the document has no path for ${bare}`)
  return match
}

const ajv = new Ajv2020({ strict: false, allErrors: true })
formats.default(ajv)
const compiled = new Map<string, ValidateFunction>()
/** Which operations answered with which status classes, to show at the end that every operation was tried. */
const seen = new Map<string, Set<'success' | 'error'>>()

/**
 * Checks one real answer against the document: its status must be listed for the operation, with a schema for
 * the answer's content type, and the body must satisfy that schema. Returns the parsed body.
 */
async function conforms(method: string, path: string, res: Response): Promise<unknown> {
  const operation = `${method} ${templateOf(path)}`
  const responses = doc.paths[templateOf(path)]?.[method.toLowerCase()]?.responses ?? {}
  const listed = responses[String(res.status)]
  expect(listed, `${operation} answered ${res.status}, which the document does not list (it lists ${Object.keys(responses).join(', ')})`).toBeDefined()
  const type = (res.headers.get('content-type') ?? '').split(';')[0]?.trim() ?? ''
  const schema = listed?.content?.[type]?.schema
  expect(schema, `${operation} ${res.status}: no schema for ${type}`).toBeDefined()
  const text = await res.text()
  const body: unknown = type === 'application/json' ? JSON.parse(text) : text
  const key = `${operation} ${res.status} ${type}`
  let check = compiled.get(key)
  if (check === undefined) {
    check = ajv.compile(schema as object)
    compiled.set(key, check)
  }
  expect(check(body), `${key}: ${ajv.errorsText(check.errors)}\n${text.slice(0, 600)}`).toBe(true)
  const kinds = seen.get(operation) ?? new Set()
  kinds.add(res.status < 400 ? 'success' : 'error')
  seen.set(operation, kinds)
  return body
}

async function get(path: string, status: number): Promise<unknown> {
  const res = await f.api(path)
  expect(res.status, `GET ${path}`).toBe(status)
  return conforms('GET', path, res)
}

async function post(path: string, body: unknown, status: number): Promise<unknown> {
  const res = await f.post(path, body)
  expect(res.status, `POST ${path}`).toBe(status)
  return conforms('POST', path, res)
}

async function created(): Promise<string> {
  return ((await post('/api/sessions', {}, 201)) as { id: string }).id
}

async function settled(id: string, turns: number): Promise<void> {
  await f.until(async () => {
    const s = (await (await f.api(`/api/sessions/${id}`)).json()) as { turns: number; status: string }
    return s.turns >= turns && s.status === 'idle'
  })
}

describe('OPENAPI: the document', () => {
  it('is valid OpenAPI 3.1 by a third-party validator', async () => {
    // A copy, so the validator cannot change the document the other tests read.
    const result = await new Validator().validate(structuredClone(doc) as unknown as Record<string, unknown>)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(doc.openapi).toMatch(/^3\.1\./)
  })

  it('describes itself and gives every operation a success schema and the error shape for each error status', () => {
    expect(operations()).toContain('GET /api/openapi.json') // on main it was hidden
    const errorShape = { type: 'object', required: ['error'], properties: { error: { type: 'object', required: ['code', 'message'] } } }
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const responses = Object.entries(op.responses ?? {})
        const successes = responses.filter(([status]) => status.startsWith('2'))
        expect(successes.length, `${method} ${path}`).toBeGreaterThan(0)
        for (const [status, answer] of successes) {
          const schemas = Object.values(answer.content ?? {}).flatMap((c) => (c.schema !== undefined ? [c.schema] : []))
          expect(schemas.length, `${method} ${path} ${status} has no schema`).toBeGreaterThan(0) // on main 10 of 16 had none
        }
        const errors = responses.filter(([status]) => Number(status) >= 400)
        expect(errors.map(([s]) => s), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403', '500', '503']))
        for (const [status, answer] of errors) {
          expect(answer.content?.['application/json']?.schema, `${method} ${path} ${status}`).toMatchObject(errorShape)
        }
      }
    }
  })
})

describe('OPENAPI-ANSWERS: real answers match the document', () => {
  it('sessions: create, list, read, events', async () => {
    await post('/api/sessions', { nope: 1 }, 400)
    await created()
    const id = await created()
    await post(`/api/sessions/${id}/followup`, { text: 'hello' }, 202)
    await settled(id, 1)
    await post(`/api/sessions/${id}/followup`, { text: 'echo there' }, 202)
    await settled(id, 2)

    await get('/api/sessions', 200)
    const page = (await get('/api/sessions?limit=1', 200)) as { next?: number }
    expect(page.next).toBe(1) // two sessions or more: a next page
    await get('/api/sessions?limit=0', 400)
    // Content search (issue 30, target 6): rows carry where the text was found; an over-long grep is refused.
    const grepped = (await get('/api/sessions?grep=ECHO%20THERE', 200)) as { sessions: { id: string; match?: { part: string; snippet: string } }[]; total: number }
    expect(grepped.sessions.map((s) => [s.id, s.match?.part, s.match?.snippet])).toEqual([[id, 'prompt', 'echo there']])
    await get(`/api/sessions?grep=${'x'.repeat(101)}`, 400)

    const session = (await get(`/api/sessions/${id}`, 200)) as { cost?: unknown; provider?: string }
    expect(session).toMatchObject({ provider: 'scripted', cost: { currency: 'USD' } }) // the optional fields are there too
    await get('/api/sessions/no-such-session', 404)

    const events = (await get(`/api/sessions/${id}/events?limit=3`, 200)) as { next?: number }
    expect(events.next).toBe(2)
    await get(`/api/sessions/${id}/events?after=-7`, 400)
    await get('/api/sessions/no-such-session/events', 404)
  })

  it('a session with its own cost cap: maxCostUsd is taken, refused when not a positive number, and read back', async () => {
    for (const bad of [-1, 0, '0.5', null, true]) {
      const refused = (await post('/api/sessions', { maxCostUsd: bad }, 400)) as { error: { code: string; message: string } }
      expect(refused.error.message, String(bad)).toMatch(/maxCostUsd/)
    }
    const id = ((await post('/api/sessions', { maxCostUsd: 0.02 }, 201)) as { id: string }).id
    await post(`/api/sessions/${id}/followup`, { text: 'hello' }, 202)
    await settled(id, 1)
    // One "hello back" bills 10 input and 2 output tokens at $1000/$2000 per million: $0.014.
    const session = (await get(`/api/sessions/${id}`, 200)) as { costCap?: unknown }
    expect(session.costCap).toEqual({ maxUsd: 0.02, per: 'session', origin: 'session', spentUsd: 0.014, unpriced: 0, unpricedModels: [], stoppedTurns: [], summary: 'spent $0.0140 of $0.0200 cap' })
  })

  it('the stream: each data frame is an event as the document describes events', async () => {
    const id = await created()
    await post(`/api/sessions/${id}/followup`, { text: 'hello' }, 202)
    await settled(id, 1)
    const { status, contentType, frames } = await readSse(`${f.base}/api/sessions/${id}/stream?token=${TOKEN}`, { done: (got) => got.some((fr) => fr.event === 'turn/end') })
    expect(status).toBe(200)
    expect(contentType).toMatch(/^text\/event-stream/)
    // The body never ends, so it is checked frame by frame rather than through conforms().
    expect(doc.paths['/api/sessions/{id}/stream']?.get?.responses?.['200']?.content?.['text/event-stream']?.schema).toBeDefined()
    seen.set('GET /api/sessions/{id}/stream', new Set(['success']))
    const eventSchema = doc.paths['/api/sessions/{id}/events']?.get?.responses?.['200']?.content?.['application/json']?.schema as { properties: { events: { items: object } } }
    const check = ajv.compile(eventSchema.properties.events.items)
    const logged = frames.filter((fr) => fr.id !== undefined)
    expect(logged.length).toBeGreaterThan(3)
    for (const frame of logged) expect(check(JSON.parse(frame.data)), `${frame.event}: ${ajv.errorsText(check.errors)}`).toBe(true)
    await get('/api/sessions/no-such-session/stream', 404)
  })

  it('input: followup, steer, inject, cancel, compact', async () => {
    const id = await created()
    for (const [n, text] of ['one', 'two', 'three', 'four'].entries()) {
      await post(`/api/sessions/${id}/followup`, { text }, 202)
      await settled(id, n + 1)
    }
    const compaction = (await post(`/api/sessions/${id}/compact`, undefined, 200)) as { outcome: string }
    expect(compaction.outcome).toBe('summarized')
    await post('/api/sessions/no-such-session/compact', undefined, 404)
    await post(`/api/sessions/${id}/compact`, { keep: 1 }, 400)

    await post(`/api/sessions/${id}/followup`, { text: 'hang on' }, 202)
    await f.until(async () => ((await (await f.api(`/api/sessions/${id}`)).json()) as { status: string }).status === 'running')
    await post(`/api/sessions/${id}/steer`, { text: 'context for later' }, 202)
    await post(`/api/sessions/${id}/inject`, { text: 'a note' }, 202)
    await post(`/api/sessions/${id}/cancel`, undefined, 202)
    await settled(id, 5)

    await post(`/api/sessions/${id}/followup`, { text: 5 }, 400)
    await post(`/api/sessions/${id}/steer`, {}, 400)
    await post('/api/sessions/no-such-session/inject', { text: 'x' }, 404)
    await post(`/api/sessions/${id}/cancel`, { now: true }, 400)
    await post(`/api/sessions/${'x'.repeat(600)}/cancel`, undefined, 414) // past the router's parameter limit
    const notJson = await f.api(`/api/sessions/${id}/followup`, { method: 'POST', body: '<text>hi</text>', headers: { 'content-type': 'application/xml' } })
    expect(notJson.status).toBe(415)
    await conforms('POST', `/api/sessions/${id}/followup`, notJson)
    const tooLarge = await f.post(`/api/sessions/${id}/followup`, { text: 'x'.repeat(1024 * 1024 + 10) })
    expect(tooLarge.status).toBe(413)
    await conforms('POST', `/api/sessions/${id}/followup`, tooLarge)
  })

  it('input with an Idempotency-Key: a retry is not queued again and answers 200 with the original turn', async () => {
    const id = await created()
    const keyed = async (kind: string, text: string, key: string, status: number): Promise<unknown> => {
      const res = await f.api(`/api/sessions/${id}/${kind}`, { method: 'POST', body: JSON.stringify({ text }), headers: { 'content-type': 'application/json', 'idempotency-key': key } })
      expect(res.status, `${kind} with key ${key}`).toBe(status)
      return conforms('POST', `/api/sessions/${id}/${kind}`, res)
    }
    expect(await keyed('followup', 'hello', 'k-1', 202)).toEqual({ accepted: true })
    await settled(id, 1)
    expect(await keyed('followup', 'hello', 'k-1', 200)).toMatchObject({ accepted: false, duplicate: true, state: 'claimed', turn: 1 })
    expect(await keyed('steer', 'hello again', 'k-2', 202)).toEqual({ accepted: true })
    await settled(id, 2)
    expect(await keyed('steer', 'hello again', 'k-2', 200)).toMatchObject({ duplicate: true, state: 'claimed', turn: 2 })
    await settled(id, 2) // nothing more ran
    await keyed('followup', 'hello', '', 400)
    await keyed('followup', 'hello', 'k'.repeat(201), 400)
    const inject = await f.api(`/api/sessions/${id}/inject`, { method: 'POST', body: JSON.stringify({ text: 'a note' }), headers: { 'content-type': 'application/json', 'idempotency-key': 'k-3' } })
    expect(inject.status).toBe(400)
    expect(((await conforms('POST', `/api/sessions/${id}/inject`, inject)) as { error: { message: string } }).error.message).toMatch(/Idempotency-Key/)
  })

  it('resume: a quarantined session is listed with its reason, refused without force (409), resumed with it', async () => {
    const id = await writeQuarantinedSession(f.dir)
    const listed = (await get('/api/sessions', 200)) as { sessions: { id: string; quarantine?: { reason: string } }[] }
    expect(listed.sessions.find((s) => s.id === id)?.quarantine?.reason).toMatch(/interrupted 1 times? in a row/)
    expect(await get(`/api/sessions/${id}`, 200)).toMatchObject({ quarantine: { reason: expect.stringMatching(/interrupted/) } })
    expect(await post(`/api/sessions/${id}/resume`, {}, 409)).toMatchObject({ error: { code: 'SESSION_QUARANTINED' } })
    await post(`/api/sessions/${id}/followup`, { text: 'hello' }, 409) // input would resume it: refused the same way
    await post(`/api/sessions/${id}/resume`, { force: 'yes' }, 400)
    expect(await post(`/api/sessions/${id}/resume`, { force: true }, 200)).toEqual({ lifted: true })
    expect(((await get(`/api/sessions/${id}`, 200)) as { quarantine?: unknown }).quarantine).toBeUndefined()
    expect(await post(`/api/sessions/${id}/resume`, { force: true }, 200)).toEqual({ lifted: false }) // it runs here now
    await post('/api/sessions/no-such-session/resume', { force: true }, 404)
  })

  it('approvals: list a pending call, answer it', async () => {
    const id = await created()
    await post(`/api/sessions/${id}/followup`, { text: 'deploy please' }, 202)
    const pending = await f.until(async () => {
      const list = (await (await f.api(`/api/sessions/${id}/approvals`)).json()) as { approvals: { callId: string }[] }
      return list.approvals[0]
    })
    const listed = (await get(`/api/sessions/${id}/approvals`, 200)) as { approvals: unknown[] }
    expect(listed.approvals).toHaveLength(1)
    await get(`/api/sessions/${id}/approvals/${pending.callId}/preview`, 200)
    await get(`/api/sessions/${id}/approvals/not-a-call/preview`, 404)
    await get(`/api/sessions/${id}`, 200) // awaiting-approval is a documented status
    await post(`/api/sessions/${id}/approvals/not-a-call`, { decision: 'allow' }, 404)
    await post(`/api/sessions/${id}/approvals/${pending.callId}`, { decision: 'maybe' }, 400)
    await post(`/api/sessions/${id}/approvals/${pending.callId}`, { decision: 'allow' }, 200)
    await settled(id, 1)
    await get('/api/sessions/no-such-session/approvals', 404)
  })

  it('views: requests (with and without a diff), timeline, verify; and fork', async () => {
    const id = await created()
    await post(`/api/sessions/${id}/followup`, { text: 'echo two' }, 202)
    await settled(id, 1)
    expect(await get(`/api/sessions/${id}/requests/1`, 200)).toMatchObject({ diff: null })
    expect(await get(`/api/sessions/${id}/requests/2`, 200)).toMatchObject({ diff: { from: 1, to: 2 } })
    await get(`/api/sessions/${id}/requests/3`, 404)
    await get(`/api/sessions/${id}/requests/0`, 400)
    await get(`/api/sessions/${id}/timeline`, 200)
    await get('/api/sessions/no-such-session/timeline', 404)
    await get(`/api/sessions/${id}/conversation`, 200)
    await get('/api/sessions/no-such-session/conversation', 404)
    expect(await get(`/api/sessions/${id}/verify`, 200)).toMatchObject({ ok: true })
    await get('/api/sessions/no-such-session/verify', 404)
    await get(`/api/sessions/${'x'.repeat(600)}/verify`, 404) // past the router's parameter limit: the page's catch-all
    await post(`/api/sessions/${id}/fork`, {}, 201)
    await post(`/api/sessions/${id}/fork`, { at: 3 }, 409) // inside a turn
    await post(`/api/sessions/${id}/fork`, { at: -1 }, 400)
  })

  it('rerun and compare: a rerun answers its new session, which compares with the original', async () => {
    const id = await created()
    await post(`/api/sessions/${id}/followup`, { text: 'echo three' }, 202)
    await settled(id, 1)
    const rerun = (await post(`/api/sessions/${id}/rerun`, { tools: 'recorded' }, 202)) as { id: string }
    expect(rerun.id).not.toBe(id)
    await f.until(async () => {
      const s = (await (await f.api(`/api/sessions/${rerun.id}`)).json()) as { turns: number; status: string }
      return s.turns >= 1 && s.status === 'stored'
    })
    const compared = (await get(`/api/compare?a=${id}&b=${rerun.id}`, 200)) as { same: boolean; b: { forkedFrom?: string } }
    expect(compared).toMatchObject({ same: true, b: { forkedFrom: id } })
    await post('/api/sessions/no-such-session/rerun', {}, 404)
    await post(`/api/sessions/${id}/rerun`, { tools: 'sideways' }, 400)
    await post(`/api/sessions/${id}/rerun`, { fromTurn: 5 }, 400) // no such turn
    await get(`/api/compare?a=${id}`, 400)
    await get(`/api/compare?a=${id}&b=no-such-session`, 404)
  })

  it('file changes and rewind: the per-turn list, a turn\'s diffs, a rewind answering its fork', async () => {
    // The scripted tools here change no files: the routes answer empty lists (test/server/rewind-api.test.ts has
    // a workspace that changes, checked against this same document).
    const id = await created()
    await post(`/api/sessions/${id}/followup`, { text: 'echo one' }, 202)
    await settled(id, 1)
    await post(`/api/sessions/${id}/followup`, { text: 'hello' }, 202)
    await settled(id, 2)
    expect(await get(`/api/sessions/${id}/file-changes`, 200)).toEqual({ turns: [], restores: [] })
    await get('/api/sessions/no-such-session/file-changes', 404)
    expect(await get(`/api/sessions/${id}/file-changes/1`, 200)).toEqual({ turn: 1, files: [] })
    await get(`/api/sessions/${id}/file-changes/3`, 404)
    await get(`/api/sessions/${id}/file-changes/1?maxBytes=-1`, 400)
    expect(await post(`/api/sessions/${id}/rewind`, { toTurn: 1 }, 200)).toMatchObject({ from: id, forked: true, restored: [], deleted: [], conflicts: [] })
    await post(`/api/sessions/${id}/rewind`, { toTurn: 5 }, 400)
    await post(`/api/sessions/${id}/rewind`, {}, 400)
    await post('/api/sessions/no-such-session/rewind', { toTurn: 1 }, 404)
  })

  it('the document itself, and the errors every route shares: 401 without a token, 403 from a foreign origin', async () => {
    await get('/api/openapi.json', 200)
    for (const operation of operations()) {
      const [method = 'GET', template = ''] = operation.split(' ')
      const path = template.replace('{id}', 'some-session').replace('{callId}', 'c1').replace('{n}', '1').replace('{turn}', '1')
      const init: RequestInit = { method, ...(method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}) }
      const anonymous = await fetch(`${f.base}${path}`, init)
      expect(anonymous.status, operation).toBe(401)
      await conforms(method, path, anonymous)
      const foreign = await f.api(path, { ...init, headers: { ...(init.headers as Record<string, string> | undefined), origin: 'https://evil.example' } })
      expect(foreign.status, operation).toBe(403)
      await conforms(method, path, foreign)
    }
  })

  it('every operation in the document was answered with a success and an error, each matching it', () => {
    const missing = operations().filter((op) => seen.get(op)?.has('success') !== true || seen.get(op)?.has('error') !== true)
    expect(missing).toEqual([])
  })
})
