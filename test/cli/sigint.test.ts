import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import type { SessionEvent } from '../../src/session/events.js'
import { INTERRUPTED_MARKER } from '../../src/session/surface.js'
import { historyMessages, recordedRequests, type RecordedRequest } from '../../src/views/recorded-requests.js'
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

it('a partial answer cut off by Ctrl-C goes back to the model marked as interrupted, and replay rebuilds that request', async () => {
  const home = tempHome()
  const slow = join(home, 'slow.json')
  writeFileSync(slow, JSON.stringify([{ text: ['Hello ', 'wor', 'ld', ' and', ' more', ' words'], delayMs: 400 }]))
  const child = startCli(['run', '--script', slow, '--root', home, '--json', 'say hello'], { env: cliEnv(home) })
  // The second text delta is logged: the user has seen "Hello wor" when Ctrl-C comes.
  await waitForOutput(child, '"text":"wor"')
  child.kill('SIGINT')
  expect((await finished(child)).code).toBe(130)
  const [file] = sessionFiles(home)
  const id = (file as string).replace('.jsonl', '')
  const followup = join(home, 'after.json')
  writeFileSync(followup, JSON.stringify([{ text: 'carrying on' }]))
  const again = await finished(startCli(['run', '--script', followup, '--root', home, '--session', id, 'go on'], { env: cliEnv(home) }))
  expect(again.code).toBe(0)
  const stored = await new JsonlStore({ dir: join(home, 'sessions') }).read(id)
  const anchor = stored.events.find((e) => e.type === 'assistant/message')?.data as { interrupted?: true; message: { content: { text: string }[] } }
  expect(anchor.interrupted).toBe(true)
  expect(anchor.message.content.map((b) => b.text).join('')).toMatch(/^Hello wor/)
  // The second request's history, rebuilt from the log as verify and replay rebuild it: partial text, then the marker.
  const requests = recordedRequests(stored.events)
  expect(requests).toHaveLength(2)
  const partial = historyMessages((requests[1] as RecordedRequest).history).find((m) => m.role === 'assistant')
  expect(partial?.content.at(-1)).toEqual({ type: 'text', text: INTERRUPTED_MARKER })
  expect(partial?.content.slice(0, -1)).toEqual(anchor.message.content)
  const verify = await finished(startCli(['verify', id], { env: cliEnv(home) }))
  expect(verify.code).toBe(0)
  const replay = await finished(startCli(['replay', id], { env: cliEnv(home) }))
  expect(replay.stdout).toContain('each matches the original')
  expect(replay.code).toBe(0)
})
