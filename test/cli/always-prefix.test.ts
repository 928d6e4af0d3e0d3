import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/session/events.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import type { Loopback } from '../llm/adapters/loopback.js'
import { cliEnv, ensureBuilt, sessionFiles, tempHome } from './cli-process.js'
import { startDeepseek } from './deepseek-server.js'
import { startPty, type PtyCli } from './pty.js'

beforeAll(() => ensureBuilt(), 120_000)

let server: Loopback | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const bash = (command: string) => ({ toolCall: { name: 'bash', arguments: JSON.stringify({ command }) } })
const KEY = { DEEPSEEK_API_KEY: 'sk-test-prefix' }

async function decisions(home: string): Promise<Record<string, unknown>[]> {
  const [file] = sessionFiles(home)
  const events: SessionEvent[] = (await new JsonlStore({ dir: join(home, 'sessions') }).read((file as string).replace('.jsonl', ''))).events
  return events.filter((e) => e.type === 'permission/decision').map((e) => e.data as Record<string, unknown>)
}

async function turnDone(pty: PtyCli, text: string): Promise<void> {
  await pty.waitFor(new RegExp(`${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[\\s\\S]*── completed[^\\n]*\\n[\\s\\S]*› $`))
}

describe('ISSUE-28 item 3: "always" means what the user saw', () => {
  it('bash offers always for the command prefix, which allows that prefix only, and chat -c keeps it', async () => {
    const home = tempHome()
    const root = join(home, 'work')
    mkdirSync(root)
    server = await startDeepseek([
      bash('ls -la'),
      bash('ls -1'),
      bash('ls -1 && pwd'),
      bash('pwd'),
      { text: ['Listed.'] },
      // The resumed session: `ls` is still allowed, `pwd` (denied before, never "always") asks again.
      bash('ls -a'),
      bash('pwd'),
      { text: ['Again.'] },
    ])
    const args = ['--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--sandbox', 'off']
    const first = startPty(['chat', ...args], { env: cliEnv(home, KEY) })
    await first.waitFor('› ')
    first.type('list the folder\r')
    await first.waitFor('Allow bash ls -la? [y]es / [n]o / [p] always for `ls …` / [a]lways for any bash command (this session): ')
    first.type('p\r')
    await first.waitFor('→ allowed (bash `ls …` from now on)')
    // `ls -1` runs without a question; a command chaining another after `ls` is not an `ls` command and asks.
    await first.waitFor('Allow bash ls -1 && pwd?')
    first.type('n\r')
    await first.waitFor('Allow bash pwd?')
    first.type('n\r')
    await turnDone(first, 'Listed.')
    first.type('/exit\r')
    expect(await first.exited()).toBe(0)
    expect(first.screen()).not.toContain('Allow bash ls -1?')
    expect(await decisions(home)).toMatchObject([
      { tool: 'bash', decision: 'allow', by: 'user', answer: 'always', grants: ['bash'], prefix: 'ls' },
      { tool: 'bash', decision: 'allow', by: 'remembered' },
      { tool: 'bash', decision: 'deny', by: 'user', answer: 'no' },
      { tool: 'bash', decision: 'deny', by: 'user', answer: 'no' },
    ])

    const resumed = startPty(['chat', '-c', ...args], { env: cliEnv(home, KEY) })
    await resumed.waitFor('› ')
    resumed.type('once more\r')
    await resumed.waitFor('Allow bash pwd?')
    resumed.type('n\r')
    await turnDone(resumed, 'Again.')
    resumed.type('/exit\r')
    expect(await resumed.exited()).toBe(0)
    expect(resumed.screen()).not.toContain('Allow bash ls -a?')
    expect((await decisions(home)).slice(4)).toMatchObject([
      { tool: 'bash', decision: 'allow', by: 'remembered' },
      { tool: 'bash', decision: 'deny', by: 'user', answer: 'no' },
    ])
  }, 90_000)

  it('always for a whole tool is kept across chat -c too', async () => {
    const home = tempHome()
    const root = join(home, 'work')
    mkdirSync(root)
    const write = (path: string) => ({ toolCall: { name: 'write_file', arguments: JSON.stringify({ path, content: 'x\n' }) } })
    server = await startDeepseek([write('a.md'), { text: ['One.'] }, write('b.md'), { text: ['Two.'] }])
    const args = ['--provider', 'deepseek', '--base-url', server.baseURL, '--root', root]
    const first = startPty(['chat', ...args], { env: cliEnv(home, KEY) })
    await first.waitFor('› ')
    first.type('write a\r')
    await first.waitFor('Allow write_file a.md? [y]es / [n]o / [a]lways for this session: ')
    first.type('a\r')
    await turnDone(first, 'One.')
    first.type('/exit\r')
    expect(await first.exited()).toBe(0)
    const resumed = startPty(['chat', '-c', ...args], { env: cliEnv(home, KEY) })
    await resumed.waitFor('› ')
    resumed.type('write b\r')
    await turnDone(resumed, 'Two.')
    resumed.type('/exit\r')
    expect(await resumed.exited()).toBe(0)
    expect(resumed.screen()).not.toContain('Allow write_file b.md?')
    expect((await decisions(home)).map((d) => d.by)).toEqual(['user', 'remembered'])
  }, 90_000)
})

describe('permissionPlugin prefix grants', () => {
  it('a prefix that cannot be honoured allows the one call and grants nothing, never the whole tool', async () => {
    const { createHarness } = await import('../../src/harness/harness.js')
    const { scriptedAdapter } = await import('../../src/llm/adapters/scripted.js')
    const { permissionPlugin } = await import('../../src/plugins/permission.js')
    const fakeBash = { name: 'bash', description: 'runs nothing', parameters: { type: 'object', properties: { command: { type: 'string' } } }, execute: () => 'ok' }
    const call = (command: string) => ({ toolCalls: [{ name: 'bash', arguments: { command } }] })
    const asked: string[] = []
    const harness = createHarness({
      adapters: [scriptedAdapter({ script: [call('ls -la'), call('ls -1'), { text: 'done' }] })],
      tools: [fakeBash],
      plugins: [
        permissionPlugin({
          ask: async (question) => {
            asked.push(question.subject)
            return { answer: 'always', by: 'user', prefix: 'ls; rm' }
          },
        }),
      ],
    })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'scripted' })
    agent.followup('list')
    await agent.whenIdle()
    const decisions = agent.session.events.filter((e) => e.type === 'permission/decision').map((e) => e.data as Record<string, unknown>)
    await harness.close()
    expect(asked).toEqual(['ls -la', 'ls -1'])
    expect(decisions).toMatchObject([
      { decision: 'allow', answer: 'yes' },
      { decision: 'allow', answer: 'yes' },
    ])
    expect(decisions[0]?.grants).toBeUndefined()
  })
})
