import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import type { SessionEvent } from '../../src/session/events.js'
import { cliEnv, ensureBuilt, finished, sessionFiles, startCli, tempHome, waitForOutput } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

it('Ctrl-C during a hanging model step exits 130 and the log ends with turn/end {aborted, reason {kind: user}}', async () => {
  const home = tempHome()
  const script = join(home, 'hang.json')
  writeFileSync(script, JSON.stringify([{ hang: true }]))
  const child = startCli(['run', '--script', script, '--json', 'wait for it'], { env: cliEnv(home) })
  // request/context is the last event before the model is called: from here on the step hangs.
  await waitForOutput(child, '"type":"request/context"')
  await new Promise((r) => setTimeout(r, 100))
  child.kill('SIGINT')
  const run = await finished(child)
  expect(run.code).toBe(130)
  const [file] = sessionFiles(home)
  const stored = await new JsonlStore({ dir: join(home, 'sessions') }).read((file as string).replace('.jsonl', ''))
  const last = stored.events[stored.events.length - 1] as SessionEvent
  expect(last).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: { kind: 'aborted', reason: { kind: 'user' } } } })
  expect(stored.events.map((e) => e.type)).toContain('step/end')

  const verify = await finished(Object.assign(startCli(['verify', stored.header.id], { env: cliEnv(home) })))
  expect(verify.code).toBe(0)
  const replay = await finished(startCli(['replay', stored.header.id], { env: cliEnv(home) }))
  expect(replay.stdout).toContain('each matches the original')
  expect(replay.code).toBe(0)
})
