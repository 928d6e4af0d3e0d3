import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool, scriptedAdapter, Session, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { PostgresStore, runWorker, turnScript, type WorkerEvent } from '../../src/postgres.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'

let db: ScratchDatabase
beforeAll(async () => {
  db = await createScratchDatabase()
})
afterAll(async () => {
  await db.drop()
})

const reasons = (events: readonly SessionEvent[]): string[] =>
  events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)

function workerSetup(bodies: string[]) {
  const record = defineTool({
    name: 'record',
    description: 'Appends a line',
    parameters: z.object({ note: z.string() }),
    execute: (args, ctx) => {
      bodies.push(`${ctx.agent.id} ${ctx.callId}`)
      return `noted ${args.note}`
    },
  })
  const model = scriptedAdapter({
    script: turnScript([{ toolCalls: [{ name: 'record', arguments: { note: 'x' } }], delayMs: 5 }, { text: ['do', 'ne'], delayMs: 5 }]),
  })
  return { adapters: [model], tools: [record] }
}

async function until(check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time')
    await new Promise((r) => setTimeout(r, 50))
  }
}

describe('runWorker', () => {
  it('serves input sent through the inbox: each followup becomes a turn, rows leave the inbox, the session is released', async () => {
    const store = new PostgresStore({ connectionString: db.url, schema: 'w1', leaseMs: 3000 })
    const sender = new PostgresStore({ connectionString: db.url, schema: 'w1' })
    const bodies: string[] = []
    const events: WorkerEvent[] = []
    const stop = new AbortController()
    const ids = ['a', 'b', 'c']
    for (const id of ids) {
      await sender.createDetached(new Session({ id }).header)
      await sender.send(id, { kind: 'followup', message: `first ${id}` })
      await sender.send(id, { kind: 'followup', message: `second ${id}` })
    }
    const worker = runWorker({ store, ...workerSetup(bodies), provider: 'scripted', model: 'm', concurrency: 2, idleGraceMs: 200, pollMs: 100, signal: stop.signal, onEvent: (e) => events.push(e) })
    await until(async () => {
      const logs = await Promise.all(ids.map((id) => sender.read(id)))
      return logs.every((l) => reasons(l.events).length === 2) && events.filter((e) => e.type === 'released').length >= 3
    })
    stop.abort()
    const summary = await worker
    expect(summary.errors).toBe(0)
    expect(summary.claimed).toBeGreaterThanOrEqual(3)
    for (const id of ids) {
      const log = await sender.read(id)
      expect(verifySessionLog(log.events).problems).toEqual([])
      expect(reasons(log.events)).toEqual(['completed', 'completed'])
      const prompts = log.events.filter((e) => e.type === 'user/message' && (e.data as { source: { kind: string } }).source.kind === 'user')
      expect(prompts.map((e) => (e.data as { content: { text: string }[] }).content[0]?.text)).toEqual([`first ${id}`, `second ${id}`])
      expect(await sender.pendingInput(id)).toEqual([])
    }
    expect(bodies.sort()).toEqual(ids.flatMap((id) => [`${id} t1_1_1`, `${id} t2_1_1`]).sort())
    await store.close()
    await sender.close()
  })

  it('a cancel sent through the inbox aborts the running turn of a session another process owns', async () => {
    const store = new PostgresStore({ connectionString: db.url, schema: 'w2', leaseMs: 3000 })
    const sender = new PostgresStore({ connectionString: db.url, schema: 'w2' })
    const stop = new AbortController()
    const model = scriptedAdapter({ script: () => ({ hang: true }) })
    await sender.createDetached(new Session({ id: 'hung' }).header)
    await sender.send('hung', { kind: 'followup', message: 'never answered' })
    const worker = runWorker({ store, adapters: [model], provider: 'scripted', model: 'm', idleGraceMs: 200, pollMs: 100, signal: stop.signal })
    await until(async () => (await sender.read('hung')).events.some((e) => e.type === 'step/start'))
    await sender.send('hung', { kind: 'cancel' })
    await until(async () => reasons((await sender.read('hung')).events).length === 1)
    stop.abort()
    await worker
    const log = await sender.read('hung')
    expect(log.events.find((e) => e.type === 'turn/end')?.data).toEqual({ turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } })
    expect(verifySessionLog(log.events).problems).toEqual([])
    await store.close()
    await sender.close()
  })

  it('a graceful shutdown releases a session with queued turns as pending; the next worker claims it, continues the turn it cut off, and runs the queued ones (Agent.wake)', async () => {
    const sender = new PostgresStore({ connectionString: db.url, schema: 'w3' })
    await sender.createDetached(new Session({ id: 'queued' }).header)
    for (const text of ['one', 'two', 'three']) await sender.send('queued', { kind: 'followup', message: text })
    const slow = { adapters: [scriptedAdapter({ script: turnScript([{ text: ['a', 'b', 'c', 'd', 'e', 'f'], delayMs: 200 }]) })], provider: 'scripted', model: 'm' }
    const first = new PostgresStore({ connectionString: db.url, schema: 'w3', leaseMs: 3000 })
    const stopFirst = new AbortController()
    const released: WorkerEvent[] = []
    const running = runWorker({ store: first, ...slow, shutdownGraceMs: 0, pollMs: 100, signal: stopFirst.signal, onEvent: (e) => e.type === 'released' && released.push(e) })
    await until(async () => (await sender.read('queued')).events.some((e) => e.type === 'step/start'))
    stopFirst.abort()
    await running
    expect(released).toEqual([{ type: 'released', sessionId: 'queued', status: 'pending' }])
    expect(await sender.pendingInput('queued')).toEqual([])
    const fast = { adapters: [scriptedAdapter({ script: turnScript([{ text: 'ok' }]) })], provider: 'scripted', model: 'm' }
    const second = new PostgresStore({ connectionString: db.url, schema: 'w3', leaseMs: 3000 })
    const stopSecond = new AbortController()
    const serving = runWorker({ store: second, ...fast, idleGraceMs: 100, pollMs: 100, signal: stopSecond.signal })
    await until(async () => reasons((await sender.read('queued')).events).length === 4)
    stopSecond.abort()
    await serving
    const log = await sender.read('queued')
    // The turn the shutdown cut off (aborted {disposed}) is carried on first, then 'two' and 'three'.
    expect(reasons(log.events)).toEqual(['aborted', 'completed', 'completed', 'completed'])
    expect(log.events.filter((e) => e.type === 'turn/start').map((e) => e.data)).toEqual([{ turn: 1 }, { turn: 2, continues: 1 }, { turn: 3 }, { turn: 4 }])
    expect(verifySessionLog(log.events).problems).toEqual([])
    await Promise.all([first.close(), second.close(), sender.close()])
  })
})
