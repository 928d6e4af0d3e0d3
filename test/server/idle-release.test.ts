import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarness, JsonlStore, scriptedAdapter } from '../../src/index.js'
import { serveScript, startServe, TOKEN, type ServeFixture } from './serve-fixture.js'
import { readSse, sessionEvents } from './sse-client.js'

let f: ServeFixture

beforeAll(async () => {
  f = await startServe({}, { releaseIdleMs: 150 })
})
afterAll(async () => {
  await f.close()
})

const status = async (id: string): Promise<{ status: string; turns: number }> => (await (await f.api(`/api/sessions/${id}`)).json()) as { status: string; turns: number }

describe('serve: idle sessions are released', () => {
  it('frees an idle session for other processes, keeps its followers, and resumes it on the next input', async () => {
    const id = ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
    const tail = readSse(`${f.base}/api/sessions/${id}/stream`, { headers: { authorization: `Bearer ${TOKEN}` }, done: (frames) => frames.filter((x) => x.event === 'turn/end').length >= 3 })
    await f.post(`/api/sessions/${id}/followup`, { text: 'hello one' })
    await f.until(async () => (await status(id)).status === 'stored')
    // The lock is free: another process can run a turn in it.
    const other = createHarness({ store: new JsonlStore({ dir: f.dir }), adapters: [scriptedAdapter({ script: serveScript })] })
    const agent = await other.resumeAgent(id)
    agent.followup('hello two')
    await agent.whenIdle()
    await other.close()
    // The next input resumes it here.
    await f.post(`/api/sessions/${id}/followup`, { text: 'hello three' })
    await f.until(async () => {
      const s = await status(id)
      return s.turns === 3 && s.status !== 'running'
    })
    const seqs = sessionEvents((await tail).frames).map((e) => e.seq)
    expect(seqs).toEqual(seqs.map((_, i) => i))
    const stored = (await (await f.api(`/api/sessions/${id}/events?limit=10000`)).json()) as { events: unknown[] }
    expect(seqs.length).toBe(stored.events.length)
  })
})
