import { existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import type { SessionEvent } from '../../src/session/events.js'
import { cliEnv, ensureBuilt, REPO, runCli, sessionFiles, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

// One demo run shared by the checks below: the README's offline quickstart, exactly as a new user runs it.
describe('ledgerloop run --script (the offline demo) and the session tools on its log', () => {
  const home = tempHome()
  const env = cliEnv(home)
  let id = ''
  let stdout = ''

  beforeAll(async () => {
    const run = await runCli(['run', '--script', 'examples/scripts/demo.json', 'Take notes'], { env })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    stdout = run.stdout
    const files = sessionFiles(home)
    expect(files).toHaveLength(1)
    id = (files[0] as string).replace(/\.jsonl$/, '')
  }, 30_000)

  it('prints a readable multi-step transcript labelled as scripted, without ANSI codes off a terminal', () => {
    expect(stdout).toContain('[scripted] model replies come from')
    expect(stdout).toContain(join(REPO, 'examples/scripts/demo.json'))
    expect(stdout).toContain("I'll write the notes to `notes.md` first.")
    expect(stdout).toMatch(/✓ write_file notes\.md \(\d+ ms\) → Created notes\.md/)
    expect(stdout).toMatch(/✓ read_file notes\.md/)
    expect(stdout).toMatch(/✓ list \(\d+ ms\) → notes\.md/)
    expect(stdout).toContain('thinking: The user wants notes kept.')
    expect(stdout).toMatch(/── completed · 4 steps · tokens 5,233 in \(3,840 cache hits\) · 189 out · /)
    expect(stdout).toContain(`session ${id}`)
    expect(stdout).not.toContain('\x1b[')
  })

  it('writes the session privately under $LEDGERLOOP_HOME/sessions; the tools worked in a scratch folder, removed at exit', async () => {
    const path = join(home, 'sessions', `${id}.jsonl`)
    expect(statSync(path).mode & 0o777).toBe(0o600)
    const stored = await new JsonlStore({ dir: join(home, 'sessions') }).read(id)
    const last = stored.events[stored.events.length - 1] as SessionEvent
    expect(last).toMatchObject({ type: 'turn/end', data: { turn: 1, reason: { kind: 'completed' } } })
    const root = stored.header.cwd as string
    expect(root).toContain('ledgerloop-demo-')
    expect(existsSync(root)).toBe(false)
    // What the demo wrote is in the log.
    expect(JSON.stringify(stored.events)).toContain('# Notes')
    expect(existsSync(join(REPO, 'notes.md'))).toBe(false)
  })

  it('verify exits 0 and counts the rebuilt requests', async () => {
    const run = await runCli(['verify', id], { env })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^ok .*: \d+ events, 4 requests rebuilt from the log\n$/)
  })

  it('inspect --json shows the turn → step → request/tool tree', async () => {
    const run = await runCli(['inspect', id, '--json'], { env })
    expect(run.code).toBe(0)
    const tree = JSON.parse(run.stdout)
    expect(tree.id).toBe(id)
    expect(tree.turns).toHaveLength(1)
    const [turn] = tree.turns
    expect(turn.reason).toEqual({ kind: 'completed' })
    expect(turn.usage).toEqual({ input: 5233, output: 189, cacheRead: 3840 })
    expect(turn.steps.map((s: { step: number }) => s.step)).toEqual([1, 2, 3, 4])
    expect(turn.steps.map((s: { tools: { name: string }[] }) => s.tools.map((t) => t.name))).toEqual([['write_file'], ['read_file'], ['list'], []])
    expect(turn.steps[0].requests[0]).toMatchObject({ provider: 'scripted', model: 'scripted', finish: 'tool-calls', usage: { inputTokens: 1180, outputTokens: 96 } })
    expect(turn.steps[0].tools[0]).toMatchObject({ isError: false, permission: 'allow by auto' })
    expect(turn.steps[3].requests[0].finish).toBe('stop')
    for (const step of turn.steps) expect(step.durationMs).toBeGreaterThanOrEqual(0)

    const human = await runCli(['inspect', id], { env })
    expect(human.stdout).toMatch(/turn 1 · completed · 4 steps/)
    expect(human.stdout).toMatch(/request scripted\/scripted · \d+ ms · tool-calls/)
    expect(human.stdout).toMatch(/tool write_file notes\.md · \d+ ms · ok/)
  })

  it('sessions --json lists it with its title, turns and last reason', async () => {
    const run = await runCli(['sessions', '--json'], { env })
    expect(run.code).toBe(0)
    const rows = JSON.parse(run.stdout)
    expect(rows).toEqual([
      { id, title: 'Take notes', updatedAt: expect.any(String), turns: 1, lastReason: 'completed', usage: { input: 5233, output: 189, cacheRead: 3840 }, sizeBytes: expect.any(Number) },
    ])
    expect(Number.isNaN(Date.parse(rows[0].updatedAt))).toBe(false)
  })

  it('replay feeds the recorded outputs through a fresh loop and finds every request identical', async () => {
    const run = await runCli(['replay', id], { env })
    expect(run.stdout).toContain('replayed 4 requests; each matches the original')
    expect(run.code).toBe(0)
  })

  it('fork prints a new id whose log verifies; --at inside a turn is a usage error', async () => {
    const fork = await runCli(['fork', id], { env })
    expect(fork.code).toBe(0)
    const child = fork.stdout.trim()
    expect(child).toMatch(/^[0-9a-f-]{36}$/)
    expect(child).not.toBe(id)
    const verify = await runCli(['verify', child], { env })
    expect(verify.code).toBe(0)
    const inside = await runCli(['fork', id, '--at', '5'], { env })
    expect(inside.code).toBe(2)
    expect(inside.stderr).toContain('inside an open turn')
  })
})

describe('ledgerloop run --json', () => {
  it('writes exactly the session events as JSONL to stdout', async () => {
    const home = tempHome()
    const script = join(home, 'hello.json')
    await import('node:fs/promises').then((fs) => fs.writeFile(script, JSON.stringify([{ text: ['Hello', ' there'] }])))
    const run = await runCli(['run', '--script', script, '--json', 'hi'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    const events = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as SessionEvent)
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i))
    expect(events.map((e) => e.type)).toContain('turn/start')
    expect(events[events.length - 1]).toMatchObject({ type: 'turn/end', data: { reason: { kind: 'completed' } } })
    // The notices a person needs go to stderr, so stdout stays machine-readable.
    expect(run.stderr).toContain('[scripted]')
    const [file] = sessionFiles(home)
    const stored = await new JsonlStore({ dir: join(home, 'sessions') }).read((file as string).replace('.jsonl', ''))
    expect(JSON.stringify(stored.events)).toBe(JSON.stringify(events))
  })
})
