import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'
import { startPty } from './pty.js'

beforeAll(() => ensureBuilt(), 120_000)

async function threeSessions(): Promise<{ home: string; root: string; script: string }> {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  const script = join(home, 'script.json')
  writeFileSync(script, JSON.stringify([{ text: 'ok' }]))
  for (const prompt of ['oldest: fix the parser', 'middle: write the docs', 'newest: tidy up']) {
    expect((await runCli(['run', '--script', script, '--root', root, prompt], { env: cliEnv(home) })).code).toBe(0)
  }
  return { home, root, script }
}

describe('ISSUE-28 item 7: a session picker', () => {
  it('ledgerloop resume lists recent sessions newest first; ↓ ↓ Enter continues the third in a chat', async () => {
    const { home, root, script } = await threeSessions()
    const pty = startPty(['resume', '--script', script, '--root', root], { env: cliEnv(home) })
    await pty.waitFor('↑/↓ to move, Enter to resume, Esc to cancel')
    const list = pty.screen().split('\n').filter((l) => /fix the parser|write the docs|tidy up/.test(l))
    expect(list[0]).toMatch(/^› newest: tidy up\s+\d+ s ago\s+1 turn\s+completed\s+[0-9a-f]{8}$/)
    expect(list[1]).toMatch(/^ {2}middle: write the docs/)
    expect(list[2]).toMatch(/^ {2}oldest: fix the parser/)
    pty.type('\x1b[B')
    pty.type('\x1b[B')
    await pty.waitFor(/› oldest: fix the parser/)
    pty.type('\r')
    await pty.waitFor(/resumed [0-9a-f-]{36}/)
    await pty.waitFor('› ')
    pty.type('/exit\r')
    expect(await pty.exited()).toBe(0)
    const sessions = JSON.parse((await runCli(['sessions', '--json'], { env: cliEnv(home) })).stdout) as { id: string; title: string }[]
    const oldest = sessions.find((s) => s.title === 'oldest: fix the parser')
    expect(pty.screen()).toContain(`resumed ${oldest?.id}`)
  }, 60_000)

  it('Esc picks nothing; off a terminal resume says how to continue by id', async () => {
    const { home, root, script } = await threeSessions()
    const pty = startPty(['resume', '--script', script, '--root', root], { env: cliEnv(home) })
    await pty.waitFor('Enter to resume')
    pty.type('\x1b')
    expect(await pty.exited()).toBe(0)
    expect(pty.screen()).not.toContain('resumed')
    const piped = await runCli(['resume'], { env: cliEnv(home) })
    expect(piped.code).toBe(2)
    expect(piped.stderr).toContain('ledgerloop chat --session ID')
  }, 60_000)

  it('/resume in chat continues another session by its number or by an id prefix', async () => {
    const { home, root, script } = await threeSessions()
    const sessions = JSON.parse((await runCli(['sessions', '--json'], { env: cliEnv(home) })).stdout) as { id: string; title: string }[]
    const middle = sessions.find((s) => s.title === 'middle: write the docs')?.id as string
    const oldest = sessions.find((s) => s.title === 'oldest: fix the parser')?.id as string
    const pty = startPty(['chat', '--script', script, '--root', root], { env: cliEnv(home) })
    await pty.waitFor('› ')
    pty.type('/resume\r')
    await pty.waitFor('resume which? type its number')
    expect(pty.screen()).toMatch(/ {2}2 {2}middle: write the docs/)
    pty.type('2\r')
    await pty.waitFor(`resumed ${middle}`)
    pty.type(`/resume ${oldest.slice(0, 8)}\r`)
    await pty.waitFor(`resumed ${oldest}`)
    pty.type('/exit\r')
    expect(await pty.exited()).toBe(0)
    expect(pty.screen()).toContain(`session ${oldest} · ledgerloop inspect`)
  }, 60_000)
})
