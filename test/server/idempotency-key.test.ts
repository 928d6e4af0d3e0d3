import { rmSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { JsonlStore } from '../../src/index.js'
import type { SessionEvent } from '../../src/index.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'
import { startFleet, until } from './fleet-fixture.js'
import { startServe } from './serve-fixture.js'

// `Idempotency-Key` on serve's input routes: a client that retries after a timeout (it never saw the first
// answer, or sent the retry while the first request was still in flight) gets its prompt run once, and the
// retry is told where the first one stands.

interface Client {
  api(path: string, init?: RequestInit): Promise<Response>
}

async function send(c: Client, id: string, kind: 'followup' | 'steer', text: string, key: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await c.api(`/api/sessions/${id}/${kind}`, { method: 'POST', body: JSON.stringify({ text }), headers: { 'content-type': 'application/json', 'idempotency-key': key } })
  return { status: res.status, body: (await res.json()) as Record<string, unknown> }
}

const prompts = (events: readonly SessionEvent[], text: string): number =>
  events.filter((e) => e.type === 'user/message' && JSON.stringify((e.data as { content: unknown }).content).includes(text)).length
const turnEnds = (events: readonly SessionEvent[]): string[] => events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)

describe('IDEMPOTENCY-KEY: local sessions (JSONL)', () => {
  it('a retry in flight with the first send, and one after its turn ended, run the prompt once', async () => {
    const f = await startServe()
    try {
      const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
      // The client timed out and retried while the first request was still being answered.
      const [a, b] = await Promise.all([send(f, id, 'followup', 'slow one', 'order-7'), send(f, id, 'followup', 'slow one', 'order-7')])
      expect([a.status, b.status].sort()).toEqual([200, 202])
      const dup = a.status === 200 ? a.body : b.body
      expect(dup).toMatchObject({ accepted: false, duplicate: true })
      // Before a turn took it the answer has no turn number; after, it names the turn.
      expect(['queued', 'claimed']).toContain(dup.state)
      if (dup.state === 'queued') expect(dup.turn).toBeUndefined()
      await f.until(async () => turnEnds((await f.store.read(id)).events).length === 1)
      const late = await send(f, id, 'followup', 'slow one', 'order-7')
      expect(late).toEqual({ status: 200, body: { accepted: false, duplicate: true, messageId: dup.messageId, state: 'claimed', turn: 1 } })
      // A new key is new input.
      expect((await send(f, id, 'followup', 'slow one', 'order-8')).status).toBe(202)
      await f.until(async () => turnEnds((await f.store.read(id)).events).length === 2)
      await new Promise((r) => setTimeout(r, 200))
      const { events } = await f.store.read(id)
      expect(prompts(events, 'slow one')).toBe(2)
      expect(turnEnds(events)).toEqual(['completed', 'completed'])
    } finally {
      await f.close()
    }
  })

  it('a key survives the server: a stored session resumed by a new server still knows it', async () => {
    const f = await startServe({}, { releaseIdleMs: 0 })
    const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
    expect((await send(f, id, 'steer', 'hello', 'k-1')).status).toBe(202)
    await f.until(async () => turnEnds((await f.store.read(id)).events).length === 1)
    await f.server.close()
    const g = await startServe({ store: new JsonlStore({ dir: f.dir }) })
    try {
      expect(await send(g, id, 'followup', 'hello', 'k-1')).toMatchObject({ status: 200, body: { state: 'claimed', turn: 1 } })
      expect(prompts((await g.store.read(id)).events, 'hello')).toBe(1)
    } finally {
      await g.close()
      rmSync(f.dir, { recursive: true, force: true })
    }
  })
})

describe('IDEMPOTENCY-KEY: a worker fleet (PostgreSQL)', () => {
  let db: ScratchDatabase
  beforeAll(async () => {
    db = await createScratchDatabase()
  })
  afterAll(async () => {
    await db.drop()
  })

  it('racing retries queue one inbox row; the worker runs the prompt once; a later retry names its turn', async () => {
    const f = await startFleet(db.url)
    try {
      const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
      const answers = await Promise.all([1, 2, 3].map(() => send(f, id, 'followup', 'echo once', 'pay-42')))
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 202])
      for (const a of answers.filter((x) => x.status === 200)) expect(a.body).toMatchObject({ accepted: false, duplicate: true, state: expect.stringMatching(/^(queued|claimed)$/) })
      await until(async () => turnEnds((await f.serverStore.read(id)).events).length === 1)
      const late = await send(f, id, 'followup', 'echo once', 'pay-42')
      expect(late).toMatchObject({ status: 200, body: { state: 'claimed', turn: 1 } })
      expect((await send(f, id, 'steer', 'echo twice', 'pay-43')).status).toBe(202)
      await until(async () => turnEnds((await f.serverStore.read(id)).events).length === 2)
      await new Promise((r) => setTimeout(r, 300))
      const { events } = await f.serverStore.read(id)
      expect(prompts(events, 'echo once')).toBe(1)
      expect(turnEnds(events)).toEqual(['completed', 'completed'])
      expect(await f.serverStore.pendingInput(id)).toEqual([])
    } finally {
      await f.close()
    }
  })
})
