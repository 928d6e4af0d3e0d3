import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

describe('examples/scripts/recovery.json (offline demo of failures the loop recovers from)', () => {
  it('retries a rate limit in the same step, returns malformed tool arguments to the model, and completes', async () => {
    const home = tempHome()
    const env = cliEnv(home)
    const run = await runCli(['run', '--script', 'examples/scripts/recovery.json', 'Set the config to final'], { env })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/↻ RATE_LIMIT: scripted: rate limited, retry shortly — retrying in \d+ ms/)
    expect(run.stdout).toMatch(/✗ edit_file .*not valid JSON/)
    expect(run.stdout).toMatch(/✓ read_file config\.txt .*mode = final/)
    expect(run.stdout).toMatch(/── completed · 5 steps/)
    const id = (sessionFiles(home)[0] as string).replace(/\.jsonl$/, '')
    const verify = await runCli(['verify', id], { env })
    expect(verify.code).toBe(0)
    expect(verify.stdout).toMatch(/6 requests rebuilt from the log/)
  }, 30_000)
})
