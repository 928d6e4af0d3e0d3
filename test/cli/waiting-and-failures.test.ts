import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Loopback } from '../llm/adapters/loopback.js'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from './cli-process.js'
import { deepseekSse, startDeepseek } from './deepseek-server.js'
import { startPty } from './pty.js'

beforeAll(() => ensureBuilt(), 120_000)

let server: Loopback | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const KEY = { DEEPSEEK_API_KEY: 'sk-test-waiting' }

function home(): { home: string; root: string } {
  const h = tempHome()
  const root = join(h, 'work')
  mkdirSync(root)
  return { home: h, root }
}

describe('ISSUE-11 defect 2: waiting shows', () => {
  it('a terminal shows a spinner with the model and the seconds waited, kept through a retry (↻ 429, retrying in 1.0 s (attempt 2/4))', async () => {
    const { home: h, root } = home()
    server = await startDeepseek([
      { status: 429, headers: { 'content-type': 'application/json', 'retry-after': '1' }, chunks: ['{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}'] },
      // The first token comes 1.5 s after the headers.
      { chunks: [': keep-alive\n\n', ...deepseekSse({ text: ['at last'] })], gapMs: 150 },
    ])
    const pty = startPty(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, 'hello'], { env: cliEnv(h, KEY) })
    expect(await pty.exited()).toBe(0)
    const raw = pty.raw()
    expect(raw).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] waiting for deepseek-flash at 127\.0\.0\.1:\d+\S* \S*· \d+ s/)
    expect(raw).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] ↻ 429, retrying in 1\.0 s \(attempt 2\/4\)/)
    expect(pty.screen()).toContain('at last')
  }, 60_000)

  it('off a terminal, --verbose writes one status line per request and retry on stderr; without it stderr stays quiet', async () => {
    const { home: h, root } = home()
    const replies = [
      { status: 503, headers: { 'content-type': 'application/json' }, chunks: ['{"error":{"message":"busy"}}'] },
      { text: ['fine'] },
    ]
    server = await startDeepseek(replies)
    const verbose = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--verbose', 'hello'], { env: cliEnv(h, KEY) })
    expect(verbose.code).toBe(0)
    expect(verbose.stderr).toContain('ledgerloop: waiting for deepseek · deepseek-flash')
    expect(verbose.stderr).toMatch(/ledgerloop: ↻ 503, retrying in [\d.]+ m?s \(attempt 2\/4\)/)
    await server.close()
    server = await startDeepseek(replies)
    const quiet = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, 'hello'], { env: cliEnv(h, KEY) })
    expect(quiet.code).toBe(0)
    expect(quiet.stderr).toBe('')
  }, 60_000)
})

describe('ISSUE-11 defect 3: idle timeout and retry budget', () => {
  it('the defaults fit interactive use (90 s idle, 4 attempts) and the worst case is printed', async () => {
    const { home: h } = home()
    const shown = await runCli(['config', '--json'], { env: cliEnv(h) })
    const config = JSON.parse(shown.stdout) as { idleTimeoutMs: number; retry: { maxAttempts: number; maxDelayMs: number }; worstCaseRequestMs: number }
    expect(config.idleTimeoutMs).toBe(90_000)
    expect(config.retry.maxAttempts).toBe(4)
    expect(config.worstCaseRequestMs).toBe(4 * 90_000 + 3 * 10_000)
    const text = await runCli(['config'], { env: cliEnv(h, { LEDGERLOOP_IDLE_TIMEOUT: '30', LEDGERLOOP_RETRIES: '1' }) })
    expect(text.stdout).toMatch(/idleTimeoutMs\s+30000\s+\(env\)/)
    expect(text.stdout).toContain('a stalled server is given up after at most 1 m 10 s per request')
  }, 60_000)

  it('SSE comments (: keep-alive) are activity: a stream that only sends them for longer than the idle timeout still succeeds', async () => {
    const { home: h, root } = home()
    server = await startDeepseek([{ chunks: [...Array.from({ length: 12 }, () => ': keep-alive\n\n'), ...deepseekSse({ text: ['still here'] })], gapMs: 100 }])
    const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--idle-timeout', '0.5', 'hello'], { env: cliEnv(h, KEY) })
    expect(run.stdout).toContain('still here')
    expect(run.code).toBe(0)
    expect(server.requests).toHaveLength(1)
  }, 60_000)

  it('a silent server fails after --idle-timeout and the --retries budget, with a hint', async () => {
    const { home: h, root } = home()
    server = await startDeepseek([{ chunks: [], after: 'hang' }, { chunks: [], after: 'hang' }, { chunks: [], after: 'hang' }])
    const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--idle-timeout', '1', '--retries', '1', 'hello'], {
      env: cliEnv(h, KEY),
    })
    expect(run.code).toBe(1)
    expect(server.requests).toHaveLength(2)
    expect(run.stderr).toContain('ledgerloop: turn ended error TIMEOUT')
    expect(run.stderr).toContain('hint: the server went silent; raise --idle-timeout SECONDS')
    expect(run.stderr).toMatch(/gave up after 2 attempts \(\d+ ms of retry waits; --retries and --idle-timeout set the budget\)/)
    // Defect 12: the final error goes to stderr, the footer stays on stdout.
    expect(run.stdout).toMatch(/── error TIMEOUT/)
  }, 60_000)
})

describe('ISSUE-11 defect 7: bad base URLs', () => {
  it('an invalid --base-url or LEDGERLOOP_BASE_URL is a usage error before any session exists', async () => {
    const { home: h } = home()
    const flag = await runCli(['run', '--base-url', 'localhost:8000', 'hello'], { env: cliEnv(h, KEY) })
    expect(flag.code).toBe(2)
    expect(flag.stderr).toContain("--base-url 'localhost:8000'")
    const env = await runCli(['run', 'hello'], { env: cliEnv(h, { ...KEY, LEDGERLOOP_BASE_URL: 'not a url' }) })
    expect(env.code).toBe(2)
    expect(env.stderr).toContain('LEDGERLOOP_BASE_URL')
    expect(sessionFiles(h)).toEqual([])
  }, 60_000)

  it('a plain JSON answer to a streaming request is reported as such, not retried, and the hint names /v1', async () => {
    const { home: h, root } = home()
    server = await startDeepseek([{ status: 200, headers: { 'content-type': 'application/json' }, chunks: ['{"object":"list","data":[]}'] }])
    const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, 'hello'], { env: cliEnv(h, KEY) })
    expect(run.code).toBe(1)
    expect(server.requests).toHaveLength(1)
    expect(run.stderr).toContain('NOT_STREAMING')
    expect(run.stderr).toContain('with application/json instead of an event stream')
    expect(run.stderr).toContain(`hint: --base-url probably lacks /v1 (try ${server.baseURL}/v1)`)
  }, 60_000)

  it('a 404 with an HTML page is reported by its title, not retried, and the hint names /v1', async () => {
    const { home: h, root } = home()
    const page = '<!DOCTYPE html><html><head><title>404 Not Found</title><style>body{}</style></head><body><h1>Not Found</h1></body></html>'
    server = await startDeepseek([{ status: 404, headers: { 'content-type': 'text/html' }, chunks: [page] }])
    const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, 'hello'], { env: cliEnv(h, KEY) })
    expect(run.code).toBe(1)
    expect(server.requests).toHaveLength(1)
    expect(run.stderr).toContain('HTML page: 404 Not Found')
    expect(run.stderr).not.toContain('<html>')
    expect(run.stderr).toContain('hint: --base-url probably lacks /v1')
  }, 60_000)
})
