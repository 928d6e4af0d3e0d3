import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import type { Message } from '../../src/llm/types.js'
import { foldSession } from '../../src/session/fold.js'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from '../cli/cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

/** A scripted turn: list the folder, then answer. */
const listTurn = (n: number) => [
  { text: `Looking (task ${n}).`, toolCalls: [{ name: 'list', arguments: {} }] },
  { text: `Task ${n} done.` },
]

describe('compaction by hand from the CLI', () => {
  it('ledgerloop compact ID summarises a stored session; verify and inspect still hold; the next turn starts from the summary', async () => {
    const home = tempHome()
    const env = cliEnv(home)
    const root = join(home, 'work')
    mkdirSync(root)
    writeFileSync(join(root, 'a.txt'), 'a')
    const turns = join(home, 'turns.json')
    writeFileSync(turns, JSON.stringify([...listTurn(1)]))
    const first = await runCli(['run', '--script', turns, '--root', root, '--yes', 'task 1'], { env })
    expect(first.code).toBe(0)
    const id = (sessionFiles(home)[0] as string).replace(/\.jsonl$/, '')
    for (const n of [2, 3]) {
      writeFileSync(turns, JSON.stringify(listTurn(n)))
      const next = await runCli(['run', '--script', turns, '--session', id, '--yes', `task ${n}`], { env })
      expect(next.code).toBe(0)
    }

    const summary = join(home, 'summary.json')
    writeFileSync(summary, JSON.stringify([{ text: 'Tasks 1-2: listed the folder twice; it holds a.txt.', usage: { inputTokens: 300, outputTokens: 20 } }]))
    const compacted = await runCli(['compact', id, '--script', summary, '--keep', '2'], { env })
    expect(compacted.stderr).toBe('')
    expect(compacted.stdout).toMatch(/^compacted: older history replaced by a summary \(~[\d,]+ → ~[\d,]+ tokens\)\n$/)
    expect(compacted.code).toBe(0)

    const verify = await runCli(['verify', id], { env })
    expect(verify.code).toBe(0)
    const inspect = await runCli(['inspect', id, '--json'], { env })
    const tree = JSON.parse(inspect.stdout) as { turns: { steps: { requests: unknown[] }[] }[]; compactions: unknown[] }
    // Six loop requests; the summary call is not one of them, but a compaction of its own.
    expect(tree.turns.flatMap((t) => t.steps.flatMap((s) => s.requests))).toHaveLength(6)
    expect(tree.compactions).toMatchObject([{ turn: null, trigger: 'manual', outcome: 'summarized', provider: 'scripted', usage: { inputTokens: 300, outputTokens: 20 } }])
    const text = await runCli(['inspect', id], { env })
    expect(text.stdout).toMatch(/\nturn 3 [^\n]*\n(  [^\n]*\n)+compaction manual · summarized · ~\d+ → ~\d+ tokens · summary scripted\/scripted 300 in · 20 out \[seq \d+–\d+\]\n$/)

    writeFileSync(turns, JSON.stringify(listTurn(4)))
    const after = await runCli(['run', '--script', turns, '--session', id, '--yes', 'task 4'], { env })
    expect(after.code).toBe(0)
    const stored = await new JsonlStore({ dir: join(home, 'sessions') }).read(id)
    const types = stored.events.map((e) => e.type)
    expect(types.filter((t) => t.startsWith('compaction/'))).toEqual(['compaction/start', 'compaction/request', 'compaction/summary', 'compaction/end'])
    const firstRequestOfTurn4 = stored.events.findIndex((e) => e.type === 'assistant/chunk' && (e.data as { turn: number }).turn === 4)
    const { messages } = foldSession(stored.events.slice(0, firstRequestOfTurn4))
    const opening = messages[0] as Message
    expect(opening.content[0]).toMatchObject({ type: 'text', text: expect.stringContaining('Tasks 1-2: listed the folder twice') })
    expect(messages.at(-1)?.content[0]).toMatchObject({ type: 'text', text: 'task 4' })
    expect((await runCli(['verify', id], { env })).code).toBe(0)
  }, 60_000)

  it('/compact in chat compacts between turns and says so', async () => {
    const home = tempHome()
    const root = join(home, 'work')
    mkdirSync(root)
    const script = join(home, 'chat.json')
    writeFileSync(script, JSON.stringify([...listTurn(1), ...listTurn(2), ...listTurn(3), { text: 'Summary: three folder listings.' }, { text: 'Still here.' }]))
    const run = await runCli(['chat', '--script', script, '--root', root, '--yes'], { env: cliEnv(home), input: '/compact\ntask 1\ntask 2\ntask 3\n/compact\nhello\n/exit\n' })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('nothing to compact yet: send a message first')
    expect(run.stdout).toMatch(/compacted: older history replaced by a summary \(~[\d,]+ → ~[\d,]+ tokens\)/)
    expect(run.stdout).toContain('Still here.')
    const id = (sessionFiles(home)[0] as string).replace(/\.jsonl$/, '')
    expect((await runCli(['verify', id], { env: cliEnv(home) })).code).toBe(0)
  }, 60_000)
})
