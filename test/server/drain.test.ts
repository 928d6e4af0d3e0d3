// Graceful drain of `serve` (issue 24, item 6): on a stop the server takes no new input, the turns it runs may
// finish within the grace, and a turn still running when the grace is over is cut off `aborted {disposed}` —
// which the next resume continues, as after a crash.
import { afterEach, describe, expect, it } from 'vitest'
import { createHarness, JsonlStore, scriptedAdapter, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { startServe, type ServeFixture } from './serve-fixture.js'

let f: ServeFixture | undefined
afterEach(async () => {
  await f?.close().catch(() => undefined)
  f = undefined
})

const reasons = (events: readonly SessionEvent[]): unknown[] => events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: unknown }).reason)

describe('serve: graceful drain', () => {
  it('a turn that finishes within the grace completes; input sent while draining is refused with 503', async () => {
    f = await startServe()
    const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
    expect((await f.post(`/api/sessions/${id}/followup`, { text: 'slow please' })).status).toBe(202)
    await f.until(async () => (await f?.store.read(id))?.events.some((e) => e.type === 'assistant/chunk'))
    const draining = f.server.drain(10_000)
    const refused = await f.post(`/api/sessions/${id}/followup`, { text: 'one more' })
    expect(refused.status).toBe(503)
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('HARNESS_CLOSED')
    await draining
    await f.server.close()
    const events = (await new JsonlStore({ dir: f.dir }).read(id)).events
    expect(reasons(events)).toEqual([{ kind: 'completed' }])
  })

  it('a turn still running when the grace is over is cut off (aborted disposed), and the next resume continues it', async () => {
    f = await startServe()
    const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
    await f.post(`/api/sessions/${id}/followup`, { text: 'hang on' })
    await f.until(async () => (await f?.store.read(id))?.events.some((e) => e.type === 'request/context'))
    const started = Date.now()
    await f.server.drain(200)
    expect(Date.now() - started).toBeGreaterThanOrEqual(190)
    await f.server.close()
    const cut = (await new JsonlStore({ dir: f.dir }).read(id)).events
    expect(reasons(cut)).toEqual([{ kind: 'aborted', reason: { kind: 'disposed' } }])
    // The next process: the cut-off turn is carried on at once (the script answers it this time).
    const harness = createHarness({ store: new JsonlStore({ dir: f.dir }), adapters: [scriptedAdapter({ script: () => ({ text: 'done after all' }), models: { m1: { contextWindow: 100_000 } } })] })
    const agent = await harness.resumeAgent(id)
    await agent.whenIdle()
    const events = agent.session.events
    expect(events.filter((e) => e.type === 'turn/start').map((e) => e.data)).toEqual([{ turn: 1 }, { turn: 2, continues: 1 }])
    expect(reasons(events).at(-1)).toEqual({ kind: 'completed' })
    expect(verifySessionLog(events).problems).toEqual([])
    await harness.close()
  })
})
