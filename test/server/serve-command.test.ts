import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, finished, REPO, runCli, startCli, tempHome, waitForOutput } from '../cli/cli-process.js'

// `ledgerloop serve` as users start it: the built CLI (dist/), a scripted model, a JSONL store in LEDGERLOOP_HOME.
let home: string
let root: string

beforeAll(() => {
  ensureBuilt()
  home = tempHome()
  root = mkdtempSync(join(tmpdir(), 'll-serve-root-'))
}, 180_000)
afterAll(() => {
  rmSync(home, { recursive: true, force: true })
  rmSync(root, { recursive: true, force: true })
})

describe('ledgerloop serve (built package)', () => {
  it('prints the page URL with a random token once, serves the page and its libraries from dist/, runs a session, and stops on SIGTERM', async () => {
    const child = startCli(['serve', '--port', '0', '--script', join(REPO, 'examples/scripts/demo.json'), '--root', root, '--yes'], { env: cliEnv(home) })
    try {
      await waitForOutput(child, 'open http')
      const url = new URL(/open (\S+)/.exec(child.out.stdout)?.[1] ?? '')
      const token = url.searchParams.get('token') ?? ''
      expect(token.length).toBeGreaterThanOrEqual(24)
      expect(child.out.stdout.split(token).length - 1).toBe(1) // printed once
      const base = url.origin
      const page = await fetch(`${base}/`)
      expect(page.status).toBe(200)
      expect(await page.text()).toContain('/assets/app.js')
      for (const asset of ['/assets/app.js', '/assets/style.css', '/assets/vendor/preact.mjs', '/assets/vendor/preact-hooks.mjs', '/assets/vendor/htm.mjs', '/assets/vendor/eventsource-parser.js']) {
        expect((await fetch(`${base}${asset}`)).status, asset).toBe(200)
      }
      expect((await fetch(`${base}/api/sessions`)).status).toBe(401)
      const auth = { authorization: `Bearer ${token}` }
      const created = await fetch(`${base}/api/sessions`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' })
      expect(created.status).toBe(201)
      const { id } = (await created.json()) as { id: string }
      await fetch(`${base}/api/sessions/${id}/followup`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ text: 'Take notes' }) })
      const deadline = Date.now() + 15_000
      let row: { turns: number; lastReason: string | null } | undefined
      while (Date.now() < deadline) {
        const list = (await (await fetch(`${base}/api/sessions`, { headers: auth })).json()) as { sessions: { id: string; turns: number; lastReason: string | null }[] }
        row = list.sessions.find((s) => s.id === id)
        if (row !== undefined && row.turns === 1) break
        await new Promise((r) => setTimeout(r, 100))
      }
      expect(row).toMatchObject({ turns: 1, lastReason: 'completed' })
      expect(readdirSync(join(home, 'sessions'))).toContain(`${id}.jsonl`)
    } finally {
      child.kill('SIGTERM')
    }
    const run = await finished(child)
    expect(run.code).toBe(0)
  })

  it('refuses a token-less server on a non-loopback host and a malformed origin (exit 2)', async () => {
    const open = await runCli(['serve', '--unsafe-no-token', '--host', '0.0.0.0', '--script', join(REPO, 'examples/scripts/demo.json')], { env: cliEnv(home) })
    expect(open.code).toBe(2)
    expect(open.stderr).toMatch(/loopback/)
    const origin = await runCli(['serve', '--allow-origin', 'not a url', '--script', join(REPO, 'examples/scripts/demo.json')], { env: cliEnv(home) })
    expect(origin.code).toBe(2)
  })
})
