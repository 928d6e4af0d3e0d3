import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { DEEPSEEK_MODELS } from '../../src/llm/adapters/deepseek.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { formatCost, sessionCost } from '../../src/views/cost.js'
import type { Loopback } from '../llm/adapters/loopback.js'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from './cli-process.js'
import { startDeepseek } from './deepseek-server.js'

beforeAll(() => ensureBuilt(), 120_000)

let server: Loopback | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const KEY = { DEEPSEEK_API_KEY: 'sk-test-options' }

function workspace(): { home: string; root: string } {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  return { home, root }
}

type WireBody = { messages: { role: string; content: string }[]; reasoning_effort?: string; thinking?: unknown; max_tokens?: number }

describe('request settings reach the wire', () => {
  it('--reasoning-effort, --max-output-tokens and --header are sent; the header value is never logged', async () => {
    const { home, root } = workspace()
    server = await startDeepseek([{ text: ['ok'] }])
    const run = await runCli(
      ['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--reasoning-effort', 'max', '--max-output-tokens', '1234', '--header', 'X-Team: infra-7f3a', 'hi'],
      { env: cliEnv(home, KEY) },
    )
    expect(run.code).toBe(0)
    const request = server.requests[0]
    const body = request?.json as WireBody
    expect(body.reasoning_effort).toBe('max')
    expect(body.thinking).toEqual({ type: 'enabled' })
    expect(body.max_tokens).toBe(1234)
    expect(request?.headers['x-team']).toBe('infra-7f3a')
    const stored = readdirSync(join(home, 'sessions'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
    for (const e of stored) expect(readFileSync(join(e.parentPath, e.name), 'utf8')).not.toContain('infra-7f3a')
  }, 60_000)

  it('a resumed session goes back to the base URL it ran against (and keeps provider and model)', async () => {
    const { home, root } = workspace()
    server = await startDeepseek([{ text: ['first'] }, { text: ['second'] }])
    expect((await runCli(['run', '--provider', 'deepseek', '--model', 'deepseek-v4-pro', '--base-url', server.baseURL, '--root', root, 'one'], { env: cliEnv(home, KEY) })).code).toBe(0)
    const again = await runCli(['run', '-c', 'two'], { env: cliEnv(home, KEY) })
    expect(again.stdout).toContain('second')
    expect(again.code).toBe(0)
    expect(server.requests).toHaveLength(2)
    expect((server.requests[1]?.json as { model: string }).model).toBe('deepseek-v4-pro')
    // The remembered endpoint is an ignorable log event: the log still verifies and replays.
    const [file] = sessionFiles(home)
    const id = (file as string).replace('.jsonl', '')
    expect((await runCli(['verify', id], { env: cliEnv(home) })).code).toBe(0)
    const replay = await runCli(['replay', id, '--json'], { env: cliEnv(home) })
    expect(JSON.parse(replay.stdout)).toMatchObject({ id, ok: true, compared: 2, problems: [] })
  }, 60_000)
})

describe('project instructions', () => {
  it('AGENTS.md in the root and --system join the system prompt, and the transcript says so; --no-project-file skips the file', async () => {
    const { home, root } = workspace()
    writeFileSync(join(root, 'AGENTS.md'), '# House rules\nRun npm test before you finish.\n')
    writeFileSync(join(home, 'extra.txt'), 'Answer in English.')
    server = await startDeepseek([{ text: ['a'] }, { text: ['b'] }])
    const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--system', `@${join(home, 'extra.txt')}`, 'hi'], { env: cliEnv(home, KEY) })
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('instructions: AGENTS.md (2 lines; --no-project-file skips it)')
    expect(run.stdout).toContain(`instructions: --system ${join(home, 'extra.txt')}`)
    const system = (server.requests[0]?.json as WireBody).messages[0] as { role: string; content: string }
    expect(system.role).toBe('system')
    expect(system.content).toContain('Run npm test before you finish.')
    expect(system.content).toContain('Answer in English.')
    const skipped = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--no-project-file', 'hi'], { env: cliEnv(home, KEY) })
    expect(skipped.code).toBe(0)
    expect(JSON.stringify((server.requests[1]?.json as WireBody).messages[0])).not.toContain('House rules')
    expect(skipped.stdout).not.toContain('instructions:')
  }, 60_000)
})

describe('prompts from stdin, --print, cost', () => {
  it('`echo … | run` and `run -` read the prompt from stdin; --print writes only the final answer', async () => {
    const { home, root } = workspace()
    const script = join(home, 's.json')
    writeFileSync(script, JSON.stringify([{ reasoning: 'hmm', text: 'Working on it.', toolCalls: [{ name: 'list', arguments: {} }] }, { text: 'The folder is empty.' }, { text: 'again' }]))
    const piped = await runCli(['run', '--script', script, '--root', root, '--print'], { env: cliEnv(home), input: 'what is here?\n' })
    expect(piped.code).toBe(0)
    expect(piped.stdout).toBe('The folder is empty.\n')
    const dash = await runCli(['run', '--script', script, '--root', root, '-c', '-'], { env: cliEnv(home), input: 'and now?' })
    expect(dash.code).toBe(0)
    const [file] = sessionFiles(home)
    const events = (await new JsonlStore({ dir: join(home, 'sessions') }).read((file as string).replace('.jsonl', ''))).events
    const prompts = events.filter((e) => e.type === 'user/message').map((e) => JSON.stringify(e.data))
    expect(prompts[0]).toContain('what is here?')
    expect(prompts[prompts.length - 1]).toContain('and now?')
  }, 60_000)

  it('the footer, inspect and sessions --json show the cost from the published prices; the config file overrides them', async () => {
    const { home, root } = workspace()
    server = await startDeepseek([{ text: ['priced'], usage: { hit: 100_000, miss: 20_000, output: 5_000 } }])
    const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, 'hi'], { env: cliEnv(home, KEY) })
    expect(run.code).toBe(0)
    const [file] = sessionFiles(home)
    const id = (file as string).replace('.jsonl', '')
    const events = (await new JsonlStore({ dir: join(home, 'sessions') }).read(id)).events
    const expected = sessionCost(events, DEEPSEEK_MODELS)
    expect(expected.total).toBeGreaterThan(0)
    expect(run.stdout).toContain(`── completed · 1 step · tokens 120,000 in (100,000 cache hits) · 5,000 out · ${formatCost(expected.total, 'USD')}`)
    const rows = JSON.parse((await runCli(['sessions', '--json'], { env: cliEnv(home) })).stdout) as { cost: { total: number; currency: string; pricesAsOf: string } }[]
    expect(rows[0]?.cost).toEqual({ total: Math.round(expected.total * 1e6) / 1e6, currency: 'USD', pricesAsOf: '2026-11-15' })
    const inspect = await runCli(['inspect', id], { env: cliEnv(home) })
    expect(inspect.stdout).toContain(`cost ${formatCost(expected.total, 'USD')} (prices as of 2026-11-15`)
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({ pricing: { 'deepseek/deepseek-flash': { currency: 'CNY', inputPerMTok: 10, cachedInputPerMTok: 1, outputPerMTok: 100, asOf: '2026-12-01' } } }),
    )
    const overridden = JSON.parse((await runCli(['sessions', '--json'], { env: cliEnv(home) })).stdout) as { cost: { total: number; currency: string } }[]
    expect(overridden[0]?.cost).toMatchObject({ currency: 'CNY', total: (20_000 * 10 + 100_000 * 1 + 5_000 * 100) / 1_000_000 })
  }, 60_000)
})
