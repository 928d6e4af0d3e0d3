import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Session, verifySessionLog } from '../../src/index.js'
import { PostgresStore } from '../../src/postgres.js'
import type { SessionEvent } from '../../src/session/events.js'
import { startDeepseek } from '../cli/deepseek-server.js'
import { cliEnv, ensureBuilt, finished, startCli, tempHome, waitForOutput } from '../cli/cli-process.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'

let db: ScratchDatabase
beforeAll(async () => {
  ensureBuilt()
  db = await createScratchDatabase()
}, 120_000)
afterAll(async () => {
  await db.drop()
})

async function waitForTurnEnds(store: PostgresStore, id: string, count: number, timeoutMs = 20_000): Promise<readonly SessionEvent[]> {
  const until = Date.now() + timeoutMs
  for (;;) {
    const { events } = await store.read(id)
    if (events.filter((e) => e.type === 'turn/end').length >= count) return events
    if (Date.now() > until) throw new Error(`session ${id}: fewer than ${count} turns ended; last events ${events.slice(-5).map((e) => e.type).join(', ')}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

// Before issue 23 the worker composed its agents without the compaction plugin: a session that compacts
// under `run` overflowed under `worker`. Now both take the one composition of app/compose.ts.
describe('ledgerloop worker compacts as run does', () => {
  it('a session over the threshold logs compaction/* events and its turn goes on', async () => {
    const home = tempHome()
    // Turn 3 reports 3300 prompt tokens of a 4000-token window: the next step starts over 0.8 × 4000.
    const server = await startDeepseek([
      { text: ['A'.repeat(6000)], usage: { hit: 0, miss: 300, output: 1500 } },
      { text: ['two'], usage: { hit: 1800, miss: 200, output: 5 } },
      { text: ['three'], usage: { hit: 3000, miss: 300, output: 5 } },
      { text: ['Summary: turn 1 answered with a long run of A.'], usage: { hit: 0, miss: 1600, output: 12 } },
      { text: ['four'], usage: { hit: 900, miss: 20, output: 5 } },
    ])
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({ provider: 'ds', providers: { ds: { type: 'deepseek', baseURL: server.baseURL, model: 'small', models: { small: { contextWindow: 4000 } } } } }),
    )
    const store = new PostgresStore({ connectionString: db.url, schema: 'compaction' })
    const worker = startCli(['worker', '--store', `${db.url}?schema=compaction`, '--root', home, '--json', '--idle-grace-ms', '5000', '--poll-ms', '100'], {
      env: cliEnv(home, { DEEPSEEK_API_KEY: 'sk-test-worker-compaction' }),
    })
    try {
      await waitForOutput(worker, '"type":"started"', 20_000)
      await store.createDetached(new Session({ id: 'long-1' }).header)
      for (const n of [1, 2, 3, 4]) {
        await store.send('long-1', { kind: 'followup', message: `task ${n}` })
        await waitForTurnEnds(store, 'long-1', n)
      }
    } finally {
      worker.kill('SIGTERM')
    }
    const run = await finished(worker, 30_000)
    await server.close()
    expect(run.code, run.stderr).toBe(0)
    const { events } = await store.read('long-1')
    await store.close()
    const types = events.map((e) => e.type)
    expect(types.filter((t) => t.startsWith('compaction/'))).toEqual(['compaction/start', 'compaction/request', 'compaction/summary', 'compaction/end'])
    const turnEnds = events.filter((e) => e.type === 'turn/end').map((e) => e.data)
    expect(turnEnds).toEqual([1, 2, 3, 4].map((turn) => ({ turn, reason: { kind: 'completed' } })))
    // The compaction ran inside turn 4, before its request; the turn then continued to its answer.
    const start = types.indexOf('compaction/start')
    expect(start).toBeGreaterThan(types.lastIndexOf('turn/start'))
    expect(events.slice(start).some((e) => e.type === 'assistant/message')).toBe(true)
    expect(verifySessionLog(events).problems).toEqual([])
  }, 90_000)
})
