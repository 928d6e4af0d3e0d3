import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/index.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'
import { leaseOwner as ownerIn, startFleet as fleetOn, until } from './fleet-fixture.js'
import { TOKEN } from './serve-fixture.js'
import { readSse, sessionEvents, type ReceivedFrame } from './sse-client.js'

// `serve --store postgres://…` with a worker fleet over real HTTP (see fleet-fixture.ts).

let db: ScratchDatabase
beforeAll(async () => {
  db = await createScratchDatabase()
})
afterAll(async () => {
  await db.drop()
})

const startFleet = () => fleetOn(db.url)
const leaseOwner = (id: string) => ownerIn(db.url, id)

const turnEnds = (frames: readonly ReceivedFrame[]): number => frames.filter((f) => f.event === 'turn/end').length
const reasonsOf = (events: readonly SessionEvent[]): string[] => events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)

describe('serve with a PostgreSQL store and a worker fleet', () => {
  it('creates a session, runs followups on the worker, tails every event live in order, cancels a turn, answers an approval, and never takes a lease', async () => {
    const f = await startFleet()
    try {
      const auth = { authorization: `Bearer ${TOKEN}` }
      const created = await f.post('/api/sessions', {})
      expect(created.status).toBe(201)
      const { id } = (await created.json()) as { id: string }
      expect((await f.serverStore.read(id)).header.cwd).toBe('/srv/work')

      // One tail from the start for the whole story; hooks on its frames drive the steps that must happen mid-turn.
      let sawStreamedText: () => void = () => undefined
      const streamedText = new Promise<void>((resolve) => (sawStreamedText = resolve))
      let sawApproval: (callId: string) => void = () => undefined
      const approvalAsked = new Promise<string>((resolve) => (sawApproval = resolve))
      const tail = readSse(`${f.base}/api/sessions/${id}/stream`, {
        headers: auth,
        timeoutMs: 60_000,
        done: (frames) => {
          const last = frames[frames.length - 1] as ReceivedFrame
          if (last.event === 'assistant/chunk' && last.data.includes('first words') && turnEnds(frames) === 1) sawStreamedText()
          if (last.event === 'approvals') {
            const pending = (JSON.parse(last.data) as { approvals: { callId: string; tool: string }[] }).approvals
            if (pending[0]?.tool === 'deploy') sawApproval(pending[0].callId)
          }
          return turnEnds(frames) === 3
        },
      })

      // Turn 1: an allowed tool call, run by the worker.
      expect((await f.post(`/api/sessions/${id}/followup`, { text: 'echo hi' })).status).toBe(202)
      const firstDone = await until(async () => ((await f.serverStore.read(id)).events.some((e) => e.type === 'turn/end') ? true : undefined))
      expect(firstDone).toBe(true)

      // A second tail of the same session joins late, from seq 3, while the first one follows live: both share one
      // reader of the log and each gets exactly its own part.
      const lateTail = readSse(`${f.base}/api/sessions/${id}/stream?after=3`, { headers: auth, timeoutMs: 60_000, done: (frames) => turnEnds(frames) === 3 })

      // Turn 2: its first text reaches the tail while the turn is still open; then it is cancelled through the API.
      expect((await f.post(`/api/sessions/${id}/followup`, { text: 'stream something' })).status).toBe(202)
      await streamedText
      const running = (await (await f.api(`/api/sessions/${id}`)).json()) as { status: string }
      expect(running.status).toBe('running')
      // The worker holds the lease while the turn runs; the server holds nothing.
      const owner = await f.serverStore.sessionStates([id])
      expect(owner).toEqual([{ id, status: 'running', owned: true, asking: false, owner: f.workerStore.ownerId }])
      expect(await leaseOwner(id)).toBe(f.workerStore.ownerId)
      expect(f.serverStore.writerOf(id)).toBeUndefined()
      expect((await f.post(`/api/sessions/${id}/cancel`)).status).toBe(202)

      // Turn 3: a tool call that needs approval waits for an answer given through the API.
      expect((await f.post(`/api/sessions/${id}/followup`, { text: 'deploy now' })).status).toBe(202)
      const callId = await approvalAsked
      expect(await leaseOwner(id)).toBe(f.workerStore.ownerId)
      const listed = (await (await f.api(`/api/sessions/${id}/approvals`)).json()) as { approvals: { callId: string; tool: string; args: unknown }[] }
      expect(listed.approvals).toMatchObject([{ callId, tool: 'deploy', args: { target: 'staging' } }])
      expect(((await (await f.api(`/api/sessions/${id}`)).json()) as { status: string }).status).toBe('awaiting-approval')
      const sessions = (await (await f.api('/api/sessions?status=awaiting-approval')).json()) as { sessions: { id: string }[] }
      expect(sessions.sessions.map((s) => s.id)).toEqual([id])
      expect(f.deployed).toEqual([])
      const answered = await f.post(`/api/sessions/${id}/approvals/${callId}`, { decision: 'allow' })
      expect(answered.status).toBe(200)
      // Answered once: a second answer finds nothing waiting.
      expect((await f.post(`/api/sessions/${id}/approvals/${callId}`, { decision: 'deny' })).status).toBe(404)

      const { frames } = await tail
      const log = (await f.serverStore.read(id)).events
      expect(reasonsOf(log)).toEqual(['completed', 'aborted', 'completed'])
      expect(f.deployed).toEqual(['staging'])
      const streamed = sessionEvents(frames)
      // Every event of the log, once each, in seq order.
      expect(streamed.map((e) => e.seq)).toEqual(log.map((e) => e.seq))
      expect(streamed.map((e) => e.type)).toEqual(log.map((e) => e.type))
      expect(streamed.filter((e) => e.type === 'tool/call').length).toBe(2)
      const decisions = log.filter((e) => e.type === 'permission/decision').map((e) => e.data as { tool: string; decision: string; by: string })
      expect(decisions).toEqual(expect.arrayContaining([expect.objectContaining({ tool: 'deploy', decision: 'allow', by: 'user' })]))

      expect(sessionEvents((await lateTail).frames).map((e) => e.seq)).toEqual(log.slice(4).map((e) => e.seq))

      // A client that reconnects with Last-Event-ID gets exactly the rest.
      const resumeAt = streamed[Math.floor(streamed.length / 2)]?.seq as number
      const resumed = await readSse(`${f.base}/api/sessions/${id}/stream`, {
        headers: { ...auth, 'last-event-id': String(resumeAt) },
        done: (got) => sessionEvents(got).some((e) => e.seq === log.length - 1),
      })
      expect(sessionEvents(resumed.frames).map((e) => e.seq)).toEqual(log.slice(resumeAt + 1).map((e) => e.seq))

      await until(async () => ((await f.serverStore.sessionStates([id])).length === 0 ? true : undefined))
      expect(await leaseOwner(id)).toBeNull()
      expect(((await (await f.api(`/api/sessions/${id}`)).json()) as { status: string }).status).toBe('stored')
      expect(f.leaseCalls).toEqual([])
    } finally {
      await f.close()
    }
  }, 90_000)

  it('cancelling a turn that waits for an approval withdraws the question and denies the call', async () => {
    const f = await startFleet()
    try {
      const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
      await f.post(`/api/sessions/${id}/followup`, { text: 'deploy it' })
      const pending = await until(async () => {
        const listed = (await (await f.api(`/api/sessions/${id}/approvals`)).json()) as { approvals: { callId: string }[] }
        return listed.approvals[0]
      })
      expect((await f.post(`/api/sessions/${id}/cancel`)).status).toBe(202)
      await until(async () => (reasonsOf((await f.serverStore.read(id)).events).length === 1 ? true : undefined))
      expect(reasonsOf((await f.serverStore.read(id)).events)).toEqual(['aborted'])
      expect(((await (await f.api(`/api/sessions/${id}/approvals`)).json()) as { approvals: unknown[] }).approvals).toEqual([])
      expect((await f.post(`/api/sessions/${id}/approvals/${pending.callId}`, { decision: 'allow' })).status).toBe(404)
      expect(f.deployed).toEqual([])
    } finally {
      await f.close()
    }
  }, 60_000)

  it('serves the views, verify and fork over the store, and answers what it cannot do here with structured errors', async () => {
    const f = await startFleet()
    try {
      const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
      await f.post(`/api/sessions/${id}/followup`, { text: 'echo one' })
      await f.post(`/api/sessions/${id}/followup`, { text: 'hello' })
      await until(async () => (reasonsOf((await f.serverStore.read(id)).events).length === 2 ? true : undefined))

      const request = (await (await f.api(`/api/sessions/${id}/requests/2`)).json()) as { n: number; count: number; diff: { stablePrefix: number } | null }
      expect(request.n).toBe(2)
      expect(request.count).toBe(3)
      expect(request.diff).not.toBeNull()
      const timeline = await f.api(`/api/sessions/${id}/timeline`)
      expect(timeline.status).toBe(200)
      expect(((await (await f.api(`/api/sessions/${id}/verify`)).json()) as { ok: boolean }).ok).toBe(true)
      const events = (await (await f.api(`/api/sessions/${id}/events?after=2&limit=3`)).json()) as { events: { seq: number }[]; next?: number }
      expect(events.events.map((e) => e.seq)).toEqual([3, 4, 5])
      const listed = (await (await f.api(`/api/sessions?q=echo%20one`)).json()) as { sessions: { id: string; title: string; turns: number }[] }
      expect(listed.sessions).toMatchObject([{ id, title: 'echo one', turns: 2 }])

      // Fork after the first turn: the child is stored detached, and its first followup runs on the worker.
      const firstEnd = (await f.serverStore.read(id)).events.find((e) => e.type === 'turn/end')?.seq as number
      const forked = await f.post(`/api/sessions/${id}/fork`, { at: firstEnd })
      expect(forked.status).toBe(201)
      const child = ((await forked.json()) as { id: string }).id
      const childLog = await f.serverStore.read(child)
      expect(childLog.header.parentSession).toBe(id)
      expect(childLog.header.seedLength).toBe(firstEnd + 1)
      await f.post(`/api/sessions/${child}/followup`, { text: 'hello again' })
      await until(async () => (reasonsOf((await f.serverStore.read(child)).events).length === 2 ? true : undefined))
      expect(((await (await f.api(`/api/sessions/${child}/verify`)).json()) as { ok: boolean }).ok).toBe(true)

      const error = async (response: Promise<Response>): Promise<[number, string]> => {
        const r = await response
        return [r.status, ((await r.json()) as { error: { code: string } }).error.code]
      }
      expect(await error(f.post(`/api/sessions/${id}/compact`))).toEqual([501, 'NOT_IMPLEMENTED'])
      // A rerun needs a composition to run the agent, which only the workers have; comparing only reads.
      expect(await error(f.post(`/api/sessions/${id}/rerun`, {}))).toEqual([501, 'NOT_IMPLEMENTED'])
      const compared = (await (await f.api(`/api/compare?a=${id}&b=${child}`)).json()) as { turns: { turn: number }[]; a: { id: string } }
      expect(compared.a.id).toBe(id)
      expect(compared.turns.map((t) => t.turn)).toEqual([1, 2])
      expect(await error(f.post('/api/sessions', { model: 'other' }))).toEqual([400, 'UNSUPPORTED_OPTION'])
      // A per-session cost cap too: the workers run sessions with their own --max-cost.
      expect(await error(f.post('/api/sessions', { maxCostUsd: 0.5 }))).toEqual([400, 'UNSUPPORTED_OPTION'])
      expect(await error(f.post('/api/sessions/nope/followup', { text: 'x' }))).toEqual([404, 'SESSION_NOT_FOUND'])
      expect(await error(f.api('/api/sessions/nope/stream'))).toEqual([404, 'SESSION_NOT_FOUND'])
      expect(await error(f.api('/api/sessions/nope/approvals'))).toEqual([404, 'SESSION_NOT_FOUND'])
      expect(await error(f.post(`/api/sessions/${id}/approvals/nocall`, { decision: 'allow' }))).toEqual([404, 'NOT_FOUND'])
      expect(f.leaseCalls).toEqual([])
    } finally {
      await f.close()
    }
  }, 90_000)
})
