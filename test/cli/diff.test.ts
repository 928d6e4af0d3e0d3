import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createHarness } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { defineTool } from '../../src/tools/define-tool.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 180_000)

const tools = [
  defineTool({ name: 'read', description: 'Reads', parameters: z.object({ path: z.string() }), execute: ({ path }) => `contents of ${path}` }),
  defineTool({ name: 'write', description: 'Writes', parameters: z.object({ path: z.string() }), execute: () => 'ok' }),
]

/** Records a session with `script` into the JSONL store under `home`; returns its id. */
async function recordInto(home: string, script: ScriptStep[]): Promise<string> {
  const harness = createHarness({ store: new JsonlStore({ dir: join(home, 'sessions') }), adapters: [scriptedAdapter({ script })], tools })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  await agent.run('do it')
  const id = agent.id
  await harness.close()
  return id
}

const BASE: ScriptStep[] = [{ toolCalls: [{ name: 'read', arguments: { path: 'a' } }, { name: 'write', arguments: { path: 'b' } }] }, { text: 'Read a, wrote b.' }]

describe('ledgerloop diff', () => {
  it('exit 0 and "same behaviour" for two sessions that did the same; a prefix is enough', async () => {
    const home = tempHome()
    const a = await recordInto(home, BASE)
    const b = await recordInto(home, BASE)
    const run = await runCli(['diff', a.slice(0, 8), b], { env: cliEnv(home) })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain(`A ${a}\nB ${b}\n`)
    expect(run.stdout).toMatch(/^turn 1 {2}same {5}A: 2 steps · 0 in · 0 out · \d+ ms {2}B: 2 steps/m)
    expect(run.stdout).toContain('same behaviour in all 1 turn')
  })

  it('exit 1 naming a reordered tool call, a changed argument and a changed end reason; --json has the documented shape', async () => {
    const home = tempHome()
    const a = await recordInto(home, BASE)
    const reordered = await recordInto(home, [{ toolCalls: [{ name: 'write', arguments: { path: 'b' } }, { name: 'read', arguments: { path: 'a' } }] }, BASE[1] as ScriptStep])
    const changed = await recordInto(home, [{ toolCalls: [{ name: 'read', arguments: { path: 'z' } }, { name: 'write', arguments: { path: 'b' } }] }, BASE[1] as ScriptStep])
    const failed = await recordInto(home, [BASE[0] as ScriptStep, { error: { code: 'SERVER', message: 'down' } }])

    const r1 = await runCli(['diff', a, reordered], { env: cliEnv(home) })
    expect(r1.code).toBe(1)
    expect(r1.stdout).toContain('- tool calls in another order: read, write in A, write, read in B')
    expect(r1.stdout).toContain('behaviour differs in 1 of 1 turns (1)')

    const r2 = await runCli(['diff', a, changed, '--json'], { env: cliEnv(home) })
    expect(r2.code).toBe(1)
    const doc = JSON.parse(r2.stdout) as { a: string; b: string; same: boolean; ignoreText: boolean; turns: { turn: number; same: boolean; differences: string[]; a: { toolCalls: unknown[]; reason: unknown; steps: number } }[] }
    expect(doc).toMatchObject({ a, b: changed, same: false, ignoreText: false })
    expect(doc.turns).toHaveLength(1)
    expect(doc.turns[0]).toMatchObject({ turn: 1, same: false, differences: ['tool call 1 (read) has other arguments: {"path":"a"} in A, {"path":"z"} in B'] })
    expect(doc.turns[0]?.a).toMatchObject({ steps: 2, reason: { kind: 'completed' }, toolCalls: [{ name: 'read', arguments: '{"path":"a"}' }, { name: 'write', arguments: '{"path":"b"}' }] })

    const r3 = await runCli(['diff', a, failed, '--ignore-text'], { env: cliEnv(home) })
    expect(r3.code).toBe(1)
    expect(r3.stdout).toMatch(/- ended completed in A, error .*SERVER.* in B/)
  })

  it('--ignore-text: a reworded answer is the same behaviour; without it, a word diff and exit 1', async () => {
    const home = tempHome()
    const a = await recordInto(home, BASE)
    const b = await recordInto(home, [BASE[0] as ScriptStep, { text: 'Read a, wrote c.' }])
    const strict = await runCli(['diff', a, b], { env: cliEnv(home) })
    expect(strict.code).toBe(1)
    expect(strict.stdout).toContain('- final text differs: Read a, wrote [-b.-] {+c.+}')
    const lenient = await runCli(['diff', a, b, '--ignore-text'], { env: cliEnv(home) })
    expect(lenient.code).toBe(0)
    expect(lenient.stdout).toContain('(text differs, ignored: Read a, wrote [-b.-] {+c.+})')
  })

  it('an unknown session is a usage error (exit 2)', async () => {
    const home = tempHome()
    const a = await recordInto(home, BASE)
    const run = await runCli(['diff', a, 'ffffffff'], { env: cliEnv(home) })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("no session 'ffffffff'")
  })
})
