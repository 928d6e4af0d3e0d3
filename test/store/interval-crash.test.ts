import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { closerEvents, createHarness, scriptedAdapter, verifySessionLog } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { bundleTestChild, prng } from '../support/child-process-kit.js'

const here = dirname(fileURLToPath(import.meta.url))
const root = mkdtempSync(join(tmpdir(), 'll-interval-crash-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** Starts a child, lets it work for `ms`, then SIGKILLs it. Resolves with what it printed. */
async function killAfter(script: string, dir: string, seed: number, ms: number): Promise<string> {
  const child = spawn(process.execPath, [script, dir, String(seed)], { stdio: ['pipe', 'pipe', 'pipe'] })
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await new Promise<void>((resolve, reject) => {
    const check = (): void => {
      if (out.includes('READY')) resolve()
      else if (child.exitCode !== null) reject(new Error(`child exited early: ${out}`))
    }
    child.stdout.on('data', check)
    child.once('exit', check)
  })
  child.stdin.write('go\n')
  await new Promise((resolve) => setTimeout(resolve, ms))
  child.kill('SIGKILL')
  await exited
  return out
}

it("fsync: 'interval': a process SIGKILLed mid-turn leaves logs that load, repair, verify and resume", async () => {
  const script = await bundleTestChild(join(here, 'interval-crash-child.ts'), root)
  const dir = join(root, 'sessions')
  const random = prng(20261201)
  const kills = 10
  let events = 0
  let repaired = 0
  for (let kill = 0; kill < kills; kill++) {
    const out = await killAfter(script, dir, kill + 1, 30 + Math.floor(random() * 300))
    expect(out).not.toContain('ERROR')
    const store = new JsonlStore({ dir })
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.jsonl') && !n.startsWith('.'))) {
      // Loading never fails: at most a torn last line is cut off (a crash may lose the last interval only).
      const stored = await store.read(name.slice(0, -'.jsonl'.length))
      const closers = closerEvents(stored.events)
      if (closers.length > 0) repaired++
      const verdict = verifySessionLog([...stored.events, ...closers])
      expect(verdict.problems).toEqual([])
      events += stored.events.length
    }
    // The session index answers, whatever the kill cut.
    expect((await store.list()).length).toBeGreaterThan(0)
    await store.close()
  }
  expect(events).toBeGreaterThan(50)
  expect(repaired).toBeGreaterThan(0)
  // Every killed session resumes and completes another turn.
  const store = new JsonlStore({ dir, fsync: 'interval' })
  const harness = createHarness({ store, adapters: [scriptedAdapter({ script: () => ({ text: ['resumed'] }) })] })
  for (const summary of await store.list()) {
    const agent = await harness.resumeAgent(summary.id, { provider: 'scripted', model: 'm' })
    agent.followup('again')
    await agent.whenIdle()
    expect(verifySessionLog(agent.session.events).problems).toEqual([])
  }
  await harness.close()
  expect(verifySessionLog((await new JsonlStore({ dir }).read('s0')).events).ok).toBe(true)
}, 300_000)
