import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { createHarness, defineTool, invariantPlugin, JsonlStore, scriptedAdapter, subagentTool, type GenerateOptions, type ScriptStep } from '../../src/index.js'
import { z } from 'zod'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

const lastIsToolResult = (request: GenerateOptions): boolean => request.messages[request.messages.length - 1]?.content[0]?.type === 'tool-result'
const isChild = (request: GenerateOptions): boolean => (request.system ?? '').includes('You are a sub-agent')

interface ToolJson {
  callId: string
  name: string
  subagent?: { session: string; profile?: string; tree: TreeJson }
}
interface TreeJson {
  id: string
  parent?: { session: string; callId: string; profile?: string; depth?: number }
  subagents: { session: string; callId: string; profile?: string }[]
  subagentUsage: { inputTokens: number; outputTokens: number }
  turns: { usage: { input: number; output: number }; steps: { tools: ToolJson[] }[] }[]
}

// A parent whose one call started two children (one of which started a grandchild), stored where the CLI looks.
describe('sub-agents in inspect and sessions (issue 17)', () => {
  const home = tempHome()
  const env = cliEnv(home)

  beforeAll(async () => {
    const model = scriptedAdapter({
      script: (request: GenerateOptions): ScriptStep => {
        const task = isChild(request) ? (request.messages[0]?.content[0] as { text: string }).text : undefined
        const usage = { inputTokens: 100, outputTokens: 10 }
        if (lastIsToolResult(request)) return { text: `${task ?? 'parent'} done`, usage }
        if (task === undefined) return { toolCalls: [{ id: 'c-a', name: 'task', arguments: { task: 'a' } }, { id: 'c-b', name: 'task', arguments: { task: 'b', agent: 'scout' } }], usage }
        if (task === 'a') return { toolCalls: [{ id: 'c-a1', name: 'task', arguments: { task: 'a1' } }], usage }
        return { toolCalls: [{ id: `n-${task}`, name: 'note', arguments: { text: task } }], usage }
      },
    })
    const note = defineTool({ name: 'note', description: 'Notes', parameters: z.object({ text: z.string() }), concurrencySafe: true, execute: () => 'noted' })
    const harness = createHarness({
      store: new JsonlStore({ dir: join(home, 'sessions') }),
      adapters: [model],
      tools: [subagentTool({ agents: { scout: { tools: ['note'] } } }), note],
      plugins: [invariantPlugin()],
    })
    const parent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: 'parent-session' })
    parent.followup('split it')
    await parent.whenIdle()
    await harness.close()
  }, 30_000)

  it('inspect --json of the parent nests each child tree under the call that started it, with a separate usage roll-up', async () => {
    const run = await runCli(['inspect', 'parent-session', '--json'], { env })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    const tree = JSON.parse(run.stdout) as TreeJson
    expect(tree.subagents.map((s) => [s.callId, s.profile])).toEqual([
      ['c-a', 'default'],
      ['c-b', 'scout'],
    ])
    const tools = tree.turns[0]?.steps[0]?.tools ?? []
    expect(tools.map((t) => [t.callId, t.subagent?.profile])).toEqual([
      ['c-a', 'default'],
      ['c-b', 'scout'],
    ])
    const a = tools[0]?.subagent?.tree as TreeJson
    expect(a.parent).toEqual({ session: 'parent-session', callId: 'c-a', profile: 'default', depth: 1 })
    // The grandchild sits under child a's own call.
    const a1 = a.turns[0]?.steps[0]?.tools[0]?.subagent?.tree as TreeJson
    expect(a1.parent).toMatchObject({ callId: 'c-a1', depth: 2 })
    expect(a1.turns[0]?.steps.flatMap((s) => s.tools.map((t) => t.name))).toEqual(['note'])
    const b = tools[1]?.subagent?.tree as TreeJson
    expect(b.turns[0]?.steps.flatMap((s) => s.tools.map((t) => t.name))).toEqual(['note'])
    // Each session made 2 requests of 100 in / 10 out; the parent's own figure stays its own.
    expect(tree.turns[0]?.usage).toMatchObject({ input: 200, output: 20 })
    expect(tree.subagentUsage).toEqual({ inputTokens: 600, outputTokens: 60 })
    expect(a.subagentUsage).toEqual({ inputTokens: 200, outputTokens: 20 })

    const human = await runCli(['inspect', 'parent-session'], { env })
    expect(human.code).toBe(0)
    expect(human.stdout).toContain('sub-agents: 2 direct · tokens of all sub-agents 600 in · 60 out')
    expect(human.stdout).toMatch(/\n {4}tool task .*\n {6}session \S+ · .*sub-agent of parent-session \(call c-a, profile default\)/)
  })

  it('sessions marks children and --roots hides them', async () => {
    const all = JSON.parse((await runCli(['sessions', '--json'], { env })).stdout) as { id: string; parentCallId?: string; agentProfile?: string }[]
    expect(all).toHaveLength(4)
    expect(all.filter((r) => r.parentCallId !== undefined).map((r) => r.parentCallId).sort()).toEqual(['c-a', 'c-a1', 'c-b'])
    const roots = JSON.parse((await runCli(['sessions', '--json', '--roots'], { env })).stdout) as { id: string }[]
    expect(roots.map((r) => r.id)).toEqual(['parent-session'])
    const table = (await runCli(['sessions'], { env })).stdout
    expect(table.match(/↳ sub-agent of parent-s/g)).toHaveLength(2)
  })
})
