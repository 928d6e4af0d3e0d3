import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { join, sep } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)]))
}

// A port nothing listens on: bound once by us, then released.
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as { port: number }).port
  await new Promise((r) => server.close(r))
  return port
}

describe('usage errors exit 2 with one clear message', () => {
  it('a missing API key names the variable and the offline demo, before any session exists', async () => {
    const home = tempHome()
    const run = await runCli(['run', 'hello'], { env: cliEnv(home) })
    expect(run.code).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toContain('DEEPSEEK_API_KEY is not set')
    expect(run.stderr).toContain('ledgerloop run --demo')
    expect(run.stderr.trim().split('\n')).toHaveLength(3)
    expect(sessionFiles(home)).toEqual([])
    const anthropic = await runCli(['chat', '--provider', 'anthropic'], { env: cliEnv(home) })
    expect(anthropic.code).toBe(2)
    expect(anthropic.stderr).toContain('ANTHROPIC_API_KEY is not set')
  })

  it('a bad config file names the file and the field', async () => {
    const home = tempHome()
    writeFileSync(join(home, 'config.json'), JSON.stringify({ providers: { local: { type: 'llama', baseURL: 'http://127.0.0.1:1/v1' } }, maxSteps: 0 }))
    const run = await runCli(['run', '--script', 'examples/scripts/demo.json', 'x'], { env: cliEnv(home) })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain(join(home, 'config.json'))
    expect(run.stderr).toContain('field "providers.local.type"')
    expect(run.stderr).toContain('field "maxSteps"')
    writeFileSync(join(home, 'config.json'), '{ not json')
    const broken = await runCli(['config'], { env: cliEnv(home) })
    expect(broken.code).toBe(2)
    expect(broken.stderr).toContain('is not valid JSON')
  })

  it('unknown commands, unknown options, bad numbers and missing arguments', async () => {
    const env = cliEnv(tempHome())
    for (const args of [['frobnicate'], ['run', '--frob', 'x'], ['run', '--max-steps', 'many', 'x'], ['inspect'], ['run', '--script', 'no/such/file.json', 'x']]) {
      const run = await runCli(args, { env })
      expect(run.code, args.join(' ')).toBe(2)
      expect(run.stderr).not.toBe('')
    }
    const help = await runCli(['--help'], { env })
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('verify')
  })
})

describe('config', () => {
  it('merges file < environment < flags and shows key variables without their values', async () => {
    const home = tempHome()
    writeFileSync(
      join(home, 'config.json'),
      JSON.stringify({ provider: 'local', model: 'from-file', providers: { local: { type: 'openai', baseURL: 'http://127.0.0.1:1/v1', apiKeyEnv: 'LOCAL_KEY' } }, maxSteps: 7 }),
    )
    const run = await runCli(['config', '--json'], { env: cliEnv(home, { LOCAL_KEY: 'sk-local-secret-value', LEDGERLOOP_MODEL: 'from-env' }) })
    expect(run.code).toBe(0)
    expect(run.stdout).not.toContain('sk-local-secret-value')
    const shown = JSON.parse(run.stdout)
    expect(shown).toMatchObject({ provider: 'local', model: 'from-env', maxSteps: 7, sources: { provider: 'config', model: 'env', maxSteps: 'config' } })
    expect(shown.providers.local).toMatchObject({ type: 'openai', apiKeyEnv: 'LOCAL_KEY', apiKey: '**** (set)' })
  })
})

it('a sentinel API key never reaches stdout, stderr or any file under LEDGERLOOP_HOME', async () => {
  const home = tempHome()
  const sentinel = 'sk-SENTINEL-7f3a9c1e5b'
  // One attempt: the closed port fails fast with TRANSPORT, no retry waits.
  writeFileSync(join(home, 'config.json'), JSON.stringify({ retry: { maxAttempts: 1 } }))
  const env = cliEnv(home, { DEEPSEEK_API_KEY: sentinel })
  const port = await closedPort()
  const run = await runCli(['run', '--base-url', `http://127.0.0.1:${port}`, 'say hi'], { env })
  expect(run.code).toBe(1)
  expect(run.stdout).toContain('error TRANSPORT')
  const json = await runCli(['run', '--json', '--base-url', `http://127.0.0.1:${port}`, 'say hi'], { env })
  expect(json.code).toBe(1)
  const config = await runCli(['config'], { env })
  const [file] = sessionFiles(home)
  const inspect = await runCli(['inspect', (file as string).replace('.jsonl', '')], { env })
  for (const out of [run, json, config, inspect]) {
    expect(out.stdout).not.toContain(sentinel)
    expect(out.stderr).not.toContain(sentinel)
  }
  const files = filesUnder(home)
  // Two session logs, plus the session index beside them; none may hold the key.
  expect(files.filter((f) => f.endsWith('.jsonl') && !f.includes(`${sep}.index${sep}`))).toHaveLength(2)
  for (const f of files) if (statSync(f).isFile()) expect(readFileSync(f, 'utf8'), f).not.toContain(sentinel)
})
