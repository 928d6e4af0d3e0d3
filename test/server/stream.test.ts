import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarness, JsonlStore, scriptedAdapter } from '../../src/index.js'
import { serveScript, startServe, TOKEN, type ServeFixture } from './serve-fixture.js'
import { readSse, sessionEvents } from './sse-client.js'

let f: ServeFixture

beforeAll(async () => {
  f = await startServe()
})
afterAll(async () => {
  await f.close()
})

const auth = { authorization: `Bearer ${TOKEN}` }

async function allEvents(id: string): Promise<{ seq: number; type: string }[]> {
  return ((await (await f.api(`/api/sessions/${id}/events?limit=10000`)).json()) as { events: { seq: number; type: string }[] }).events
}

describe('serve: live tail (Server-Sent Events)', () => {
  it('streams every event with id = seq and event = type, and a client that disconnects and resumes with Last-Event-ID misses nothing', async () => {
    const id = ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
    await f.post(`/api/sessions/${id}/followup`, { text: 'slow stream please' })
    // First connection: leave after a few events, in the middle of the streamed reply.
    const first = await readSse(`${f.base}/api/sessions/${id}/stream`, { headers: auth, done: (frames) => frames.filter((x) => x.event === 'assistant/chunk').length >= 3 })
    expect(first.status).toBe(200)
    expect(first.contentType).toContain('text/event-stream')
    const seen = sessionEvents(first.frames)
    for (const frame of first.frames.filter((x) => x.id !== undefined)) {
      const event = JSON.parse(frame.data) as { seq: number; type: string }
      expect(frame.id).toBe(String(event.seq))
      expect(frame.event).toBe(event.type)
    }
    const lastId = first.frames.filter((x) => x.id !== undefined).at(-1)?.id as string
    // Resume from where it left off, while the session is still streaming, until the turn ends.
    const second = await readSse(`${f.base}/api/sessions/${id}/stream`, { headers: { ...auth, 'last-event-id': lastId }, done: (frames) => frames.some((x) => x.event === 'turn/end') })
    const resumed = sessionEvents(second.frames)
    expect(resumed[0]?.seq).toBe(Number(lastId) + 1)
    const union = [...seen, ...resumed]
    expect(union.map((e) => e.seq)).toEqual(union.map((_, i) => i))
    const stored = await allEvents(id)
    expect(union.map((e) => `${e.seq}:${e.type}`)).toEqual(stored.slice(0, union.length).map((e) => `${e.seq}:${e.type}`))
    expect(union.at(-1)?.type).toBe('turn/end')
  })

  it('resumes from ?after=, and follows a session another process is writing (read from the store) as it grows', async () => {
    const id = ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
    await f.post(`/api/sessions/${id}/followup`, { text: 'hello' })
    await f.until(async () => (await allEvents(id)).some((e) => e.type === 'turn/end'))
    const stored = await allEvents(id)
    const tail = await readSse(`${f.base}/api/sessions/${id}/stream?after=${stored.length - 3}`, { headers: auth, done: (frames) => frames.filter((x) => x.id !== undefined).length >= 2 })
    expect(sessionEvents(tail.frames).map((e) => e.seq)).toEqual([stored.length - 2, stored.length - 1])

    // Another writer on the same folder (as another process would be): the server only reads its file.
    const other = createHarness({ store: new JsonlStore({ dir: f.dir }), adapters: [scriptedAdapter({ script: serveScript })] })
    try {
      const agent = await other.createAgent({ provider: 'scripted', model: 'm1' })
      const following = readSse(`${f.base}/api/sessions/${agent.id}/stream`, { headers: auth, done: (frames) => frames.some((x) => x.event === 'turn/end') })
      await new Promise((r) => setTimeout(r, 100))
      agent.followup('slow from elsewhere')
      const { frames } = await following
      const seqs = sessionEvents(frames).map((e) => e.seq)
      expect(seqs).toEqual(seqs.map((_, i) => i))
      expect(frames.filter((x) => x.event === 'assistant/chunk').length).toBeGreaterThanOrEqual(10)
      expect(((await (await f.api(`/api/sessions/${agent.id}`)).json()) as { status: string }).status).toBe('stored')
      // Input to a session another process holds is refused, not interleaved.
      const locked = await f.post(`/api/sessions/${agent.id}/followup`, { text: 'me too' })
      expect(locked.status).toBe(409)
      expect(((await locked.json()) as { error: { code: string } }).error.code).toBe('SESSION_LOCKED')
    } finally {
      await other.close()
    }
  })

  it('sends approvals frames while a tool call waits, and 404s the stream of an unknown session', async () => {
    const id = ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
    const reading = readSse(`${f.base}/api/sessions/${id}/stream`, { headers: auth, done: (frames) => frames.some((x) => x.event === 'approvals' && (JSON.parse(x.data) as { approvals: unknown[] }).approvals.length > 0) })
    await new Promise((r) => setTimeout(r, 100))
    await f.post(`/api/sessions/${id}/followup`, { text: 'deploy now' })
    const { frames } = await reading
    const approvals = JSON.parse(frames.at(-1)?.data ?? '{}') as { approvals: { tool: string; callId: string }[] }
    expect(approvals.approvals[0]?.tool).toBe('deploy')
    await f.post(`/api/sessions/${id}/approvals/${approvals.approvals[0]?.callId}`, { decision: 'deny' })
    const missing = await readSse(`${f.base}/api/sessions/nope/stream`, { headers: auth, done: () => true })
    expect(missing.status).toBe(404)
  })
})
