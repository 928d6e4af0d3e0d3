import { readdirSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { BASH_HEAD_BYTES, BASH_TAIL_BYTES } from '../../../src/tools/builtin/bash.js'
import { DEFAULT_BASH_ENV, resolveShellEnvPolicy, shellEnv } from '../../../src/tools/builtin/shell-env.js'
import { builtinTools } from '../../../src/tools/builtin/index.js'
import { HarnessError } from '../../../src/errors/harness-error.js'
import { HeadTailCapture } from '../../../src/tools/builtin/output-capture.js'
import { requireSystemTool } from '../../support/system-tools.js'
import { call, failure, okText, tempDir, toolsFor } from './helpers.js'

// Most of these run bash in its default sandbox; without a working bubblewrap they skip (not under CI=true).
const sandbox = requireSystemTool('bubblewrap', import.meta.url)
const sandboxModes = sandbox.skip ? (['off'] as const) : (['bwrap', 'off'] as const)

// Sandboxed commands live in their own pid namespace, so their `$$` means nothing out here. Each test's
// sleepers carry a unique duration instead, and the host's /proc is searched for them by command line.
let serial = 0
function sleepers(): { token: string; command: string } {
  const token = `30.${process.pid}${++serial}`
  return { token, command: `sleep ${token} & sleep ${token} & wait` }
}

/** Host pids of running (non-zombie) processes whose command line is `sleep TOKEN`. */
function sleepersRunning(token: string): number[] {
  const found: number[] = []
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8') !== `sleep\0${token}\0`) continue
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
      if (!/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2))) found.push(Number(name))
    } catch {
      // gone while we looked
    }
  }
  return found
}

const started: number[] = []
afterEach(() => {
  // Belt and braces: a failing test must not leave sleepers behind for the next one.
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone, which is the point
    }
  }
})

async function waitForSleepers(token: string, count: number): Promise<number[]> {
  const deadline = Date.now() + 5000
  for (;;) {
    const pids = sleepersRunning(token)
    if (pids.length >= count) {
      started.push(...pids)
      return pids
    }
    if (Date.now() > deadline) throw new Error(`expected ${count} sleepers ${token}, found ${pids.length}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** No sleeper of the test is running any more (orphaned zombies are dead and tolerated). */
function expectNothingLeft(token: string): void {
  expect(sleepersRunning(token)).toEqual([])
}

describe('bash', () => {
  it('is only offered with shell: true', async () => {
    const root = await tempDir()
    expect(toolsFor(root).bash).toBeUndefined()
    expect(toolsFor(root, true).bash?.concurrencySafe).toBe(false)
  })

  it.skipIf(sandbox.skip)('runs in the workspace root and reports output (stdout and stderr) and exit code', async () => {
    const root = await tempDir()
    const text = okText(await call(toolsFor(root, true).bash, { command: 'pwd; echo oops >&2' }))
    expect(text).toBe(`${root}\noops\n\n[exit code 0]`)
  })

  it.skipIf(sandbox.skip)('turns a non-zero exit into an isError result the model reads, with output and code', async () => {
    const root = await tempDir()
    const result = await call(toolsFor(root, true).bash, { command: 'echo before; exit 3' })
    expect(result.kind).toBe('ok')
    if (result.kind !== 'ok') return
    expect(result.output).toMatchObject({ isError: true, errorCode: 'COMMAND_FAILED', meta: { exitCode: 3 } })
    expect(result.text).toBe('before\n\n[exit code 3]')
  })

  it.skipIf(sandbox.skip)('times out with TOOL_TIMEOUT, keeps the output so far, and leaves no process of the group behind', async () => {
    const root = await tempDir()
    const { token, command } = sleepers()
    const outcome = call(toolsFor(root, true).bash, { command: `echo started; ${command}`, timeoutMs: 1500 })
    await waitForSleepers(token, 2)
    const result = failure(await outcome)
    expect(result.code).toBe('TOOL_TIMEOUT')
    expect(result.message).toContain('timed out after 1500 ms')
    expect(result.message).toContain('started')
    expectNothingLeft(token)
  })

  it('escalates to SIGKILL when the group ignores SIGTERM (sandbox off: no namespace to tear down)', async () => {
    const root = await tempDir()
    const { token, command } = sleepers()
    const before = Date.now()
    const outcome = call(toolsFor(root, true, { sandbox: 'off' }).bash, { command: `trap '' TERM; ${command}`, timeoutMs: 1000 })
    await waitForSleepers(token, 2)
    expect(failure(await outcome).code).toBe('TOOL_TIMEOUT')
    expect(Date.now() - before).toBeGreaterThanOrEqual(3000)
    expectNothingLeft(token)
  })

  it.skipIf(sandbox.skip)('tears a sandbox down at once even when the command ignores SIGTERM', async () => {
    const root = await tempDir()
    const { token, command } = sleepers()
    const outcome = call(toolsFor(root, true).bash, { command: `trap '' TERM; ${command}`, timeoutMs: 1000 })
    await waitForSleepers(token, 2)
    expect(failure(await outcome).code).toBe('TOOL_TIMEOUT')
    expectNothingLeft(token)
  })

  it.each(sandboxModes)('on cancel (ctx.signal) kills the whole process group and fails with ABORTED (sandbox %s)', async (sandbox) => {
    const root = await tempDir()
    const { token, command } = sleepers()
    const controller = new AbortController()
    const pending = call(toolsFor(root, true, { sandbox }).bash, { command }, controller.signal)
    await waitForSleepers(token, 2)
    controller.abort()
    const result = failure(await pending)
    expect(result.code).toBe('ABORTED')
    expectNothingLeft(token)
  })

  it('does not start at all when already cancelled', async () => {
    const root = await tempDir()
    const controller = new AbortController()
    controller.abort()
    expect(failure(await call(toolsFor(root, true).bash, { command: 'touch ran' }, controller.signal)).code).toBe('ABORTED')
    await expect(readFile(path.join(root, 'ran'))).rejects.toThrow()
  })

  it.each(sandboxModes)('stops background jobs still running when the command exits, instead of hanging on their pipes (sandbox %s)', async (sandbox) => {
    const root = await tempDir()
    const { token } = sleepers()
    const before = Date.now()
    const outcome = await call(toolsFor(root, true, { sandbox }).bash, { command: `sleep ${token} & echo done` })
    expect(Date.now() - before).toBeLessThan(5000)
    expect(okText(outcome)).toBe('done\n\n[exit code 0; background processes still running when the command exited were stopped]')
    expectNothingLeft(token)
  })

  it.skipIf(sandbox.skip)('does not claim to have stopped background jobs that already finished', async () => {
    const root = await tempDir()
    const text = okText(await call(toolsFor(root, true).bash, { command: '(exit 0) & sleep 0.1; echo done' }))
    expect(text).toBe('done\n\n[exit code 0]')
  })

  it.skipIf(sandbox.skip)('caps output at head + tail with a note of exactly how many bytes were cut', async () => {
    const root = await tempDir()
    const command = `printf 'START'; head -c 1000000 /dev/zero | tr '\\0' a; printf 'END'`
    const result = await call(toolsFor(root, true).bash, { command })
    const text = okText(result)
    const total = 5 + 1_000_000 + 3
    const cut = total - BASH_HEAD_BYTES - BASH_TAIL_BYTES
    expect(text.startsWith('START')).toBe(true)
    expect(text).toContain(`[… ${cut} bytes of output cut here …]`)
    expect(text.endsWith(`END\n\n[exit code 0; ${cut} bytes of output were cut from the middle]`)).toBe(true)
    expect(Buffer.byteLength(text)).toBeLessThan(BASH_HEAD_BYTES + BASH_TAIL_BYTES + 300)
    expect(result.kind === 'ok' && result.output.meta).toMatchObject({ cutBytes: cut })
  })

  it('validates timeoutMs before running', async () => {
    const root = await tempDir()
    expect((await call(toolsFor(root, true).bash, { command: 'true', timeoutMs: 0 })).kind).toBe('invalid')
    expect((await call(toolsFor(root, true).bash, { command: 'true', timeoutMs: 3_600_000 })).kind).toBe('invalid')
  })
})

describe('HeadTailCapture', () => {
  it('keeps everything under the cap and exactly head + tail above it, across many small chunks', () => {
    const small = new HeadTailCapture(4, 4)
    small.push(Buffer.from('abcdefgh'))
    expect(small.render()).toEqual({ text: 'abcdefgh', cutBytes: 0 })
    const big = new HeadTailCapture(3, 5)
    for (const char of 'abcdefghijklmnopqrstuvwxyz') big.push(Buffer.from(char))
    expect(big.render()).toEqual({ text: 'abc\n\n[… 18 bytes of output cut here …]\n\nvwxyz', cutBytes: 18 })
    expect(big.total).toBe(26)
  })
})

// Issue 22 item 11: commands get an allow-listed environment, so credentials in the harness's environment
// (which the model could print into the log) never reach them.
describe('bash environment', () => {
  const SECRETS = {
    GITHUB_TOKEN: 'ghp_SECRET_github_0001',
    AWS_SECRET_ACCESS_KEY: 'aws-SECRET-access-0002',
    DATABASE_URL: 'postgres://app:SECRET-db-pass-0003@db.internal/app',
    ANTHROPIC_AUTH_TOKEN: 'sk-ant-SECRET-auth-0004',
    LEDGERLOOP_TOKEN: 'll-SECRET-serve-0005',
    OPENAI_API_KEY: 'sk-SECRET-openai-0006',
  }
  const ALLOWED = { LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8', LC_TIME: 'C', TZ: 'Europe/Berlin', USER: 'tester', LOGNAME: 'tester', TERM: 'dumb' }
  const restore: Array<() => void> = []
  function setEnv(values: Record<string, string>): void {
    for (const [name, value] of Object.entries(values)) {
      const before = process.env[name]
      process.env[name] = value
      restore.push(() => (before === undefined ? delete process.env[name] : (process.env[name] = before)))
    }
  }
  afterEach(() => {
    for (const undo of restore.splice(0).reverse()) undo()
  })

  it.each(sandboxModes)('by default passes only the allow-list: tokens, cloud keys and database URLs are absent, locale and PATH present (sandbox %s)', async (sandbox) => {
    const root = await tempDir()
    setEnv({ ...SECRETS, ...ALLOWED, SOME_PROJECT_SETTING: 'not-allowed-by-default' })
    const text = okText(await call(toolsFor(root, true, { sandbox }).bash, { command: 'env' }))
    expect(text).not.toMatch(/SECRET/)
    for (const name of [...Object.keys(SECRETS), 'SOME_PROJECT_SETTING']) expect(text).not.toMatch(new RegExp(`^${name}=`, 'm'))
    for (const [name, value] of Object.entries(ALLOWED)) expect(text).toMatch(new RegExp(`^${name}=${value}$`, 'm'))
    expect(text).toMatch(/^PATH=/m)
    expect(text).toMatch(/^HOME=/m)
  })

  it.skipIf(sandbox.skip)('bashEnv adds names and NAME_* prefixes; the secrets stay out', async () => {
    const root = await tempDir()
    setEnv({ ...SECRETS, CI: 'true', NPM_CONFIG_CACHE: '/var/cache/npm', NPM_CONFIG_PREFIX: '/opt/npm', NPMX: 'no' })
    const tools = toolsFor(root, true, { bashEnv: ['CI', 'NPM_CONFIG_*', 'GITHUB_TOKEN'] })
    const text = okText(await call(tools.bash, { command: 'env' }))
    expect(text).toMatch(/^CI=true$/m)
    expect(text).toMatch(/^NPM_CONFIG_CACHE=\/var\/cache\/npm$/m)
    expect(text).toMatch(/^NPM_CONFIG_PREFIX=\/opt\/npm$/m)
    expect(text).not.toMatch(/^NPMX=/m)
    // Named explicitly, GITHUB_TOKEN is the user's choice; the others were not named.
    expect(text).toMatch(/^GITHUB_TOKEN=ghp_SECRET_github_0001$/m)
    expect(text.replace(/^GITHUB_TOKEN=.*$/m, '')).not.toMatch(/SECRET/)
  })

  it('refuses a bashEnv name that is a provider key (by name, or declared in secretEnv) with INVALID_CONFIG, and bad names too', async () => {
    const root = await tempDir()
    const refused = (options: { bashEnv?: unknown; secretEnv?: unknown }): string => {
      try {
        builtinTools({ root, shell: true, ...(options as object) })
      } catch (error) {
        if (error instanceof HarnessError) return `${error.code}: ${error.message}`
        throw error
      }
      return 'accepted'
    }
    expect(refused({ bashEnv: ['DEEPSEEK_API_KEY'] })).toMatch(/^INVALID_CONFIG: bashEnv: DEEPSEEK_API_KEY holds a provider API key/)
    expect(refused({ bashEnv: ['MY_LLM_SECRET'], secretEnv: ['MY_LLM_SECRET'] })).toMatch(/^INVALID_CONFIG: bashEnv: MY_LLM_SECRET holds a provider API key/)
    expect(refused({ bashEnv: ['NOT-A-NAME'] })).toMatch(/^INVALID_CONFIG: bashEnv: "NOT-A-NAME" is not an environment variable name/)
    expect(refused({ bashEnv: 'CI' })).toMatch(/^INVALID_CONFIG: bashEnv must be an array/)
    expect(refused({ secretEnv: ['$X'] })).toMatch(/^INVALID_CONFIG: secretEnv/)
    expect(refused({ bashEnv: ['CI', 'LC_*'], secretEnv: ['MY_LLM_SECRET'] })).toBe('accepted')
  })

  it.skipIf(sandbox.skip)('withholds an allowed variable that carries a provider key under another name, and names it (not its value) in meta', async () => {
    const root = await tempDir()
    const key = 'sk-custom-provider-key-SECRET-0007'
    setEnv({ MY_LLM_SECRET: key, COPIED: key, WRAPPED: `Bearer ${key}`, CI: 'true', OPENAI_API_KEY: 'sk-SECRET-openai-0006', ALSO_COPIED: 'sk-SECRET-openai-0006' })
    const tools = toolsFor(root, true, { bashEnv: ['COPIED', 'WRAPPED', 'CI', 'ALSO_COPIED', 'MY_*'], secretEnv: ['MY_LLM_SECRET'] })
    const result = await call(tools.bash, { command: 'env' })
    const text = okText(result)
    expect(text).not.toMatch(/SECRET/)
    expect(text).toMatch(/^CI=true$/m)
    expect(result.kind === 'ok' && result.output.meta).toMatchObject({ envWithheld: ['ALSO_COPIED', 'COPIED', 'MY_LLM_SECRET', 'WRAPPED'] })
  })

  it('shellEnv: the documented default list, and nothing outside it', () => {
    expect(DEFAULT_BASH_ENV).toEqual(['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'LANG', 'LANGUAGE', 'LC_*', 'TERM', 'COLORTERM', 'NO_COLOR', 'TZ', 'TMPDIR'])
    const source = { PATH: '/bin', HOME: '/h', LC_CTYPE: 'C', GITHUB_TOKEN: 't', SSH_AUTH_SOCK: '/run/agent', HTTP_PROXY: 'http://u:p@proxy' }
    expect(shellEnv(source)).toEqual({ env: { PATH: '/bin', HOME: '/h', LC_CTYPE: 'C' }, withheld: [] })
    expect(shellEnv(source, resolveShellEnvPolicy(['SSH_AUTH_SOCK']))).toEqual({ env: { PATH: '/bin', HOME: '/h', LC_CTYPE: 'C', SSH_AUTH_SOCK: '/run/agent' }, withheld: [] })
  })
})
