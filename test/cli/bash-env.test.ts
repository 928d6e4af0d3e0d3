import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { requireSystemTool } from '../support/system-tools.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

// bash runs in its default sandbox here; without a working bubblewrap these skip (not under CI=true).
const sandbox = requireSystemTool('bubblewrap', import.meta.url)

beforeAll(() => ensureBuilt(), 120_000)

// Issue 22 item 11: `ledgerloop run` gives bash an allow-listed environment. The secrets below sit in the
// CLI's own environment, as they do on a developer's machine or in CI.
const SECRETS = {
  GITHUB_TOKEN: 'ghp_SECRET_github_0001',
  AWS_SECRET_ACCESS_KEY: 'aws-SECRET-access-0002',
  DATABASE_URL: 'postgres://app:SECRET-db-pass-0003@db.internal/app',
  ANTHROPIC_AUTH_TOKEN: 'sk-ant-SECRET-auth-0004',
  LEDGERLOOP_TOKEN: 'll-SECRET-serve-0005',
}
const ALLOWED = { LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', TZ: 'UTC', USER: 'tester', TERM: 'dumb' }

/** A scripted turn whose one bash call prints the environment. */
function envScript(home: string): string {
  const file = join(home, 'env-script.json')
  writeFileSync(file, JSON.stringify([{ toolCalls: [{ id: 'b1', name: 'bash', arguments: { command: 'env | sort' } }] }, { text: 'done' }]))
  return file
}

/** The text of the bash result in the `--json` event stream. */
function bashOutput(stdout: string): string {
  for (const line of stdout.split('\n')) {
    if (!line.includes('"tool/result"')) continue
    const event = JSON.parse(line) as { data: { message: { content: Array<{ content: Array<{ text: string }> }> }; meta?: Record<string, unknown> } }
    return event.data.message.content[0]?.content[0]?.text ?? ''
  }
  throw new Error(`no tool/result in:\n${stdout}`)
}

/** Everything the session log of a home holds. */
function sessionLog(home: string): string {
  const dir = join(home, 'sessions')
  return readdirSync(dir)
    .filter((name) => name.endsWith('.jsonl'))
    .map((name) => readFileSync(join(dir, name), 'utf8'))
    .join('\n')
}

describe.skipIf(sandbox.skip)('ledgerloop run: the environment of bash', () => {
  it('keeps GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, DATABASE_URL, ANTHROPIC_AUTH_TOKEN and LEDGERLOOP_TOKEN out of bash and the log; locale, TZ, USER, PATH, HOME pass', async () => {
    const home = tempHome()
    const run = await runCli(['run', '--yes', '--json', '--script', envScript(home), 'go'], { env: cliEnv(home, { ...SECRETS, ...ALLOWED }) })
    expect(run.code).toBe(0)
    const text = bashOutput(run.stdout)
    for (const name of Object.keys(SECRETS)) expect(text).not.toMatch(new RegExp(`^${name}=`, 'm'))
    for (const [name, value] of Object.entries(ALLOWED)) expect(text).toMatch(new RegExp(`^${name}=${value}$`, 'm'))
    expect(text).toMatch(/^PATH=/m)
    expect(text).toMatch(new RegExp(`^HOME=${home}$`, 'm'))
    expect(run.stdout).not.toMatch(/SECRET/)
    expect(sessionLog(home)).not.toMatch(/SECRET/)
  }, 30_000)

  it('--bash-env NAME (repeatable, PREFIX_* too) and "bashEnv" in the config file add variables; nothing else comes along', async () => {
    const home = tempHome()
    writeFileSync(join(home, 'config.json'), JSON.stringify({ bashEnv: ['FROM_CONFIG'] }))
    const env = cliEnv(home, { ...SECRETS, CI: 'true', NPM_CONFIG_CACHE: '/var/cache/npm', FROM_CONFIG: 'yes', NOT_NAMED: 'no' })
    const run = await runCli(['run', '--yes', '--json', '--bash-env', 'CI', '--bash-env', 'NPM_CONFIG_*', '--script', envScript(home), 'go'], { env })
    expect(run.code).toBe(0)
    const text = bashOutput(run.stdout)
    expect(text).toMatch(/^CI=true$/m)
    expect(text).toMatch(/^NPM_CONFIG_CACHE=\/var\/cache\/npm$/m)
    expect(text).toMatch(/^FROM_CONFIG=yes$/m)
    expect(text).not.toMatch(/^NOT_NAMED=/m)
    expect(text).not.toMatch(/SECRET/)
  }, 30_000)

  it("a provider key under the user's own variable name is refused by --bash-env (exit 2) and withheld when copied into an allowed variable", async () => {
    const home = tempHome()
    writeFileSync(join(home, 'config.json'), JSON.stringify({ providers: { work: { type: 'openai', baseURL: 'http://127.0.0.1:9/v1', apiKeyEnv: 'WORK_LLM' } } }))
    const key = 'sk-work-provider-SECRET-0006'
    const refused = await runCli(['run', '--yes', '--bash-env', 'WORK_LLM', '--script', envScript(home), 'go'], { env: cliEnv(home, { WORK_LLM: key }) })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('bashEnv: WORK_LLM holds a provider API key and is never passed to bash')
    expect(refused.stdout).not.toContain('session')
    const copied = await runCli(['run', '--yes', '--json', '--bash-env', 'COPY', '--bash-env', 'WORK_*', '--script', envScript(home), 'go'], { env: cliEnv(home, { WORK_LLM: key, COPY: key, WORK_DIR: '/srv/work' }) })
    expect(copied.code).toBe(0)
    const text = bashOutput(copied.stdout)
    expect(text).toMatch(/^WORK_DIR=\/srv\/work$/m)
    expect(text).not.toMatch(/^(COPY|WORK_LLM)=/m)
    expect(sessionLog(home)).not.toContain(key)
    expect(copied.stdout).toMatch(/"envWithheld":\["COPY","WORK_LLM"\]/)
  }, 30_000)
})
