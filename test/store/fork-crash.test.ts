// A fork killed at a random moment (SIGKILL) leaves no half-fork that looks complete: every child a store shows
// reads back whole (the parent's prefix and its end-seed) and verifies, and every child the killed process
// reported is there. Real processes, real files, real SQLite; the copying fork path (SessionStore.copyPrefix).
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createHarness, scriptedAdapter, verifySessionLog, type SessionStore } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { bundleSqliteChild } from '../support/child-process-kit.js'

let root: string
let script: string
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'll-fork-crash-'))
  script = await bundleSqliteChild(join(dirname(fileURLToPath(import.meta.url)), 'fork-crash-child.ts'), root)
}, 60_000)
afterAll(() => rmSync(root, { recursive: true, force: true }))

const openStore = (kind: string, dir: string): SessionStore => (kind === 'jsonl' ? new JsonlStore({ dir: join(dir, 'sessions') }) : new SqliteStore({ path: join(dir, 'sessions.db') }))

/** Runs the child until `delayMs` after it is ready, kills it, and returns the children it reported. */
async function forkUntilKilled(kind: string, dir: string, prefix: string, delayMs: number): Promise<string[]> {
  const child = spawn(process.execPath, [script, kind, dir, prefix], { stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()))
  await new Promise<void>((resolve) => {
    child.stdout?.setEncoding('utf8').on('data', (text: string) => {
      out += text
      if (out.startsWith('READY\n')) resolve()
    })
    child.on('exit', () => resolve())
  })
  await new Promise((resolve) => setTimeout(resolve, delayMs))
  child.kill('SIGKILL')
  await exited
  return out.split('\n').slice(1, -1)
}

for (const kind of ['jsonl', 'sqlite']) {
  describe(`${kind}: fork killed mid-way`, () => {
    it('8 kills at random moments: every child shown is whole and verifies, every reported child exists', async () => {
      const dir = join(root, kind)
      const turns = 12
      const step = { reasoning: Array.from({ length: 50 }, (_, i) => `r${i} `), text: Array.from({ length: 400 }, (_, i) => `w${i} `) }
      const harness = createHarness({ store: openStore(kind, dir), adapters: [scriptedAdapter({ script: Array.from({ length: turns }, () => step) })] })
      const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'parent' })
      for (let t = 0; t < turns; t++) await agent.run(`prompt ${t}`)
      const parent = [...agent.session.events]
      await harness.close()
      const reported: string[] = []
      for (let kill = 0; kill < 8; kill++) reported.push(...(await forkUntilKilled(kind, dir, `k${kill}-`, 20 + Math.floor(Math.random() * 300))))
      const store = openStore(kind, dir)
      const ids = (await store.list()).map((s) => s.id).filter((id) => id !== 'parent')
      // JSONL: a session is its `<id>.jsonl` file (a killed fork's temporary file starts with a dot, never listed).
      if (kind === 'jsonl') expect(readdirSync(join(dir, 'sessions')).filter((f) => f.endsWith('.jsonl') && !f.startsWith('.')).length).toBe(ids.length + 1)
      for (const id of reported) expect(ids).toContain(id)
      for (const id of ids) {
        const child = await store.read(id)
        expect(child.events.length).toBe(parent.length + 1)
        expect(child.events.slice(0, parent.length).map((e) => JSON.stringify(e))).toEqual(parent.map((e) => JSON.stringify(e)))
        expect(child.header).toMatchObject({ parentSession: 'parent', seedLength: parent.length })
        expect(verifySessionLog(child.events).ok).toBe(true)
      }
      expect(reported.length).toBeGreaterThan(0)
      await store.close()
    }, 240_000)
  })
}
