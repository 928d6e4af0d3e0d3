import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = fileURLToPath(new URL('../..', import.meta.url))

describe('examples/embed.ts', () => {
  it('runs with tsx: the scripted model calls a tool, streams its answer, run() prints the answer or the failure, and the event log is printed', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/embed.ts'], { cwd: root, timeout: 30_000 })
    expect(stdout).toContain('[tool define]')
    expect(stdout).toContain('A ledger is a book of accounts: every entry kept, none rewritten.')
    expect(stdout).toMatch(/tool\/call\s+\{"turn":1,"step":1/)
    expect(stdout).toMatch(/turn\/end\s+\{"turn":1,"reason":\{"kind":"completed"\}\}/)
    // The stream's result and run()'s: the answer of the completed turn, the failure of the failed one.
    expect(stdout).toContain('answer (turn 1, 1 tool call(s), 280 in · 26 out): A ledger is a book of accounts: every entry kept, none rewritten.')
    expect(stdout).toContain('turn 2 ended error RATE_LIMIT: slow down (scripted)')
  })
})
