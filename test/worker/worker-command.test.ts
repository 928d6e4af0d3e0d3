import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Session, verifySessionLog } from '../../src/index.js'
import { PostgresStore } from '../../src/postgres.js'
import { cliEnv, ensureBuilt, finished, runCli, startCli, tempHome, waitForOutput } from '../cli/cli-process.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'

let db: ScratchDatabase
beforeAll(async () => {
  ensureBuilt()
  db = await createScratchDatabase()
}, 120_000)
afterAll(async () => {
  await db.drop()
})

describe('ledgerloop worker', () => {
  it('serves a followup sent through the inbox with a scripted model, then shuts down cleanly on SIGTERM', async () => {
    const home = tempHome()
    const script = join(home, 'script.json')
    writeFileSync(script, JSON.stringify([{ text: ['Hello ', 'from the worker.'] }]))
    const store = new PostgresStore({ connectionString: db.url, schema: 'cli' })
    await store.createDetached(new Session({ id: 'cli-1' }).header)
    await store.send('cli-1', { kind: 'followup', message: 'say hello' })
    const url = `${db.url}?schema=cli`
    const worker = startCli(['worker', '--store', url, '--script', script, '--root', home, '--json', '--idle-grace-ms', '200', '--poll-ms', '100'], { env: cliEnv(home) })
    await waitForOutput(worker, '"type":"released"', 20_000)
    worker.kill('SIGTERM')
    const run = await finished(worker)
    expect(run.code, run.stderr).toBe(0)
    const events = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string })
    expect(events.map((e) => e.type)).toEqual(['started', 'claimed', 'input', 'released', 'stopped'])
    expect(run.stdout).not.toContain(db.url.split('@')[0] ?? 'unused')
    const log = await store.read('cli-1')
    expect(verifySessionLog(log.events).problems).toEqual([])
    expect(log.events.find((e) => e.type === 'assistant/message')?.data).toMatchObject({ message: { content: [{ type: 'text', text: 'Hello from the worker.' }] } })
    expect(log.events.find((e) => e.type === 'turn/end')?.data).toEqual({ turn: 1, reason: { kind: 'completed' } })
    await store.close()
  }, 60_000)

  it('refuses to start without a postgres:// store (usage error, exit 2)', async () => {
    const home = tempHome()
    const run = await runCli(['worker', '--store', join(home, 'sessions')], { env: cliEnv(home) })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--store postgres://')
  })

  it('names the database without its password when it cannot be reached', async () => {
    const home = tempHome()
    const script = join(home, 'script.json')
    writeFileSync(script, '[]')
    const run = await runCli(['worker', '--store', 'postgres://app:hunter2@127.0.0.1:1/none', '--script', script], { env: cliEnv(home) })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('STORE_UNAVAILABLE')
    expect(run.stderr).toContain('127.0.0.1:1/none')
    expect(run.stderr + run.stdout).not.toContain('hunter2')
  })
})
