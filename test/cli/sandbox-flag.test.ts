import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { requireSystemTool } from '../support/system-tools.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

const sandbox = requireSystemTool('bubblewrap', import.meta.url)

beforeAll(() => ensureBuilt(), 120_000)

// A scripted turn that asks bash to write outside its folder, then to echo.
function bashScript(home: string): string {
  const file = join(home, 'bash-script.json')
  const steps = [
    { toolCalls: [{ id: 'b1', name: 'bash', arguments: { command: `echo escaped > ${home}/escaped.txt; echo inside` } }] },
    { text: 'done' },
  ]
  writeFileSync(file, JSON.stringify(steps))
  return file
}

describe('ledgerloop run --sandbox', () => {
  it.skipIf(sandbox.skip)('runs bash in the sandbox by default: the footer says nothing, the write into the ledgerloop home stays inside', async () => {
    const home = tempHome()
    const run = await runCli(['run', '--yes', '--script', bashScript(home), 'go'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/→ inside \[exit code 0\]/)
    expect(existsSync(join(home, 'escaped.txt'))).toBe(false)
    expect(run.stdout).toMatch(/── completed · 2 steps/)
    expect(run.stdout).not.toContain('sandbox: off')
  }, 30_000)

  it('--sandbox off is shown in every turn footer', async () => {
    const home = tempHome()
    const run = await runCli(['run', '--yes', '--sandbox', 'off', '--script', bashScript(home), 'go'], { env: cliEnv(home) })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/── completed · 2 steps · .* · sandbox: off\n/)
    expect(existsSync(join(home, 'escaped.txt'))).toBe(true)
  }, 30_000)

  it('an unknown mode is a usage error', async () => {
    const home = tempHome()
    const run = await runCli(['run', '--sandbox', 'docker', '--script', bashScript(home), 'go'], { env: cliEnv(home) })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("sandbox must be 'bwrap' or 'off'")
  }, 30_000)
})
