import { spawn } from 'node:child_process'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/session/events.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { CLI, cliEnv, ensureBuilt, finished, runCli, sessionFiles, startCli, tempHome, waitForOutput } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

async function onlySession(home: string): Promise<{ id: string; events: SessionEvent[] }> {
  const files = sessionFiles(home)
  expect(files).toHaveLength(1)
  const id = (files[0] as string).replace('.jsonl', '')
  return { id, events: (await new JsonlStore({ dir: join(home, 'sessions') }).read(id)).events }
}

it('ISSUE-11 defect 5: `run … | head -1` ends the turn as a cancel: exit 141, a valid log ending in turn/end, no stale lock', async () => {
  const home = tempHome()
  const script = join(home, 'slow.json')
  // A long answer streamed slowly: head has long gone when most of it arrives.
  writeFileSync(script, JSON.stringify([{ text: Array.from({ length: 40 }, (_, i) => `line ${i}\n`), delayMs: 25 }]))
  const child = spawn('bash', ['-c', `set -o pipefail; "${process.execPath}" "${CLI}" run --script "${script}" --root "${home}" "talk a lot" | head -1; echo "status=$?" >&2`], {
    env: cliEnv(home),
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  await new Promise((resolve) => child.on('close', resolve))
  expect(stdout.split('\n').filter((l) => l !== '')).toHaveLength(1)
  expect(stderr).not.toContain('EPIPE')
  expect(stderr).not.toContain('unexpected failure')
  expect(stderr).toContain('status=141')
  const { id, events } = await onlySession(home)
  const last = events[events.length - 1] as SessionEvent
  expect(last).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'aborted', reason: { kind: 'hook', reason: 'stdout closed' } } } })
  expect(readdirSync(join(home, 'sessions')).filter((n) => n.endsWith('.lock'))).toEqual([])
  const verify = await runCli(['verify', id], { env: cliEnv(home) })
  expect(verify.stdout).toContain('ok')
  expect(verify.code).toBe(0)
}, 60_000)

it('ISSUE-11 defect 6: SIGTERM closes the turn, flushes, releases the lock and exits 143', async () => {
  const home = tempHome()
  const script = join(home, 'hang.json')
  writeFileSync(script, JSON.stringify([{ hang: true }]))
  const child = startCli(['run', '--script', script, '--root', home, '--json', 'wait for it'], { env: cliEnv(home) })
  await waitForOutput(child, '"type":"request/context"')
  child.kill('SIGTERM')
  const run = await finished(child)
  expect(run.code).toBe(143)
  const { id, events } = await onlySession(home)
  const last = events[events.length - 1] as SessionEvent
  expect(last).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'aborted', reason: { kind: 'hook', reason: 'SIGTERM' } } } })
  expect(existsSync(join(home, 'sessions', `${id}.lock`))).toBe(false)
  const verify = await runCli(['verify', id], { env: cliEnv(home) })
  expect(verify.code).toBe(0)
}, 60_000)
