import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { createHarness, JsonlStore, scriptedAdapter } from '../../src/index.js'
import { COST_CAP_EVENT, type CostBudgetCapData } from '../../src/views/cost-cap.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

// Every scripted request bills 100k input tokens; at $1 per million tokens that is $0.10 a request.
const USAGE = { inputTokens: 100_000, outputTokens: 0 }
const SCRIPT = [
  { toolCalls: [{ name: 'list', arguments: {} }], usage: USAGE },
  { toolCalls: [{ name: 'list', arguments: {} }], usage: USAGE },
  { toolCalls: [{ name: 'list', arguments: {} }], usage: USAGE },
  { text: 'done', usage: USAGE },
]
const PRICE = { currency: 'USD', inputPerMTok: 1, outputPerMTok: 1, asOf: '2026-12-01' }

function demo(priced: boolean): { home: string; script: string } {
  const home = tempHome()
  const script = join(home, 'script.json')
  writeFileSync(script, JSON.stringify(SCRIPT))
  if (priced) writeFileSync(join(home, 'config.json'), JSON.stringify({ pricing: { 'scripted/scripted': PRICE } }))
  return { home, script }
}

describe('run --max-cost', () => {
  it('stops the turn before the request after the cap, and the footer shows spend against the cap', async () => {
    const { home, script } = demo(true)
    const run = await runCli(['run', '--yes', '--max-cost', '0.15', '--script', script, 'go'], { env: cliEnv(home) })
    expect(run.stdout).toContain('⛔ cost budget: $0.2 spent of $0.15; no further request is sent')
    expect(run.stdout).toMatch(/── aborted by cost budget: \$0\.2 spent of \$0\.15 · .*spent \$0\.2000 of \$0\.1500 cap/)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('turn ended aborted by cost budget')
    const json = await runCli(['run', '--yes', '--json', '--max-cost', '0.15', '--script', script, 'go'], { env: cliEnv(home) })
    const ends = json.stdout.trim().split('\n').map((line) => JSON.parse(line) as { type: string; data: { reason?: unknown } }).filter((e) => e.type === 'turn/end')
    expect(ends.map((e) => e.data.reason)).toEqual([{ kind: 'aborted', reason: { kind: 'hook', reason: 'cost budget: $0.2 spent of $0.15' } }])
    const id = /session ([0-9a-f-]{36})/.exec(run.stdout)?.[1] as string
    const inspect = await runCli(['inspect', id], { env: cliEnv(home) })
    expect(inspect.stdout).toContain('cost budget: turn 1 stopped at $0.2 of $0.15; billed $0.2000 over every request attempt')
    // The cap comes from the log (recorded before the first request), in the footer's words.
    expect(inspect.stdout).toContain('cost cap: spent $0.2000 of $0.1500 cap (set by --max-cost; every request attempt billed)')
    const inspected = JSON.parse((await runCli(['inspect', id, '--json'], { env: cliEnv(home) })).stdout) as { costCap?: unknown }
    expect(inspected.costCap).toMatchObject({ maxUsd: 0.15, per: 'session', origin: 'plugin', spentUsd: 0.2, stoppedTurns: [1] })
  }, 60_000)

  it('warns, once, that a model without a price is not counted, instead of passing silently', async () => {
    const { home, script } = demo(false)
    const run = await runCli(['run', '--yes', '--max-cost', '0.15', '--script', script, 'go'], { env: cliEnv(home) })
    const warnings = run.stdout.split('\n').filter((line) => line.includes('⚠ cost budget: no price for scripted/scripted'))
    expect(warnings).toHaveLength(1)
    expect(run.stdout).toContain('spent $0.000000 of $0.1500 cap (4 unpriced)')
    expect(run.code).toBe(0)
    const id = /session ([0-9a-f-]{36})/.exec(run.stdout)?.[1] as string
    const inspect = await runCli(['inspect', id], { env: cliEnv(home) })
    expect(inspect.stdout).toContain('cost cap: spent $0.000000 of $0.1500 cap (4 unpriced)')
    expect(inspect.stdout).toContain('⚠ cost budget: no price for scripted/scripted: its requests do not count against the cap')
  }, 60_000)

  it("holds run --session to the session's own cap (POST /api/sessions maxCostUsd) without --max-cost", async () => {
    const { home, script } = demo(true)
    // A session created with its own cap, as serve records it: the cap is in the log, not in a flag.
    const store = new JsonlStore({ dir: join(home, 'sessions') })
    const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [] })] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'scripted' })
    const own: CostBudgetCapData = { maxUsd: 0.15, per: 'session', origin: 'session' }
    agent.session.append(COST_CAP_EVENT, own, { ignorable: true })
    await harness.close()
    const run = await runCli(['run', '--yes', '--session', agent.id, '--script', script, 'go'], { env: cliEnv(home) })
    expect(run.stdout).toContain('⛔ cost budget: $0.2 spent of $0.15; no further request is sent')
    expect(run.code).toBe(1)
    const inspected = JSON.parse((await runCli(['inspect', agent.id, '--json'], { env: cliEnv(home) })).stdout) as { costCap?: unknown }
    expect(inspected.costCap).toMatchObject({ maxUsd: 0.15, origin: 'session', spentUsd: 0.2, stoppedTurns: [1] })
  }, 60_000)

  it('refuses a negative, zero or non-numeric cap with exit code 2', async () => {
    const { home, script } = demo(true)
    for (const bad of ['-1', '0', 'abc', '1e3']) {
      const run = await runCli(['run', '--max-cost', bad, '--script', script, 'go'], { env: cliEnv(home) })
      expect(run.code, bad).toBe(2)
      expect(run.stderr, bad).toMatch(/--max-cost/)
    }
  }, 60_000)

  it('is an option of run, chat, worker and serve', async () => {
    const home = tempHome()
    for (const command of ['run', 'chat', 'worker', 'serve']) {
      const help = await runCli([command, '--help'], { env: cliEnv(home) })
      expect(help.stdout, command).toContain('--max-cost <usd>')
    }
  }, 60_000)
})
