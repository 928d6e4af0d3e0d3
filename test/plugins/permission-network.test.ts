import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { defineTool, permissionPlugin, type PermissionQuestion, type PermissionRules } from '../../src/index.js'
import { loopFixture } from '../support/loop-fixture.js'

/** A stand-in `bash` with the 'per-call' argument: records each command and whether it asked for the network. */
const bash = (ran: string[]) =>
  defineTool({
    name: 'bash',
    description: 'shell',
    parameters: z.object({ command: z.string(), network: z.boolean().optional() }),
    execute: ({ command, network }) => (ran.push(`${command}${network === true ? ' +net' : ''}`), 'ok'),
  })

const call = (id: string, command: string, network?: boolean) => ({
  toolCalls: [{ id, name: 'bash', arguments: network === undefined ? { command } : { command, network } }],
})

async function runWith(steps: ReturnType<typeof call>[], rules: PermissionRules, ask?: (q: PermissionQuestion) => Promise<'yes' | 'no' | 'always'>) {
  const ran: string[] = []
  const f = await loopFixture([...steps, { text: 'done' }], {
    tools: [bash(ran)],
    plugins: [permissionPlugin({ rules, ...(ask !== undefined ? { ask } : {}) })],
  })
  f.agent.followup('go')
  await f.agent.whenIdle()
  const decisions = f.ofType('permission/decision').map((e) => e.data)
  const codes = f.ofType('tool/result').map((e) => {
    const data = e.data as { error?: { code: string }; message: unknown }
    // The text the model reads, wherever the message shape nests it.
    const message = JSON.stringify(data.message)
    return data.error !== undefined ? { code: data.error.code, message } : undefined
  })
  return { ran, decisions, codes, f }
}

describe('permissionPlugin: the network pseudo-tool', () => {
  it('a bash call asking for the network needs both the bash rule and a network rule', async () => {
    const { ran, decisions, codes } = await runWith(
      [call('a', 'npm install', true), call('b', 'curl evil.example', true), call('c', 'make', true)],
      { allow: ['bash: *', 'network: npm install*'], deny: ['network: curl *'] },
    )
    expect(ran).toEqual(['npm install +net'])
    expect(decisions).toEqual([
      { turn: 1, step: 1, callId: 'a', tool: 'bash', decision: 'allow', by: 'rule', rule: 'network: npm install*', network: true },
      { turn: 1, step: 2, callId: 'b', tool: 'bash', decision: 'deny', by: 'rule', rule: 'network: curl *', network: true },
      // `make` asked for the network; no rule allows it and no one can be asked.
      { turn: 1, step: 3, callId: 'c', tool: 'bash', decision: 'deny', by: 'no-approver', network: true },
    ])
    expect(codes.map((e) => e?.code)).toEqual([undefined, 'TOOL_DENIED', 'TOOL_DENIED'])
    expect(codes[1]?.message).toMatch(/permission denied for network access for bash by rule 'network: curl \*'/)
    expect(codes[2]?.message).toMatch(/asks for network access/)
  })

  it('a call without network: true never consults the network rules', async () => {
    const { ran, decisions } = await runWith([call('a', 'curl x'), call('b', 'curl y', false)], { allow: ['bash: *'], deny: ['network: *'] })
    expect(ran).toEqual(['curl x', 'curl y'])
    expect(decisions.map((d) => (d as { rule?: string }).rule)).toEqual(['bash: *', 'bash: *'])
    expect(decisions.every((d) => !('network' in (d as object)))).toBe(true)
  })

  it('a denied bash rule wins even when the network is allowed', async () => {
    const { ran, codes } = await runWith([call('a', 'rm -rf x', true)], { allow: ['network: *'], deny: ['bash: rm *'] })
    expect(ran).toEqual([])
    expect(codes[0]?.message).toMatch(/permission denied for bash by rule 'bash: rm \*'/)
  })

  it('the question says the call wants the network; always remembers the network for the session', async () => {
    const asked: PermissionQuestion[] = []
    const answers: Array<'no' | 'always'> = ['no', 'always']
    const { ran, decisions } = await runWith(
      [call('a', 'pip install x', true), call('b', 'npm ci', true), call('c', 'git fetch', true)],
      { allow: ['bash: *'] },
      async (q) => {
        asked.push(q)
        return answers.shift() ?? 'no'
      },
    )
    expect(asked.map((q) => [q.subject, q.network, q.reason])).toEqual([
      ['pip install x', true, 'bash pip install x asks for network access'],
      ['npm ci', true, 'bash npm ci asks for network access'],
    ])
    expect(ran).toEqual(['npm ci +net', 'git fetch +net'])
    expect(decisions.map((d) => (d as { by: string }).by)).toEqual(['user', 'user', 'remembered'])
  })

  it('a tool and network both asking are one question; always remembers both', async () => {
    const asked: PermissionQuestion[] = []
    const { ran, decisions } = await runWith([call('a', 'npm ci', true), call('b', 'ls'), call('c', 'npm test', true)], {}, async (q) => {
      asked.push(q)
      return 'always'
    })
    expect(asked).toHaveLength(1)
    expect(ran).toEqual(['npm ci +net', 'ls', 'npm test +net'])
    expect(decisions.map((d) => (d as { by: string }).by)).toEqual(['user', 'remembered', 'remembered'])
  })
})
