import { afterAll, beforeAll, expect, it } from 'vitest'
import { scriptedAdapter } from '../../src/index.js'
import { PostgresStore, runWorker, turnScript } from '../../src/postgres.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'
import { cliEnv, ensureBuilt, finished, runCli, startCli, tempHome } from './cli-process.js'

let db: ScratchDatabase
beforeAll(async () => {
  ensureBuilt()
  db = await createScratchDatabase()
}, 180_000)
afterAll(async () => {
  await db.drop()
})

async function withWorker<T>(schema: string, steps: Parameters<typeof turnScript>[0], body: (store: PostgresStore) => Promise<T>): Promise<T> {
  const store = new PostgresStore({ connectionString: db.url, schema })
  const stop = new AbortController()
  const model = scriptedAdapter({ script: turnScript(steps) })
  const worker = runWorker({ store, adapters: [model], provider: 'scripted', model: 'scripted', idleGraceMs: 200, pollMs: 100, signal: stop.signal })
  try {
    return await body(store)
  } finally {
    stop.abort()
    await worker
    await store.close()
  }
}

it('ISSUE-28 item 9: run --attach shows the reasoning, the answer and the usual footer with tokens', async () => {
  await withWorker('att_view', [{ reasoning: ['Thinking it ', 'over.'], text: ['Hello ', 'from a worker.'], usage: { inputTokens: 1200, outputTokens: 30 } }], async () => {
    const run = await runCli(['run', '--store', `${db.url}?schema=att_view`, '--attach', 'say hello'], { env: cliEnv(tempHome()), timeoutMs: 30_000 })
    expect(run.code, run.stderr).toBe(0)
    expect(run.stdout).toContain('thinking: Thinking it over.')
    expect(run.stdout).toContain('Hello from a worker.')
    expect(run.stdout).toMatch(/── completed · 1 step · tokens 1,200 in · 30 out · /)
  })
}, 60_000)

it('ISSUE-28 item 9: a turn cancelled by another client is not "cancelled by you" and does not exit 130', async () => {
  await withWorker('att_cancel', [{ hang: true }], async (store) => {
    const child = startCli(['run', '--store', `${db.url}?schema=att_cancel`, '--attach', 'wait for it'], { env: cliEnv(tempHome()) })
    const deadline = Date.now() + 20_000
    while (!/session (\S+)/.test(child.out.stderr) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    const id = /session (\S+)/.exec(child.out.stderr)?.[1] as string
    // Wait until the worker runs the turn, then cancel it as the page or another terminal would.
    while (!(await store.read(id)).events.some((e) => e.type === 'step/start') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50))
    await store.send(id, { kind: 'cancel' })
    const run = await finished(child, 30_000)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('cancelled through the session inbox by another client, not from here')
    expect(`${run.stdout}${run.stderr}`).not.toContain('cancelled by you')
  })
}, 60_000)
