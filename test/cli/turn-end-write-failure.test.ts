import { mkdtempSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent, TurnEndReason } from '../../src/index.js'
import { cliEnv, ensureBuilt, REPO, runCli, sessionFiles, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

const PRELOAD = join(REPO, 'test/support/fsync-fault-preload.mjs')

describe('run: a turn whose turn/end never reached disk is not reported completed (docs/stores.md, "When a write fails")', () => {
  it('with fsync failing from the turn-end flush on: --json ends with turn/end error SESSION_WRITE_FAILED, stderr says so, exit 1; then run -c completes and verify passes', async () => {
    const home = tempHome()
    const root = mkdtempSync(join(home, 'root-'))
    const args = ['--script', 'examples/scripts/demo.json', '--yes', '--root', root]
    const failing = await runCli(['run', ...args, '--json', 'Take notes'], { env: cliEnv(home, { NODE_OPTIONS: `--import=${PRELOAD}` }), timeoutMs: 30_000 })
    const events = failing.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as SessionEvent)
    const ends = events.filter((e) => e.type === 'turn/end')
    expect(ends, failing.stderr).toHaveLength(1)
    expect((ends[0]?.data as { reason: TurnEndReason }).reason).toMatchObject({ kind: 'error', error: { code: 'SESSION_WRITE_FAILED' } })
    expect(failing.stderr).toMatch(/turn ended error SESSION_WRITE_FAILED: turn 1 ended completed, but that end could not be written/)
    expect(failing.stderr).toMatch(/EIO/)
    // harness.close() rejects (the writer's last attempt fails too) and says so, instead of swallowing it.
    expect(failing.stderr).toMatch(/ledgerloop: could not write session .*\(SESSION_WRITE_FAILED\)\n/)
    expect(failing.code).toBe(1)

    const env = cliEnv(home)
    const id = (sessionFiles(home)[0] as string).replace(/\.jsonl$/, '')
    const broken = await runCli(['verify', id], { env })
    expect(broken.stdout + broken.stderr).toMatch(/log ends inside turn 1/)

    // The interrupted turn is continued first (its last step had not answered yet), then the new prompt runs.
    const script = join(home, 'resume.json')
    writeFileSync(script, JSON.stringify([{ text: 'carried on' }, { text: 'notes again' }]))
    const resumed = await runCli(['run', '-c', '--script', script, '--yes', '--root', root, 'Take notes again'], { env, timeoutMs: 30_000 })
    expect(resumed.stderr).toContain('ledgerloop: turn 1 was interrupted (the process stopped mid-turn); continuing it as turn 2')
    expect(resumed.code, resumed.stderr + resumed.stdout).toBe(0)
    expect(resumed.stdout).toMatch(/── completed/)
    const verify = await runCli(['verify', id], { env })
    expect(verify.code, verify.stdout + verify.stderr).toBe(0)
  }, 60_000)
})
