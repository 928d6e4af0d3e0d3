import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, runCli, tempHome } from '../cli/cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

// The worker takes run's agent options from their one declaration (cli/commands/agent-options.ts), except
// those that pick one session or shape one terminal's output: those are usage errors, with the reason.
describe('ledgerloop worker options', () => {
  it('lists the shared sandbox, network and bash-env options in its help', async () => {
    const home = tempHome()
    const help = await runCli(['worker', '--help'], { env: cliEnv(home) })
    expect(help.code).toBe(0)
    for (const flag of ['--sandbox <mode>', '--network', '--network-ask', '--bash-env <name>', '--reasoning-effort <level>', '--max-output-tokens <n>', '--otlp <url>', '--no-project-file']) {
      expect(help.stdout).toContain(flag)
    }
  })

  it('refuses the options of one session (exit 2, naming the option)', async () => {
    const home = tempHome()
    for (const flag of ['--session', '--print', '--attach']) {
      const run = await runCli(['worker', '--store', 'postgres://127.0.0.1:1/none', flag, ...(flag === '--session' ? ['abc'] : [])], { env: cliEnv(home) })
      expect(run.code, flag).toBe(2)
      expect(run.stderr, flag).toContain(flag)
    }
  })
})
