import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServe, type ServeFixture } from './serve-fixture.js'
import { writeStoredSession } from './stored-session.js'

// The routes the page's conversation, failures and approval previews read, as any API client sees them.
let f: ServeFixture
let stored: string

beforeAll(async () => {
  f = await startServe()
  stored = await writeStoredSession(f.dir)
}, 30_000)
afterAll(async () => {
  await f?.close()
})

describe('serve: the routes behind the conversation, failures and approval previews', () => {
  it('answers the conversation of a stored session, turn by turn', async () => {
    const res = await f.api(`/api/sessions/${stored}/conversation`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as { turns: { status: string; items: { kind: string }[]; error?: { code: string; status?: number } }[] }
    expect(body.turns.map((t) => t.status)).toEqual(['completed', 'error'])
    expect(body.turns[1]?.error).toMatchObject({ code: 'AUTH', status: 401 })
    expect((await f.api('/api/sessions/nope/conversation')).status).toBe(404)
  })

  it("names a failed request's failure in its request and on its timeline row", async () => {
    const timeline = (await (await f.api(`/api/sessions/${stored}/timeline`)).json()) as { rows: { kind: string; request?: number; failure?: { code: string; message: string } }[] }
    const failed = timeline.rows.filter((r) => r.kind === 'request' && r.failure !== undefined)
    expect(failed.map((r) => r.failure?.code)).toEqual(['RATE_LIMIT', 'AUTH'])
    const request = (await (await f.api(`/api/sessions/${stored}/requests/${String(failed[0]?.request)}`)).json()) as { failure?: unknown }
    expect(request.failure).toEqual({ code: 'RATE_LIMIT', message: 'too many requests', status: 429 })
    const ok = (await (await f.api(`/api/sessions/${stored}/requests/1`)).json()) as { failure?: unknown }
    expect(ok.failure).toBeUndefined()
  })

  it('previews only a call that waits, and says what a session waits for', async () => {
    expect((await f.api(`/api/sessions/${stored}/approvals/call_1_1/preview`)).status).toBe(404)
    const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
    await f.post(`/api/sessions/${id}/followup`, { text: 'deploy now' })
    const [waiting] = await f.until(async () => {
      const list = ((await (await f.api(`/api/sessions/${id}/approvals`)).json()) as { approvals: { callId: string }[] }).approvals
      return list.length > 0 ? list : undefined
    })
    const preview = (await (await f.api(`/api/sessions/${id}/approvals/${String(waiting?.callId)}/preview`)).json()) as unknown
    expect(preview).toEqual({ callId: waiting?.callId, tool: 'deploy', kind: 'arguments', args: { target: 'staging' } })
    const session = (await (await f.api(`/api/sessions/${id}`)).json()) as { activity?: { kind: string; summary: string } }
    expect(session.activity).toMatchObject({ kind: 'approval', summary: expect.stringContaining('deploy') })
    await f.post(`/api/sessions/${id}/approvals/${String(waiting?.callId)}`, { decision: 'deny' })
    const rested = await f.until(async () => {
      const s = (await (await f.api(`/api/sessions/${id}`)).json()) as { status: string; activity?: unknown }
      return s.status === 'idle' ? s : undefined
    })
    expect(rested.activity).toBeUndefined()
  })

  it('lists the new routes in the OpenAPI document', async () => {
    const doc = (await (await f.api('/api/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> }
    for (const path of ['/api/sessions/{id}/conversation', '/api/sessions/{id}/approvals/{callId}/preview']) expect(Object.keys(doc.paths[path] ?? {})).toEqual(['get'])
  })
})
