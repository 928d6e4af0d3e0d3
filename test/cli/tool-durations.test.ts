import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/session/events.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { cliEnv, ensureBuilt, sessionFiles, tempHome } from './cli-process.js'
import { startPty } from './pty.js'

beforeAll(() => ensureBuilt(), 120_000)

async function sessionEvents(home: string): Promise<SessionEvent[]> {
  const [file] = sessionFiles(home)
  return (await new JsonlStore({ dir: join(home, 'sessions') }).read((file as string).replace('.jsonl', ''))).events
}

describe('ISSUE-28 item 8: a tool call takes its own time, not the time a person took to answer', () => {
  it('a write approved after 2.5 s shows its own few milliseconds and the wait apart; a quick answer shows no wait', async () => {
    const home = tempHome()
    const root = join(home, 'work')
    mkdirSync(root)
    const script = join(home, 'script.json')
    const write = (path: string) => ({ toolCalls: [{ name: 'write_file', arguments: { path, content: 'x\n' } }] })
    writeFileSync(script, JSON.stringify([write('slow.md'), write('quick.md'), { text: 'both written' }]))
    const pty = startPty(['run', '--script', script, '--root', root, 'write two files'], { env: cliEnv(home) })
    await pty.waitFor('Allow write_file slow.md?')
    await new Promise((r) => setTimeout(r, 2500))
    pty.type('y\r')
    await pty.waitFor('Allow write_file quick.md?')
    pty.type('y\r')
    expect(await pty.exited()).toBe(0)
    const screen = pty.screen()
    const slow = /✓ write_file slow\.md \((\d+) ms; ([\d.]+) s waiting for approval\)/.exec(screen)
    expect(slow, screen).not.toBeNull()
    // The file write itself is far below the 2.5 s the question waited.
    expect(Number(slow?.[1])).toBeLessThan(1000)
    expect(Number(slow?.[2])).toBeGreaterThanOrEqual(2.5)
    expect(screen).toMatch(/✓ write_file quick\.md \(\d+ ms\)/)
    const waits = (await sessionEvents(home)).filter((e) => e.type === 'permission/decision').map((e) => (e.data as { waitedMs?: number }).waitedMs)
    expect(waits[0]).toBeGreaterThanOrEqual(2500)
    expect(waits[1]).toBeLessThan(2500)
  }, 60_000)
})
