import { describe, expect, it } from 'vitest'
import { permissionPlugin, turnBudgetPlugin, type PermissionQuestion } from '../../src/index.js'
import { echoTool, loopFixture } from '../support/loop-fixture.js'
import { defineTool } from '../../src/index.js'
import { z } from 'zod'

const bash = (ran: string[]) =>
  defineTool({ name: 'bash', description: 'shell', parameters: z.object({ command: z.string() }), execute: ({ command }) => (ran.push(command), 'ok') })

describe('permissionPlugin', () => {
  it('rules by tool and argument pattern; deny beats allow; every decision logged', async () => {
    const ran: string[] = []
    const f = await loopFixture(
      [
        {
          toolCalls: [
            { id: 'a', name: 'bash', arguments: { command: 'git status' } },
            { id: 'b', name: 'bash', arguments: { command: 'rm -rf /' } },
            { id: 'c', name: 'bash', arguments: { command: 'make' } },
          ],
        },
        { text: 'done' },
      ],
      { tools: [bash(ran)], plugins: [permissionPlugin({ rules: { allow: ['bash: git *', 'bash: rm *'], deny: ['bash: rm *'] } })] },
    )
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(ran).toEqual(['git status'])
    const decisions = f.ofType('permission/decision').map((e) => e.data as { callId: string; decision: string; by: string; rule?: string })
    expect(decisions).toEqual([
      { turn: 1, step: 1, callId: 'a', tool: 'bash', decision: 'allow', by: 'rule', rule: 'bash: git *' },
      { turn: 1, step: 1, callId: 'b', tool: 'bash', decision: 'deny', by: 'rule', rule: 'bash: rm *' },
      { turn: 1, step: 1, callId: 'c', tool: 'bash', decision: 'deny', by: 'no-approver' },
    ])
    const codes = f.ofType('tool/result').map((e) => (e.data as { error?: { code: string } }).error?.code)
    expect(codes).toEqual([undefined, 'TOOL_DENIED', 'TOOL_DENIED'])
  })

  it('ask: yes runs once, no is a tool error the model reads, always is remembered for the session', async () => {
    const ran: string[] = []
    const answers = ['no', 'always']
    const asked: PermissionQuestion[] = []
    const f = await loopFixture(
      [
        { toolCalls: [{ id: 'a', name: 'bash', arguments: { command: 'ls' } }] },
        { toolCalls: [{ id: 'b', name: 'bash', arguments: { command: 'pwd' } }] },
        { toolCalls: [{ id: 'c', name: 'bash', arguments: { command: 'date' } }] },
        { text: 'done' },
      ],
      {
        tools: [bash(ran)],
        plugins: [
          permissionPlugin({
            ask: async (q) => {
              asked.push(q)
              return answers.shift() as 'no' | 'always'
            },
          }),
        ],
      },
    )
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(asked.map((q) => q.subject)).toEqual(['ls', 'pwd'])
    expect(ran).toEqual(['pwd', 'date'])
    const denied = f.model.requests[1]?.messages.at(-1)?.content[0] as unknown as { isError?: boolean; content: { text: string }[] }
    expect(denied.isError).toBe(true)
    expect(denied.content[0]?.text).toMatch(/declined bash/)
    expect(f.ofType('permission/decision').map((e) => (e.data as { by: string }).by)).toEqual(['user', 'user', 'remembered'])
  })

  it('reads are allowed by default', async () => {
    const calls: unknown[] = []
    const readLike = { ...echoTool(calls), name: 'read_file' }
    const f = await loopFixture([{ toolCalls: [{ name: 'read_file', arguments: { text: 'x' } }] }, { text: 'ok' }], {
      tools: [readLike],
      plugins: [permissionPlugin()],
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(calls).toEqual(['x'])
  })
})

describe('turnBudgetPlugin', () => {
  it('a runaway tool loop is cancelled at maxSteps with a reason that names the budget', async () => {
    const f = await loopFixture(() => ({ toolCalls: [{ name: 'echo', arguments: { text: 'again' } }] }), {
      tools: [echoTool()],
      plugins: [turnBudgetPlugin({ maxSteps: 3 })],
    })
    f.agent.followup('loop forever')
    await f.agent.whenIdle()
    expect(f.ofType('step/start')).toHaveLength(3)
    expect(f.turnEnds()).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'turn budget: more than 3 steps' } }])
    expect(f.ofType('budget/exceeded').map((e) => e.data)).toEqual([{ turn: 1, budget: 'steps', limit: 3, used: 3 }])
    f.agent.followup('next turn gets a fresh budget')
    await f.agent.whenIdle()
    expect(f.ofType('step/start')).toHaveLength(6)
  })

  it('maxTokens counts the turn’s usage and stops before the next step', async () => {
    const f = await loopFixture(() => ({ toolCalls: [{ name: 'echo', arguments: { text: 'x' } }], usage: { inputTokens: 60, outputTokens: 10 } }), {
      tools: [echoTool()],
      plugins: [turnBudgetPlugin({ maxTokens: 100 })],
    })
    f.agent.followup('go')
    await f.agent.whenIdle()
    expect(f.ofType('step/start')).toHaveLength(2)
    expect(f.ofType('budget/exceeded').map((e) => e.data)).toEqual([{ turn: 1, budget: 'tokens', limit: 100, used: 140 }])
  })
})
