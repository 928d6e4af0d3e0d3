// `ledgerloop rewind ID --to-turn N` through the real CLI (issue 29): three scripted turns change a workspace
// (write_file, a bash `sed -i`, a file created by bash and one deleted by it); the rewind restores the exact
// bytes of the state after turn 1, deletes what was created later, and continues from a fork of one turn. A
// file changed by hand is a conflict left as it is (exit 1) until `--force`; a repeated rewind changes nothing.
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

const BINARY = Buffer.from([0, 1, 2, 250, 251, 252, 10, 13, 0])

/** The workspace as sha256 per file name. */
function snapshot(root: string): Record<string, string> {
  return Object.fromEntries(readdirSync(root).sort().map((name) => [name, createHash('sha256').update(readFileSync(join(root, name))).digest('hex')]))
}

interface RewindJson {
  readonly sessionId: string
  readonly restored: string[]
  readonly deleted: string[]
  readonly conflicts: { path: string; reason: string }[]
}

it('rewind --to-turn 1: exact bytes back, created files deleted, a fork of one turn; a hand edit is a conflict until --force; again changes nothing', async () => {
  const home = tempHome()
  const env = cliEnv(home)
  const root = join(home, 'work')
  mkdirSync(root)
  writeFileSync(join(root, 'a.txt'), 'alpha\n')
  writeFileSync(join(root, 'b.txt'), 'bravo\n')
  writeFileSync(join(root, 'c.bin'), BINARY)
  const turn = async (name: string, steps: unknown[], continued: boolean): Promise<void> => {
    const script = join(home, `${name}.json`)
    writeFileSync(script, JSON.stringify(steps))
    const run = await runCli(['run', ...(continued ? ['-c'] : []), '--script', script, '--root', root, '--yes', '--sandbox', 'off', name], { env })
    expect(run.code, run.stderr).toBe(0)
  }
  await turn('one', [{ toolCalls: [{ name: 'write_file', arguments: { path: 'a.txt', content: 'one\n' } }] }, { text: 'wrote a' }], false)
  const afterTurn1 = snapshot(root)
  await turn('two', [{ toolCalls: [{ name: 'bash', arguments: { command: "sed -i 's/bravo/BRAVO/' b.txt && rm c.bin && printf 'new\\n' > d.txt" } }] }, { text: 'edited b' }], true)
  await turn('three', [{ toolCalls: [{ name: 'edit_file', arguments: { path: 'a.txt', oldText: 'one', newText: 'three' } }] }, { text: 'edited a' }], true)
  expect(readFileSync(join(root, 'b.txt'), 'utf8')).toBe('BRAVO\n')
  expect(existsSync(join(root, 'c.bin'))).toBe(false)
  expect(existsSync(join(root, 'd.txt'))).toBe(true)

  const store = new JsonlStore({ dir: join(home, 'sessions') })
  const [session] = await store.list()
  const id = session?.id as string
  expect((await store.read(id)).events.filter((e) => e.type === 'turn/end')).toHaveLength(3)

  // By hand, after the agent's last change: a conflict, left as it is; everything else is restored.
  writeFileSync(join(root, 'a.txt'), 'by hand\n')
  const rewind = (...flags: string[]) => runCli(['rewind', id.slice(0, 8), '--to-turn', '1', ...flags], { env })
  const first = await rewind('--json')
  expect(first.code).toBe(1)
  const conflicted = JSON.parse(first.stdout) as RewindJson
  expect(conflicted.conflicts.map((c) => c.path)).toEqual(['a.txt'])
  expect(conflicted.restored.sort()).toEqual(['b.txt', 'c.bin'])
  expect(conflicted.deleted).toEqual(['d.txt'])
  expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('by hand\n')

  // --force restores it too: the exact state after turn 1.
  const forced = await rewind('--force', '--json')
  expect(forced.code).toBe(0)
  const result = JSON.parse(forced.stdout) as RewindJson
  expect(result.conflicts).toEqual([])
  expect(result.restored).toContain('a.txt')
  expect(snapshot(root)).toEqual(afterTurn1)
  expect(result.sessionId).not.toBe(id)
  const fork = (await store.read(result.sessionId)).events
  expect(fork.filter((e) => e.type === 'turn/end')).toHaveLength(1)
  expect(fork.filter((e) => e.type === 'checkpoint/restored')).toHaveLength(1)
  // The original session got no new conversation events.
  expect((await store.read(id)).events.filter((e) => e.type === 'turn/end')).toHaveLength(3)

  // Again: nothing restored, nothing deleted, no conflicts, and the human report says so.
  const again = await rewind()
  expect(again.code).toBe(0)
  expect(again.stdout).toMatch(/^continue in session [0-9a-f-]{36} \(forked from [0-9a-f-]{36}\)\n {2}no file needed restoring\n$/)
  expect(snapshot(root)).toEqual(afterTurn1)

  // --files-only keeps the conversation (no fork); --conversation-only leaves the files; both at once is a usage error.
  writeFileSync(join(root, 'd.txt'), 'made by hand\n')
  const conversationOnly = JSON.parse((await rewind('--conversation-only', '--json')).stdout) as RewindJson
  expect(conversationOnly.sessionId).not.toBe(id)
  expect(readFileSync(join(root, 'd.txt'), 'utf8')).toBe('made by hand\n')
  const filesOnly = JSON.parse((await rewind('--files-only', '--json')).stdout) as RewindJson
  expect(filesOnly.sessionId).toBe(id)
  const both = await rewind('--files-only', '--conversation-only')
  expect(both.code).toBe(2)
  expect(both.stderr).toMatch(/--files-only and --conversation-only exclude each other/)
  await store.close()
}, 90_000)
