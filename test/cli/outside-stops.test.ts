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

it('ISSUE-11 defect 6 / issue 24 item 6: SIGTERM drains — past the grace the turn is cut off (aborted disposed), flushed, unlocked, exit 143; the next run -c continues it', async () => {
  const home = tempHome()
  const script = join(home, 'hang.json')
  writeFileSync(script, JSON.stringify([{ hang: true }]))
  const child = startCli(['run', '--script', script, '--root', home, '--json', '--shutdown-grace-ms', '300', 'wait for it'], { env: cliEnv(home) })
  await waitForOutput(child, '"type":"request/context"')
  const killedAt = Date.now()
  child.kill('SIGTERM')
  const run = await finished(child)
  expect(run.code).toBe(143)
  expect(Date.now() - killedAt).toBeGreaterThanOrEqual(300)
  const { id, events } = await onlySession(home)
  const last = events[events.length - 1] as SessionEvent
  expect(last).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'aborted', reason: { kind: 'disposed' } } } })
  expect(existsSync(join(home, 'sessions', `${id}.lock`))).toBe(false)
  const verify = await runCli(['verify', id], { env: cliEnv(home) })
  expect(verify.code).toBe(0)
  // A clean shutdown loses no more than a crash: the next resume carries the cut-off turn on.
  const answer = join(home, 'answer.json')
  writeFileSync(answer, JSON.stringify([{ text: 'done waiting' }, { text: 'and the next one' }]))
  const resumed = await runCli(['run', '-c', '--script', answer, '--root', home, 'next'], { env: cliEnv(home) })
  expect(resumed.code, resumed.stderr).toBe(0)
  expect(resumed.stderr).toContain('continuing it as turn 2')
  const after = (await onlySession(home)).events
  expect(after.filter((e) => e.type === 'turn/start').map((e) => e.data)).toEqual([{ turn: 1 }, { turn: 2, continues: 1 }, { turn: 3 }])
}, 60_000)

it('issue 24 item 6: SIGTERM during a turn that finishes within the grace: the turn completes and run exits with its own code (0)', async () => {
  const home = tempHome()
  const script = join(home, 'slow.json')
  // About a second of streaming: well inside the default 10 s grace.
  writeFileSync(script, JSON.stringify([{ text: Array.from({ length: 20 }, (_, i) => `part ${i} `), delayMs: 50 }]))
  const child = startCli(['run', '--script', script, '--root', home, '--json', 'take your time'], { env: cliEnv(home) })
  await waitForOutput(child, '"type":"request/context"')
  child.kill('SIGTERM')
  const run = await finished(child)
  expect(run.code, run.stderr).toBe(0)
  const { events } = await onlySession(home)
  expect((events[events.length - 1] as SessionEvent).data).toEqual({ turn: 1, reason: { kind: 'completed' } })
}, 60_000)
