import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { createHarness } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import type { UserMessage } from '../../src/llm/types.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { builtinTools } from '../../src/tools/builtin/index.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 180_000)

const ORIGINAL: ScriptStep[] = [{ toolCalls: [{ name: 'list', arguments: {} }] }, { text: 'The folder is empty.' }, { text: 'Bye.' }]

/** Records a two-turn session on the scripted route into the JSONL store under `home`. */
async function recordInto(home: string): Promise<string> {
  const harness = createHarness({ store: new JsonlStore({ dir: join(home, 'sessions') }), adapters: [scriptedAdapter({ script: ORIGINAL })], tools: builtinTools({ root: home }) })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'scripted', cwd: home })
  await agent.run('what is in the folder?')
  await agent.run('thanks')
  const id = agent.id
  await harness.close()
  return id
}

function script(home: string, name: string, steps: ScriptStep[]): string {
  const path = join(home, name)
  writeFileSync(path, JSON.stringify(steps))
  return path
}

describe('ledgerloop rerun', () => {
  it('onto another scripted model: a linked session with the same inputs, per-turn comparison, exit 1 naming the differing turn', async () => {
    const home = tempHome()
    const id = await recordInto(home)
    const other = script(home, 'other.json', [ORIGINAL[0] as ScriptStep, { text: 'The folder is empty.' }, { text: 'You are welcome!' }])
    const run = await runCli(['rerun', id.slice(0, 8), '--script', other, '--root', home], { env: cliEnv(home) })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(1)
    expect(run.stdout).toContain(`rerun ${id} on scripted/scripted (tools: recorded)`)
    expect(run.stdout).toMatch(/^turn 1 {2}same {5}A: 2 steps/m)
    expect(run.stdout).toMatch(/^turn 2 {2}differs {2}A: 1 step/m)
    expect(run.stdout).toContain('- final text differs: [-Bye.-] {+You are welcome!+}')
    const child = /new session (\S+) \(forked from (\S+)\): behaviour differs in turn 2/.exec(run.stdout)
    expect(child?.[2]).toBe(id)
    const childId = child?.[1] as string

    const events = (await new JsonlStore({ dir: join(home, 'sessions') }).read(childId)).events
    const inputs = events.filter((e) => e.type === 'user/message' && (e.data as unknown as UserMessage).source.kind === 'user').map((e) => ((e.data as unknown as UserMessage).content[0] as { text: string }).text)
    expect(inputs).toEqual(['what is in the folder?', 'thanks'])
    // The link is shown where people look.
    expect((await runCli(['inspect', childId], { env: cliEnv(home) })).stdout).toContain(`rerun of ${id}`)
    expect((await runCli(['sessions'], { env: cliEnv(home) })).stdout).toMatch(new RegExp(`^${childId} .*↳ rerun of ${id.slice(0, 8)} what is in the folder\\?$`, 'm'))
    expect(JSON.parse((await runCli(['sessions', '--json'], { env: cliEnv(home) })).stdout)).toContainEqual(expect.objectContaining({ id: childId, parentSession: id, forkedFrom: id }))
  }, 60_000)

  it('exit 0 for the same behaviour; --json prints the RerunReport; --all ends with a table', async () => {
    const home = tempHome()
    const id = await recordInto(home)
    const same = script(home, 'same.json', ORIGINAL)
    const json = await runCli(['rerun', id, '--script', same, '--root', home, '--json'], { env: cliEnv(home) })
    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout) as { sessionId: string; forkedFrom: string; fromTurn: number; comparison: { same: boolean; turns: { turn: number; same: boolean }[] } }
    expect(report).toMatchObject({ forkedFrom: id, fromTurn: 1, comparison: { same: true } })
    expect(report.comparison.turns.map((t) => [t.turn, t.same])).toEqual([[1, true], [2, true]])

    // From turn 2 the model is asked only turn 2's question.
    const turn2 = script(home, 'turn2.json', [{ text: 'Bye.' }])
    const all = await runCli(['rerun', '--all', '--script', turn2, '--root', home, '--from-turn', '2'], { env: cliEnv(home) })
    expect(all.code).toBe(0)
    // Only the original is picked: the fork the first rerun made is not rerun again.
    expect(all.stdout.match(/^rerun /gm)).toHaveLength(1)
    expect(all.stdout).toMatch(/^session {3}same turns {2}first divergence {2}tokens, cost before → after {2}rerun$/m)
    expect(all.stdout).toMatch(new RegExp(`^${id.slice(0, 8)} {2}1/1 {9}— `, 'm'))
    expect(all.stdout).toContain('all 1 behaved the same')
  }, 60_000)

  it('a session whose tool root is gone (the demo\'s scratch folder) reruns with recorded tools; live tools say what to pass', async () => {
    const home = tempHome()
    const root = join(home, 'scratch')
    mkdirSync(root)
    const harness = createHarness({ store: new JsonlStore({ dir: join(home, 'sessions') }), adapters: [scriptedAdapter({ script: ORIGINAL })], tools: builtinTools({ root }) })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'scripted', cwd: root })
    await agent.run('what is in the folder?')
    await agent.run('thanks')
    const id = agent.id
    await harness.close()
    rmSync(root, { recursive: true })
    const same = script(home, 'same.json', ORIGINAL)
    const recorded = await runCli(['rerun', id, '--script', same], { env: cliEnv(home) })
    expect(recorded.stderr).toBe('')
    expect(recorded.code).toBe(0)
    expect(recorded.stdout).toMatch(/same behaviour/)
    expect(existsSync(root)).toBe(false)
    const live = await runCli(['rerun', id, '--script', same, '--tools', 'live'], { env: cliEnv(home) })
    expect(live.code).toBe(2)
    expect(live.stderr).toContain(`the session's tool root ${root} does not exist: pass --root DIR for live tools, or rerun with --tools recorded`)
  }, 60_000)

  it('usage errors: no id and no --all, both, --search without --all, a bad --tools, a turn that is not there, a missing --system file', async () => {
    const home = tempHome()
    const id = await recordInto(home)
    const env = cliEnv(home)
    for (const args of [['rerun'], ['rerun', id, '--all'], ['rerun', id, '--search', 'x'], ['rerun', id, '--tools', 'maybe'], ['rerun', id, '--from-turn', '7', '--script', script(home, 's.json', ORIGINAL)], ['rerun', id, '--system', join(home, 'missing.md')]]) {
      const run = await runCli(args, { env })
      expect({ args, code: run.code }).toEqual({ args, code: 2 })
    }
  }, 60_000)
})
