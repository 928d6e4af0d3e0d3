import { afterAll, beforeAll, expect, it } from 'vitest'
import { scriptedAdapter, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { PostgresStore, runWorker, turnScript } from '../../src/postgres.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from '../cli/cli-process.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'

let db: ScratchDatabase
beforeAll(async () => {
  ensureBuilt()
  db = await createScratchDatabase()
}, 180_000)
afterAll(async () => {
  await db.drop()
})

it('run --store postgres://… --attach sends the prompt through the inbox and follows the worker running it live', async () => {
  const store = new PostgresStore({ connectionString: db.url, schema: 'att' })
  const stop = new AbortController()
  const model = scriptedAdapter({ script: turnScript([{ text: ['Hello ', 'from ', 'a worker.'], delayMs: 5 }]) })
  const worker = runWorker({ store, adapters: [model], provider: 'scripted', model: 'scripted', idleGraceMs: 200, pollMs: 100, signal: stop.signal })
  try {
    const home = tempHome()
    const run = await runCli(['run', '--store', `${db.url}?schema=att`, '--attach', '--json', 'say hello'], { env: cliEnv(home), timeoutMs: 30_000 })
    expect(run.code, run.stderr).toBe(0)
    const events = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as SessionEvent)
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.at(-1)).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } } })
    expect(events.find((e) => e.type === 'assistant/message')?.data).toMatchObject({ message: { content: [{ type: 'text', text: 'Hello from a worker.' }] } })
    const id = /session (\S+)/.exec(run.stderr)?.[1] as string
    const log = await store.read(id)
    expect(verifySessionLog(log.events).problems).toEqual([])
  } finally {
    stop.abort()
    await worker
    await store.close()
  }
}, 60_000)

it('run --attach without a postgres:// store is a usage error', async () => {
  const home = tempHome()
  const run = await runCli(['run', '--attach', 'hi'], { env: cliEnv(home) })
  expect(run.code).toBe(2)
  expect(run.stderr).toContain('--attach needs a shared store')
})
