import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import type { Loopback } from '../llm/adapters/loopback.js'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'
import { startDeepseek } from './deepseek-server.js'

beforeAll(() => ensureBuilt(), 120_000)

let server: Loopback | undefined
afterEach(async () => {
  await server?.close()
  server = undefined
})

const KEY = { DEEPSEEK_API_KEY: 'sk-test-output-schema' }
const SCHEMA = { type: 'object', properties: { verdict: { type: 'string', enum: ['ok', 'bad'] } }, required: ['verdict'], additionalProperties: false }

function workspace(): { home: string; root: string; schemaFile: string } {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  const schemaFile = join(home, 'verdict.schema.json')
  writeFileSync(schemaFile, JSON.stringify(SCHEMA))
  return { home, root, schemaFile }
}

const lines = (stdout: string): Record<string, unknown>[] =>
  stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('run --output-schema FILE', () => {
  it('--json: the request asks DeepSeek for JSON with the schema, and the last stdout line is the parsed answer', async () => {
    const { home, root, schemaFile } = workspace()
    server = await startDeepseek([{ text: ['{"verdict":', '"ok"}'] }])
    const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--output-schema', schemaFile, '--json', 'judge'], { env: cliEnv(home, KEY) })
    expect(run.code).toBe(0)
    const body = server.requests[0]?.json as { response_format?: unknown; messages: { role: string; content: string }[] }
    expect(body.response_format).toEqual({ type: 'json_object' })
    expect(body.messages[0]?.content).toContain('"enum":["ok","bad"]')
    const out = lines(run.stdout)
    expect(out.at(-1)).toEqual({ type: 'output', turn: 1, output: { verdict: 'ok' } })
    // Everything before it is an event of the log, the turn's end included.
    expect(out.slice(0, -1).every((e) => typeof e.seq === 'number')).toBe(true)
  })

  it('an answer that stays invalid after the repairs exits 1 with OUTPUT_INVALID and prints no output line', async () => {
    const { home, root, schemaFile } = workspace()
    server = await startDeepseek([{ text: ['{"verdict":"maybe"}'] }, { text: ['{"verdict":"unsure"}'] }, { text: ['no'] }])
    const run = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--output-schema', schemaFile, '--json', 'judge'], { env: cliEnv(home, KEY) })
    expect(run.code).toBe(1)
    expect(server.requests).toHaveLength(3)
    expect(run.stderr).toContain('OUTPUT_INVALID')
    const out = lines(run.stdout)
    expect(out.some((e) => e.type === 'output')).toBe(false)
    const end = out.find((e) => e.type === 'turn/end') as { data: { reason: { kind: string; error: { code: string } } } }
    expect(end.data.reason).toMatchObject({ kind: 'error', error: { code: 'OUTPUT_INVALID' } })
  })

  it('a missing or unusable schema file is a usage error (exit 2) before any request', async () => {
    const { home, root } = workspace()
    server = await startDeepseek([{ text: ['{}'] }])
    const missing = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--output-schema', join(home, 'nope.json'), 'x'], { env: cliEnv(home, KEY) })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('--output-schema: cannot read')
    const bad = join(home, 'bad.json')
    writeFileSync(bad, '{"type": "no-such-type"}')
    const invalid = await runCli(['run', '--provider', 'deepseek', '--base-url', server.baseURL, '--root', root, '--output-schema', bad, 'x'], { env: cliEnv(home, KEY) })
    expect(invalid.code).toBe(2)
    expect(invalid.stderr).toContain('--output-schema')
    expect(server.requests).toHaveLength(0)
  })
})
