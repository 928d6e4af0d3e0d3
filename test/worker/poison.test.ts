import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { expect, it } from 'vitest'
import { Session, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { PostgresStore } from '../../src/postgres.js'
import { createLedgerServer, PostgresSessionPort } from '../../src/server/index.js'
import { checkEveryPromptAnswered } from '../support/answered-prompts.js'
import { bundleTestChild } from '../support/child-process-kit.js'
import { createScratchDatabase } from '../store/postgres-scratch.js'
import { TOKEN } from '../server/serve-fixture.js'

// A poison session on a worker fleet: its tool SIGKILLs whichever worker runs it, in its first turn and in
// every continuation. Three workers at concurrency 4 are full of bystanders mid-way through multi-step turns
// when the poison's first turn kills the one it shares with three of them. Every session that crash cut off is
// continued alone (claim-policy.ts): the bystanders' continuations complete, the poison's kills only its own
// worker, and after `quarantineAfter` counted tries the next worker to claim it quarantines it instead of dying.
// No worker claims it again; no bystander is quarantined, every prompt is answered once, every log verifies.
// The API lists it quarantined with the reason, and "resume anyway" through the API hands it back to the
// fleet, whose workers count afresh.

const SCHEMA = 'poison'
// 2, the smallest K that can tell a poison from a bystander: one more counted crash would quarantine a bystander.
const K = 2
const WORKERS = 3
const CONCURRENCY = 4
const here = dirname(fileURLToPath(import.meta.url))

interface Worker {
  readonly tag: string
  readonly child: ChildProcess
  readonly events: Record<string, unknown>[]
  readonly ready: Promise<void>
}

it('POISON-FLEET: at concurrency 4, a session whose tool kills its worker every time ends quarantined after K tries; its bystanders complete, none quarantined; the API shows it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'll-poison-'))
  const db = await createScratchDatabase('ll_poison')
  const store = new PostgresStore({ connectionString: db.url, schema: SCHEMA })
  const workers: Worker[] = []
  let stopping = false
  try {
    const childFile = await bundleTestChild(join(here, 'poison-child.ts'), dir, ['pg-native'])
    const spawnWorker = (): Worker => {
      const tag = `w${workers.length}`
      const child = spawn(process.execPath, [childFile, db.url, SCHEMA, tag, '1000', String(K), String(CONCURRENCY)], { stdio: ['ignore', 'pipe', 'inherit'] })
      const events: Record<string, unknown>[] = []
      let ready!: () => void
      const worker: Worker = { tag, child, events, ready: new Promise<void>((r) => (ready = r)) }
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        const event = JSON.parse(line) as Record<string, unknown>
        events.push(event)
        if (event.type === 'ready') ready()
      })
      // A worker the poison killed is replaced, as a supervisor (systemd, Kubernetes) would.
      child.once('exit', () => {
        if (!stopping) spawnWorker()
      })
      workers.push(worker)
      return worker
    }
    await store.ready()
    // One slot short of the fleet's: the poison's first turn lands beside three bystanders in the last free slot.
    const normal = Array.from({ length: WORKERS * CONCURRENCY - 1 }, (_, i) => `n${i + 1}`)
    for (const id of ['poison', ...normal]) await store.createDetached(new Session({ id }).header)
    for (let i = 0; i < WORKERS; i++) spawnWorker()
    await Promise.all(workers.map((w) => w.ready))
    for (const id of normal) await store.send(id, { kind: 'followup', message: `${id} prompt 1` })
    const started = Date.now() + 30_000
    while ((await store.sessionStates(normal)).filter((s) => s.status === 'running').length < normal.length) {
      if (Date.now() > started) throw new Error('the bystanders did not all start their turns in time')
      await new Promise((r) => setTimeout(r, 20))
    }
    await store.send('poison', { kind: 'followup', message: 'swallow the poison' })
    for (const id of normal) await store.send(id, { kind: 'followup', message: `${id} prompt 2` })

    const deadline = Date.now() + 90_000
    const settled = async (): Promise<boolean> => {
      const states = await store.sessionStates()
      if (states.find((s) => s.id === 'poison')?.status !== 'quarantined') return false
      for (const id of normal) {
        const ends = (await store.read(id)).events.filter((e) => e.type === 'turn/end' && (e.data as { reason: { kind: string } }).reason.kind === 'completed')
        if (ends.length < 2) return false
      }
      return true
    }
    while (!(await settled())) {
      if (Date.now() > deadline) throw new Error(`not settled in time; worker events:\n${workers.flatMap((w) => w.events.map((e) => `${w.tag} ${JSON.stringify(e)}`)).join('\n')}`)
      await new Promise((r) => setTimeout(r, 200))
    }

    // The poison killed K workers (its first turn and K-1 continuations, each alone), then one quarantined it.
    const crashes = workers.flatMap((w) => w.events.filter((e) => e.type === 'crashing'))
    expect(crashes).toHaveLength(K)
    const claims = workers.flatMap((w) => w.events.filter((e) => e.type === 'claimed'))
    expect(claims.filter((e) => e.sessionId === 'poison' && e.alone === true)).toHaveLength(K - 1)
    expect(workers.flatMap((w) => w.events.filter((e) => e.type === 'quarantined' && e.sessionId === 'poison'))).toHaveLength(1)
    const poison = (await store.read('poison')).events
    expect(verifySessionLog(poison).problems).toEqual([])
    const marks = poison.filter((e) => e.type === 'session/quarantined')
    expect(marks).toHaveLength(1)
    expect((marks[0]?.data as { reason: string }).reason).toMatch(new RegExp(`interrupted ${K} times in a row \\(turns 1, 2\\): only the original turn and continuations that ran alone in their process count`))
    expect(marks[0]?.data).toMatchObject({ turn: K, interruptions: [1, 2] })
    expect(poison.filter((e) => e.type === 'turn/start' && (e.data as { continues?: number }).continues !== undefined)).toHaveLength(K - 1)
    expect(poison.filter((e) => e.type === 'session/continued-alone')).toHaveLength(K - 1)

    // Nothing else of the fleet was disturbed: every prompt answered once by a completed turn, every log valid,
    // none quarantined. The poison's first crash cut off bystanders' turns: each was continued alone, and completed.
    let cutOff = 0
    for (const id of normal) {
      const events: SessionEvent[] = (await store.read(id)).events
      expect(verifySessionLog(events).problems, id).toEqual([])
      expect(checkEveryPromptAnswered(events, (why) => expect.fail(`${id}: ${why}`)).prompts, id).toBe(2)
      expect(events.filter((e) => e.type === 'session/quarantined'), id).toEqual([])
      const interrupted = events.filter((e) => e.type === 'turn/end' && (e.data as { reason: { kind: string } }).reason.kind === 'interrupted')
      expect(interrupted.length, `${id}: a bystander is cut off once at most`).toBeLessThanOrEqual(1)
      if (interrupted.length === 1) {
        cutOff++
        expect(events.filter((e) => e.type === 'session/continued-alone'), id).toHaveLength(1)
        expect(claims.filter((e) => e.sessionId === id && e.alone === true), id).toHaveLength(1)
      }
    }
    expect(cutOff).toBeGreaterThanOrEqual(1)
    expect((await store.sessionStates(normal)).filter((s) => s.status === 'quarantined')).toEqual([])

    // A quarantined session stays unclaimed: many polls later nobody owns it and no worker died.
    const before = workers.length
    await new Promise((r) => setTimeout(r, 1500))
    expect(workers.length).toBe(before)
    expect((await store.sessionStates(['poison']))[0]).toMatchObject({ status: 'quarantined', owned: false, owner: null })

    // The page's API lists it quarantined, with the reason.
    const port = new PostgresSessionPort({ store })
    const server = await createLedgerServer({ store, sessions: { input: port, feed: port, close: () => port.close() }, token: TOKEN, port: 0 })
    const base = await server.listen()
    try {
      const list = (await (await fetch(`${base}/api/sessions`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { sessions: { id: string; quarantine?: { reason: string } }[] }
      expect(list.sessions.find((s) => s.id === 'poison')?.quarantine?.reason).toMatch(/interrupted 2 times in a row/)
      expect(list.sessions.filter((s) => s.quarantine !== undefined).map((s) => s.id)).toEqual(['poison'])
      // "Resume anyway": lifted through a fenced append, released pending; a worker claims it and the poison
      // kills K workers again before the next quarantine (interruptions count afresh after a lift).
      const resume = (body: unknown) => fetch(`${base}/api/sessions/poison/resume`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } })
      expect((await resume({})).status).toBe(409)
      const lifted = await resume({ force: true })
      expect([lifted.status, await lifted.json()]).toEqual([200, { lifted: true }])
      const again = Date.now() + 60_000
      while (workers.flatMap((w) => w.events.filter((e) => e.type === 'quarantined' && e.sessionId === 'poison')).length < 2) {
        if (Date.now() > again) throw new Error('the resumed poison session was not quarantined again in time')
        await new Promise((r) => setTimeout(r, 200))
      }
      expect(workers.flatMap((w) => w.events.filter((e) => e.type === 'crashing'))).toHaveLength(2 * K)
      const after = (await store.read('poison')).events
      expect(verifySessionLog(after).problems).toEqual([])
      expect(after.filter((e) => e.type === 'session/quarantine-lifted')).toHaveLength(1)
      expect(after.filter((e) => e.type === 'session/quarantined')).toHaveLength(2)
    } finally {
      await server.close()
    }
  } finally {
    stopping = true
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM')
    await Promise.all(workers.map((w) => (w.child.exitCode !== null || w.child.signalCode !== null ? undefined : new Promise((r) => w.child.once('exit', r)))))
    await store.close()
    await db.drop()
    rmSync(dir, { recursive: true, force: true })
  }
}, 180_000)
