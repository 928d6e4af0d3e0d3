import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/session/events.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import type { Loopback } from '../llm/adapters/loopback.js'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from './cli-process.js'
import { startDeepseek } from './deepseek-server.js'
import { startPty } from './pty.js'

beforeAll(() => ensureBuilt(), 120_000)

let server: Loopback | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

async function sessionEvents(home: string): Promise<SessionEvent[]> {
  const [file] = sessionFiles(home)
  return (await new JsonlStore({ dir: join(home, 'sessions') }).read((file as string).replace('.jsonl', ''))).events
}

function workspace(): { home: string; root: string } {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  return { home, root }
}

const writeCall = (path: string) => ({ name: 'write_file', arguments: JSON.stringify({ path, content: `${path}\n` }) })

describe('run on a terminal (a real pty) against a DeepSeek-format loopback server', () => {
  it('ISSUE-11 defect 1: answering y allows the tool; the screen shows reasoning, the tool line, the answer and the footer', async () => {
    const { home, root } = workspace()
    server = await startDeepseek([
      { reasoning: ['Need a file', ' first.'], text: ['Let me write it.'], toolCall: writeCall('a.txt') },
      { text: ['Done: a.txt ', 'is written.'] },
    ])
    const pty = startPty(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, 'write a.txt'], {
      env: cliEnv(home, { DEEPSEEK_API_KEY: 'sk-test-terminal' }),
    })
    await pty.waitFor('Allow write_file a.txt? [y]es / [n]o / [a]lways for this session: ')
    pty.type('y\r')
    expect(await pty.exited()).toBe(0)
    const screen = pty.screen()
    expect(screen).toContain('→ allowed')
    expect(screen).toMatch(/✓ write_file a\.txt \(\d+ ms\)/)
    expect(screen).toContain('Done: a.txt is written.')
    expect(screen).toMatch(/── completed · 2 steps · tokens/)
    // Defect 4: the reasoning ends its own line when the answer starts.
    const reasoningLine = screen.split('\n').find((l) => l.includes('Need a file first.'))
    expect(reasoningLine).toBeDefined()
    expect(reasoningLine).not.toContain('Let me write it.')
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('a.txt\n')
    const decision = (await sessionEvents(home)).find((e) => e.type === 'permission/decision')
    expect(decision?.data).toMatchObject({ tool: 'write_file', decision: 'allow', by: 'user', answer: 'yes' })
  }, 60_000)

  it('answering a allows the tool for the rest of the session; answering n denies it and the model reads the denial', async () => {
    const { home, root } = workspace()
    server = await startDeepseek([
      { toolCall: writeCall('one.txt') },
      { toolCall: writeCall('two.txt') },
      { text: ['both written'] },
    ])
    const env = cliEnv(home, { DEEPSEEK_API_KEY: 'sk-test-terminal' })
    const always = startPty(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, 'write two files'], { env })
    await always.waitFor('Allow write_file one.txt?')
    always.type('a\r')
    expect(await always.exited()).toBe(0)
    expect(always.screen()).not.toContain('Allow write_file two.txt?')
    expect(existsSync(join(root, 'one.txt')) && existsSync(join(root, 'two.txt'))).toBe(true)
    const decisions = (await sessionEvents(home)).filter((e) => e.type === 'permission/decision').map((e) => e.data)
    expect(decisions).toMatchObject([
      { tool: 'write_file', decision: 'allow', by: 'user', answer: 'always' },
      { tool: 'write_file', decision: 'allow', by: 'remembered' },
    ])
    await server.close()

    server = await startDeepseek([{ toolCall: writeCall('three.txt') }, { text: ['I did not write it.'] }])
    const home2 = tempHome()
    const no = startPty(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, 'write three'], {
      env: cliEnv(home2, { DEEPSEEK_API_KEY: 'sk-test-terminal' }),
    })
    await no.waitFor('Allow write_file three.txt?')
    no.type('n\r')
    expect(await no.exited()).toBe(0)
    expect(no.screen()).toContain('→ denied')
    expect(no.screen()).toContain('I did not write it.')
    expect(existsSync(join(root, 'three.txt'))).toBe(false)
    const second = server.requests[1]?.json as { messages: { role: string; content: string }[] }
    expect(JSON.stringify(second.messages[second.messages.length - 1])).toContain('the user declined write_file')
  }, 90_000)
})

describe('chat on a terminal (a real pty)', () => {
  it('streams reasoning, a tool call and text; answers y, a and n; keeps the answers out of the chat history', async () => {
    const { home, root } = workspace()
    server = await startDeepseek([
      { reasoning: ['The user wants a file.'], text: ['Writing it.'], toolCall: writeCall('chat.txt') },
      { text: ['Written.'] },
      { toolCall: writeCall('b1.txt') },
      { toolCall: writeCall('b2.txt') },
      { text: ['Both written.'] },
      { toolCall: { name: 'bash', arguments: JSON.stringify({ command: 'rm -rf /tmp/nothing' }) } },
      { text: ['Not run, as you wish.'] },
    ])
    const pty = startPty(['chat', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root], {
      env: cliEnv(home, { DEEPSEEK_API_KEY: 'sk-test-terminal' }),
    })
    await pty.waitFor('› ')
    pty.type('please write chat.txt\r')
    await pty.waitFor('Allow write_file chat.txt?')
    pty.type('y\r')
    await pty.waitFor('Written.')
    await pty.waitFor(/── completed[^\n]*\n[\s\S]*› $/)
    pty.type('now b1 and b2\r')
    await pty.waitFor('Allow write_file b1.txt?')
    pty.type('a\r')
    await pty.waitFor('Both written.')
    await pty.waitFor(/Both written\.[\s\S]*── completed[^\n]*\n[\s\S]*› $/)
    pty.type('clean up\r')
    await pty.waitFor('Allow bash rm -rf /tmp/nothing?')
    pty.type('n\r')
    await pty.waitFor('Not run, as you wish.')
    await pty.waitFor(/Not run, as you wish\.[\s\S]*── completed[^\n]*\n[\s\S]*› $/)
    pty.type('/exit\r')
    expect(await pty.exited()).toBe(0)
    const screen = pty.screen()
    expect(screen).not.toContain('Allow write_file b2.txt?')
    expect(screen).toContain('→ allowed (write_file from now on)')
    expect(screen).toContain('→ denied')
    expect(screen).toMatch(/⊘ bash rm -rf \/tmp\/nothing \(\d+ ms\) → the user declined bash/)
    expect(screen.indexOf('The user wants a file.')).toBeLessThan(screen.indexOf('Writing it.'))
    for (const name of ['chat.txt', 'b1.txt', 'b2.txt']) expect(readFileSync(join(root, name), 'utf8')).toBe(`${name}\n`)
    const history = readFileSync(join(home, 'chat_history'), 'utf8').split('\n').filter((l) => l !== '')
    expect(history).toEqual(['/exit', 'clean up', 'now b1 and b2', 'please write chat.txt'])
    const events = await sessionEvents(home)
    expect(events.filter((e) => e.type === 'turn/end')).toHaveLength(3)
    expect(events.filter((e) => e.type === 'permission/decision').map((e) => e.data)).toMatchObject([
      { tool: 'write_file', by: 'user', answer: 'yes' },
      { tool: 'write_file', by: 'user', answer: 'always' },
      { tool: 'write_file', by: 'remembered' },
      { tool: 'bash', decision: 'deny', by: 'user', answer: 'no' },
    ])
    const verify = await runCli(['verify', (sessionFiles(home)[0] as string).slice(0, 8)], { env: cliEnv(home) })
    expect(verify.code).toBe(0)
  }, 60_000)

  it('`ledgerloop` with no argument on a terminal starts chat', async () => {
    const { home } = workspace()
    const pty = startPty([], { env: cliEnv(home, { DEEPSEEK_API_KEY: 'sk-test-terminal' }) })
    await pty.waitFor('ledgerloop chat · deepseek')
    await pty.waitFor('› ')
    pty.type('/exit\r')
    expect(await pty.exited()).toBe(0)
  }, 60_000)
})
