import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import type { Message, ToolResultBlock } from '../../src/llm/types.js'
import { foldSession } from '../../src/session/fold.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { loggedRequests } from '../../src/views/request-reconstruction.js'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

it('chat over a stdin pipe: two turns, a permission prompt answered "no", and the model receives the denial as a tool error', async () => {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  const script = join(home, 'chat.json')
  writeFileSync(
    script,
    JSON.stringify([
      { text: "I'll save that.", toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'hi' } }] },
      { text: 'Understood, I did not write it.' },
      { text: "You're welcome." },
    ]),
  )
  // Typed ahead in one go: the answer "no" must reach the permission question, "thanks" the second turn.
  const run = await runCli(['chat', '--script', script, '--root', root], { env: cliEnv(home), input: 'please write a.txt\nno\nthanks\n/exit\n' })
  expect(run.stderr).toBe('')
  expect(run.code).toBe(0)
  expect(run.stdout).toContain('Allow write_file a.txt? [y]es / [n]o / [a]lways for this session: ')
  expect(run.stdout).toContain('→ denied')
  expect(run.stdout).toMatch(/⊘ write_file a\.txt \(\d+ ms\) → the user declined write_file/)
  expect(run.stdout).toContain('Understood, I did not write it.')
  expect(run.stdout).toContain("You're welcome.")
  expect(run.stdout.match(/── completed/g)).toHaveLength(2)
  expect(existsSync(join(root, 'a.txt'))).toBe(false)

  const [file] = sessionFiles(home)
  const stored = await new JsonlStore({ dir: join(home, 'sessions') }).read((file as string).replace('.jsonl', ''))
  const events = stored.events
  expect(events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: unknown }).reason)).toEqual([{ kind: 'completed' }, { kind: 'completed' }])
  expect(events.find((e) => e.type === 'permission/decision')?.data).toMatchObject({ tool: 'write_file', decision: 'deny', by: 'user', answer: 'no' })

  // The request after the denial, rebuilt from the log: its last message is the denial as a tool error.
  const requests = loggedRequests(events)
  expect(requests.map((r) => [r.turn, r.step])).toEqual([
    [1, 1],
    [1, 2],
    [2, 1],
  ])
  const next = foldSession(events.slice(0, (requests[1] as { firstSeq: number }).firstSeq)).messages
  const last = next[next.length - 1] as Message
  const block = last.content[0] as ToolResultBlock
  expect(block).toMatchObject({ type: 'tool-result', isError: true })
  expect(JSON.stringify(block.content)).toContain('the user declined write_file')
  // The second turn's request carries the whole conversation, the second prompt last.
  const turn2 = foldSession(events.slice(0, (requests[2] as { firstSeq: number }).firstSeq)).messages
  expect(JSON.stringify(turn2[turn2.length - 1]?.content)).toContain('thanks')

  const verify = await runCli(['verify', stored.header.id], { env: cliEnv(home) })
  expect(verify.code).toBe(0)
})

it('chat: multi-line input, /model, /fork and /sessions', async () => {
  const home = tempHome()
  const script = join(home, 'chat.json')
  writeFileSync(script, JSON.stringify([{ text: 'one' }, { text: 'two' }]))
  const input = ['"""', 'line a', 'line b', '"""', '/model other-model', '/fork', 'cont\\', 'inued', '/sessions', '/exit', ''].join('\n')
  const run = await runCli(['chat', '--script', script, '--yes'], { env: cliEnv(home), input })
  expect(run.code).toBe(0)
  expect(run.stdout).toContain('model: other-model')
  expect(run.stdout).toMatch(/forked [0-9a-f-]{36} → [0-9a-f-]{36}; you are now in the fork/)
  const files = sessionFiles(home)
  expect(files).toHaveLength(2)
  const store = new JsonlStore({ dir: join(home, 'sessions') })
  const logs = await Promise.all(files.map((f) => store.read(f.replace('.jsonl', ''))))
  const child = logs.find((l) => l.header.parentSession !== undefined)
  const parent = logs.find((l) => l.header.parentSession === undefined)
  const prompts = (child?.events ?? []).filter((e) => e.type === 'user/message').map((e) => JSON.stringify(e.data))
  expect(prompts[0]).toContain('line a\\nline b')
  expect(prompts[1]).toContain('cont\\ninued')
  // The fork got the second turn, with the switched model; the parent kept only the first.
  expect((parent?.events ?? []).filter((e) => e.type === 'turn/end')).toHaveLength(1)
  const headers = (child?.events ?? []).filter((e) => e.type === 'request/header').map((e) => (e.data as { header: { config: { model: string } } }).header.config.model)
  expect(headers[headers.length - 1]).toBe('other-model')
  expect(run.stdout).toContain(child?.header.id as string)
})

it('chat: /sessions shows the 20 newest and says how many there are in all', async () => {
  const home = tempHome()
  // 24 stored sessions made through the library (fast), then one chat session on top: 25 in all.
  const store = new JsonlStore({ dir: join(home, 'sessions') })
  for (let i = 0; i < 24; i++) await (await store.create({ version: 1, id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, createdAt: Date.now() })).close()
  await store.close()
  const script = join(home, 'chat.json')
  writeFileSync(script, JSON.stringify([{ text: 'one' }]))
  const run = await runCli(['chat', '--script', script, '--yes'], { env: cliEnv(home), input: 'hello\n/sessions\n/exit\n' })
  expect(run.code).toBe(0)
  expect(run.stdout).toContain('showing 20 of 25; ledgerloop sessions --all lists every one')
  expect(run.stdout.match(/00000000-0000-4000-8000-0000000000\d\d/g)?.length).toBe(19)
})
