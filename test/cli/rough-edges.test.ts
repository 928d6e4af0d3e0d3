import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/session/events.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { cliEnv, ensureBuilt, runCli, sessionFiles, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

function workspace(): { home: string; root: string; script: string } {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  const script = join(home, 'script.json')
  writeFileSync(script, JSON.stringify([{ text: 'done' }]))
  return { home, root, script }
}

async function onlySession(home: string): Promise<SessionEvent[]> {
  const [file] = sessionFiles(home)
  return (await new JsonlStore({ dir: join(home, 'sessions') }).read((file as string).replace('.jsonl', ''))).events
}

describe('ISSUE-28 item 9: rough edges of the terminal', () => {
  it('a piped prompt loses the newline echo added (`echo "…" | ledgerloop run`), and keeps the ones inside it', async () => {
    const { home, root, script } = workspace()
    const run = await runCli(['run', '--script', script, '--root', root], { env: cliEnv(home), input: 'write piped.md\nand more\n\n' })
    expect(run.code).toBe(0)
    const prompt = (await onlySession(home)).find((e) => e.type === 'user/message')
    expect((prompt?.data as { content: { text: string }[] }).content[0]?.text).toBe('write piped.md\nand more')
  }, 60_000)

  it('serve --help lists only the options serve takes; the refused ones still get their message', async () => {
    const { home } = workspace()
    const help = await runCli(['serve', '--help'], { env: cliEnv(home) })
    expect(help.code).toBe(0)
    for (const refused of ['--session', '--continue', '--print', '--raw', '--attach', '--json']) expect(help.stdout).not.toContain(refused)
    expect(help.stdout).toContain('--port')
    expect(help.stdout).toContain('--max-cost')
    const refused = await runCli(['serve', '--print'], { env: cliEnv(home) })
    expect(refused.code).toBe(2)
    expect(refused.stderr).toContain('-c, --print, --raw and --attach are options of run and chat')
  }, 60_000)

  it('a typo in a config file key gets a "did you mean", at the top level and inside an entry', async () => {
    const { home } = workspace()
    writeFileSync(join(home, 'config.json'), JSON.stringify({ modle: 'x', retry: { maxAttemps: 2 }, colourful: true }))
    const shown = await runCli(['config'], { env: cliEnv(home) })
    expect(shown.code).toBe(2)
    expect(shown.stderr).toContain('field "modle": unknown field (did you mean "model"?)')
    expect(shown.stderr).toContain('field "retry.maxAttemps": unknown field (did you mean "maxAttempts"?)')
    expect(shown.stderr).toMatch(/field "colourful": unknown field\n/)
  }, 60_000)

  it("a new chat's heading names the endpoint; chat -c prints one heading and the resumed session, nothing twice", async () => {
    const { home, root, script } = workspace()
    const fresh = await runCli(['chat', '--root', root], { env: cliEnv(home, { DEEPSEEK_API_KEY: 'sk-test-heading' }), input: '/exit\n' })
    expect(fresh.code).toBe(0)
    expect(fresh.stdout).toContain(`ledgerloop chat · deepseek · deepseek-flash · https://api.deepseek.com · tools in ${root} · /help for commands`)
    expect((await runCli(['run', '--script', script, '--root', root, 'first'], { env: cliEnv(home) })).code).toBe(0)
    const [file] = sessionFiles(home)
    const id = (file as string).replace('.jsonl', '')
    const resumed = await runCli(['chat', '-c', '--script', script], { env: cliEnv(home), input: '/exit\n' })
    expect(resumed.code).toBe(0)
    const heading = resumed.stdout.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('[scripted]'))
    expect(heading[0]).toBe(`ledgerloop chat · scripted · scripted · tools in ${root} · /help for commands`)
    expect(heading[1]).toBe(`resumed ${id}`)
    expect(resumed.stdout.split(`tools in ${root}`)).toHaveLength(2)
  }, 60_000)
})
