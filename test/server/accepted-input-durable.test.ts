// `serve` answers 202 to followup, steer and inject only once the input is on disk: a process killed the moment
// after the answer still has the input in the log, and the next resume answers it (issue 24: no prompt is ever
// swallowed). Before, the splice waited for the writer's 20 ms timer, and a crash in that window lost input the
// client had been told was accepted.
import { spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { JsonlStore, type SessionEvent } from '../../src/index.js'
import { bundleTestChild } from '../support/child-process-kit.js'

const TOKEN = 'accepted-durable-token-0123456789'
const here = dirname(fileURLToPath(import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'll-accepted-'))
const sessions = join(dir, 'sessions')
let childFile = ''

beforeAll(async () => {
  // The poison test's serve process: scripted model with a delay per step, JSONL store in `sessions`.
  childFile = await bundleTestChild(join(here, '../worker/poison-serve-child.ts'), dir)
  cpSync(join(here, '../../dist/server/web'), join(dir, 'web'), { recursive: true })
}, 60_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function serve(): Promise<{ child: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [childFile, sessions, TOKEN], { stdio: ['ignore', 'pipe', 'inherit'] })
  const base = await new Promise<string>((resolve, reject) => {
    child.once('exit', () => reject(new Error('serve exited before it was ready')))
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const event = JSON.parse(line) as { type: string; base?: string }
      if (event.type === 'ready') resolve(event.base as string)
    })
  })
  return { child, base }
}

const post = (base: string, path: string, body: unknown): Promise<Response> =>
  fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } })

const kill9 = async (child: ChildProcess): Promise<void> => {
  const exited = new Promise((r) => child.once('exit', r))
  child.kill('SIGKILL')
  await exited
}

it('a new session\'s cost cap, and a followup, a steer and an inject answered 202 survive a SIGKILL sent the moment the answer arrives', async () => {
  const store = new JsonlStore({ dir: sessions })
  try {
    for (const [round, kind] of (['create', 'followup', 'steer', 'inject', 'followup', 'steer', 'inject'] as const).entries()) {
      const { child, base } = await serve()
      // A cost cap is part of the session: it survives a kill right after the id is handed out, as the input does.
      const id = ((await (await post(base, '/api/sessions', round === 0 ? { maxCostUsd: 0.5 } : {})).json()) as { id: string }).id
      if (round === 0) {
        await kill9(child)
        const capped = (await store.read(id)).events.filter((e) => e.type === 'cost-budget/cap')
        expect(capped.map((e) => e.data)).toEqual([{ maxUsd: 0.5, per: 'session', origin: 'session' }])
        continue
      }
      const text = `${kind} ${round} must not be lost`
      expect((await post(base, `/api/sessions/${id}/${kind}`, { text })).status).toBe(202)
      await kill9(child)
      const events: readonly SessionEvent[] = (await store.read(id)).events
      const queued = events.filter((e) => e.type === 'agent/inbox/spliced' && JSON.stringify(e.data).includes(text))
      expect(queued, `${kind}: the accepted input is in the log after the kill`).toHaveLength(1)
    }
  } finally {
    await store.close()
  }
}, 60_000)
