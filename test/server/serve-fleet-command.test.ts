import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PostgresStore } from '../../src/postgres.js'
import { cliEnv, ensureBuilt, finished, runCli, startCli, tempHome, waitForOutput } from '../cli/cli-process.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'

// `ledgerloop serve --store postgres://…` and `ledgerloop worker --remote-approvals` as users start them (dist/).
let db: ScratchDatabase
beforeAll(async () => {
  ensureBuilt()
  db = await createScratchDatabase()
}, 180_000)
afterAll(async () => {
  await db.drop()
})

async function until<T>(check: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error('condition not reached in time')
    await new Promise((r) => setTimeout(r, 100))
  }
}

describe('ledgerloop serve with a worker fleet (built package)', () => {
  it('serve only writes the inbox; a worker runs the turn and waits for the approval given through the API', async () => {
    const home = tempHome()
    const script = join(home, 'script.json')
    writeFileSync(script, JSON.stringify([{ toolCalls: [{ name: 'write_file', arguments: { path: 'note.txt', content: 'approved' } }] }, { text: 'written' }]))
    const url = `${db.url}?schema=cmd`
    const server = startCli(['serve', '--store', url, '--port', '0', '--token', 'fleet-token-0123456789'], { env: cliEnv(home) })
    const worker = startCli(['worker', '--store', url, '--script', script, '--root', home, '--remote-approvals', '--json', '--idle-grace-ms', '300', '--poll-ms', '100'], { env: cliEnv(home) })
    try {
      await waitForOutput(server, 'open http', 20_000)
      expect(server.out.stdout).toContain('sessions run by workers')
      const base = new URL(/open (\S+)/.exec(server.out.stdout)?.[1] ?? '').origin
      const headers = { authorization: 'Bearer fleet-token-0123456789', 'content-type': 'application/json' }
      const created = await fetch(`${base}/api/sessions`, { method: 'POST', headers, body: '{}' })
      expect(created.status).toBe(201)
      const { id } = (await created.json()) as { id: string }
      await fetch(`${base}/api/sessions/${id}/followup`, { method: 'POST', headers, body: JSON.stringify({ text: 'write the note' }) })
      const pending = await until(async () => {
        const listed = (await (await fetch(`${base}/api/sessions/${id}/approvals`, { headers })).json()) as { approvals: { callId: string; tool: string; subject: string }[] }
        return listed.approvals[0]
      })
      expect(pending).toMatchObject({ tool: 'write_file', subject: 'note.txt' })
      expect(existsSync(join(home, 'note.txt'))).toBe(false)
      const answered = await fetch(`${base}/api/sessions/${id}/approvals/${pending.callId}`, { method: 'POST', headers, body: JSON.stringify({ decision: 'allow' }) })
      expect(answered.status).toBe(200)
      const row = await until(async () => {
        const list = (await (await fetch(`${base}/api/sessions`, { headers })).json()) as { sessions: { id: string; turns: number; lastReason: string | null }[] }
        const found = list.sessions.find((s) => s.id === id)
        return found?.lastReason === 'completed' ? found : undefined
      })
      expect(row.turns).toBe(1)
      expect(readFileSync(join(home, 'note.txt'), 'utf8')).toBe('approved')
      const store = new PostgresStore({ connectionString: db.url, schema: 'cmd' })
      try {
        // The worker releases it after its idle grace: then no one holds it (serve never did).
        await until(async () => ((await store.sessionStates([id])).length === 0 ? true : undefined))
      } finally {
        await store.close()
      }
    } finally {
      server.kill('SIGTERM')
      worker.kill('SIGTERM')
    }
    // Both waits start now: a process that exits while the other is awaited must not be missed.
    const [served, worked] = await Promise.all([finished(server), finished(worker)])
    expect(served.code, served.stderr).toBe(0)
    expect(worked.code, worked.stderr).toBe(0)
    expect(worked.stdout).toContain('"type":"claimed"')
  }, 90_000)

  it('refuses the flags that choose how sessions run (the workers decide): usage error, exit 2', async () => {
    const home = tempHome()
    const run = await runCli(['serve', '--store', `${db.url}?schema=cmd`, '--port', '0', '--yes', '--model', 'x'], { env: cliEnv(home) })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('--model, --yes')
    expect(run.stderr).toContain('ledgerloop worker')
  })
})
