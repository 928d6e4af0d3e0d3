import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SqliteStore } from '../../src/store/sqlite.js'
import { startServe, TOKEN, type ServeFixture } from './serve-fixture.js'
import { readSse, sessionEvents } from './sse-client.js'

let f: ServeFixture
const dir = mkdtempSync(join(tmpdir(), 'll-serve-sqlite-'))

beforeAll(async () => {
  f = await startServe({ store: new SqliteStore({ path: join(dir, 'sessions.db') }) })
})
afterAll(async () => {
  await f.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('serve over the SQLite store', () => {
  it('creates, runs, lists, tails and verifies a session stored in SQLite', async () => {
    const id = ((await (await f.post('/api/sessions', {})).json()) as { id: string }).id
    const tail = readSse(`${f.base}/api/sessions/${id}/stream`, { headers: { authorization: `Bearer ${TOKEN}` }, done: (frames) => frames.some((x) => x.event === 'turn/end') })
    await new Promise((r) => setTimeout(r, 100))
    await f.post(`/api/sessions/${id}/followup`, { text: 'echo from sqlite' })
    const seqs = sessionEvents((await tail).frames).map((e) => e.seq)
    expect(seqs).toEqual(seqs.map((_, i) => i))
    await f.until(async () => ((await (await f.api(`/api/sessions/${id}`)).json()) as { status: string }).status === 'idle')
    const list = (await (await f.api('/api/sessions')).json()) as { sessions: { id: string; title: string; turns: number }[] }
    expect(list.sessions.find((s) => s.id === id)).toMatchObject({ title: 'echo from sqlite', turns: 1 })
    expect(await (await f.api(`/api/sessions/${id}/verify`)).json()).toMatchObject({ ok: true, requests: 2 })
    const stored = await f.store.read(id)
    expect(stored.events.length).toBe(seqs.length)
  })
})
