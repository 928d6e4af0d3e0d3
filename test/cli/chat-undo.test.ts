import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { parseUndoArgument } from '../../src/cli/commands/rewind.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { cliEnv, ensureBuilt, finished, startCli, tempHome, waitForOutput } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

it('parses what follows /undo: nothing, --force, or a usage message', () => {
  expect(parseUndoArgument('')).toEqual({ force: false })
  expect(parseUndoArgument('--force')).toEqual({ force: true })
  expect(parseUndoArgument('now')).toEqual({ usage: 'usage: /undo [--force] (got "now")' })
  expect(parseUndoArgument('--force 2')).toHaveProperty('usage')
})

it('chat: /undo leaves a file edited outside the agent as a conflict; /undo --force right after redoes it, restoring that file too', async () => {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  writeFileSync(join(root, 'a.txt'), 'alpha\n')
  writeFileSync(join(root, 'b.txt'), 'bravo\n')
  const script = join(home, 'chat.json')
  writeFileSync(
    script,
    JSON.stringify([
      { toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'one\n' } }] },
      { text: 'wrote one' },
      {
        toolCalls: [
          { name: 'write_file', arguments: { path: 'a.txt', content: 'two\n' } },
          { name: 'write_file', arguments: { path: 'b.txt', content: 'bee two\n' } },
        ],
      },
      { text: 'wrote two' },
    ]),
  )
  const chat = startCli(['chat', '--script', script, '--root', root, '--yes'], { env: cliEnv(home) })
  const say = (line: string): void => void chat.stdin?.write(`${line}\n`)
  say('first')
  await waitForOutput(chat, 'wrote one')
  say('second')
  await waitForOutput(chat, 'wrote two')
  writeFileSync(join(root, 'b.txt'), 'by hand\n')

  say('/undo now')
  await waitForOutput(chat, 'usage: /undo [--force] (got "now")')
  say('/undo')
  await waitForOutput(chat, 'type /undo --force to redo this undo restoring them too')
  expect(chat.out.stdout).toMatch(/undid turn 2: continue in session [0-9a-f-]{36} \(forked from [0-9a-f-]{36}\)/)
  expect(chat.out.stdout).toMatch(/restored {2}a\.txt/)
  expect(chat.out.stdout).toMatch(/conflict {2}b\.txt: changed outside the agent/)
  expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('one\n')
  expect(readFileSync(join(root, 'b.txt'), 'utf8')).toBe('by hand\n')

  say('/undo --force')
  await waitForOutput(chat, 'redid the undo of turn 2 with --force')
  expect(readFileSync(join(root, 'b.txt'), 'utf8')).toBe('bravo\n')
  expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('one\n')
  chat.stdin?.end('/exit\n')
  const run = await finished(chat)
  expect(run.code).toBe(0)

  // The original and two forks of it at turn 1 (the plain undo's and the forced one's); the chat ended in the latter.
  const store = new JsonlStore({ dir: join(home, 'sessions') })
  const sessions = await store.list()
  expect(sessions).toHaveLength(3)
  const last = /session ([0-9a-f-]{36}) · ledgerloop inspect/.exec(run.stdout)?.[1] as string
  const ended = await store.read(last)
  expect(ended.events.filter((e) => e.type === 'turn/end')).toHaveLength(1)
  const restored = ended.events.find((e) => e.type === 'checkpoint/restored')?.data as unknown as { restored: string[]; session: string }
  expect(restored.restored).toEqual(['b.txt'])
  expect(ended.header.parentSession).toBe(restored.session)
  await store.close()
}, 60_000)
