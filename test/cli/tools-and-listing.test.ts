import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, runCli, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

it('tools lists the built-in tools with the permission rule that decides their calls, config rules first', async () => {
  const home = tempHome()
  const root = join(home, 'work')
  mkdirSync(root)
  writeFileSync(join(home, 'config.json'), JSON.stringify({ permissions: { allow: ['bash: git status*'], deny: ['write_file'] } }))
  const out = await runCli(['tools', '--json', '--root', root], { env: cliEnv(home) })
  expect(out.code).toBe(0)
  const rows = JSON.parse(out.stdout) as { name: string; permission: string; rule: string; subjectRules: string[] }[]
  expect(rows.map((r) => r.name)).toEqual(['read_file', 'write_file', 'edit_file', 'list', 'grep', 'glob', 'bash'])
  const by = Object.fromEntries(rows.map((r) => [r.name, r]))
  expect(by.read_file).toMatchObject({ permission: 'allow', rule: 'default: read_file' })
  expect(by.write_file).toMatchObject({ permission: 'deny', rule: 'config: write_file' })
  expect(by.edit_file).toMatchObject({ permission: 'ask', rule: 'default: edit_file' })
  expect(by.bash).toMatchObject({ permission: 'ask', rule: 'default: bash', subjectRules: ["allow 'bash: git status*' (config)"] })
  const text = await runCli(['tools', '--root', root], { env: cliEnv(home) })
  // ISSUE-28 item 9: a header row, aligned columns, and the rule not repeating the tool's name.
  const lines = text.stdout.split('\n')
  expect(lines[1]).toMatch(/^\s+TOOL\s+PERMISSION\s+DECIDED BY\s+WHAT IT DOES$/)
  expect(text.stdout).toMatch(/write_file\s+deny\s+config\s+Create a file/)
  expect(text.stdout).toMatch(/read_file\s+allow\s+default\s+Read a text file/)
  const shown = lines.filter((l) => /^\s+(read_file|write_file|bash|list)\s/.test(l))
  // Every row's description starts in the same column as the header's.
  const column = (lines[1] as string).indexOf('WHAT IT DOES')
  for (const row of shown) expect(row.slice(column - 2, column)).toBe('  ')
  for (const row of shown) expect(row[column]).not.toBe(' ')
  expect(text.stdout).toContain("also: allow 'bash: git status*' (config)")
}, 60_000)

it('sessions --limit, --all and --search', async () => {
  const home = tempHome()
  const script = join(home, 's.json')
  writeFileSync(script, JSON.stringify([{ text: 'ok' }]))
  for (const prompt of ['fix the parser', 'write docs', 'fix the lexer']) {
    expect((await runCli(['run', '--script', script, '--root', home, prompt], { env: cliEnv(home) })).code).toBe(0)
  }
  const list = async (...args: string[]) => (JSON.parse((await runCli(['sessions', '--json', ...args], { env: cliEnv(home) })).stdout) as { title: string }[]).map((r) => r.title)
  expect(await list()).toEqual(['fix the lexer', 'write docs', 'fix the parser'])
  expect(await list('--limit', '2')).toEqual(['fix the lexer', 'write docs'])
  expect(await list('--search', 'FIX')).toEqual(['fix the lexer', 'fix the parser'])
  expect(await list('--search', 'fix', '--limit', '1')).toEqual(['fix the lexer'])
  expect(await list('--all')).toHaveLength(3)
  const bad = await runCli(['sessions', '--limit', '0'], { env: cliEnv(home) })
  expect(bad.code).toBe(2)
  // The table says when it was cut, and how to see the rest.
  const table = await runCli(['sessions', '--limit', '2'], { env: cliEnv(home) })
  expect(table.stdout).toContain('showing 2 of 3; --all for all, --limit N for more')
  expect((await runCli(['sessions', '--search', 'fix', '--limit', '1'], { env: cliEnv(home) })).stdout).toContain('showing 1 of 2 matching')
  const full = (await runCli(['sessions'], { env: cliEnv(home) })).stdout
  expect(full).not.toContain('showing')
  // ISSUE-28 item 9: a header row names the columns.
  const [head, first] = full.split('\n') as [string, string]
  expect(head).toMatch(/^ID\s+UPDATED\s+TURNS\s+LAST REASON\s+SIZE\s+COST\s+TITLE$/)
  expect(first.indexOf('completed')).toBe(head.indexOf('LAST REASON'))
  expect(first.indexOf('fix the lexer')).toBe(head.indexOf('TITLE'))
  // A lost index is rebuilt, with a note on stderr, and lists the same.
  rmSync(join(home, 'sessions', '.index'), { recursive: true })
  const rebuilt = await runCli(['sessions', '--json'], { env: cliEnv(home) })
  expect(rebuilt.stderr).toMatch(/note: the session index .* was missing: rebuilt from 3 session files/)
  expect((JSON.parse(rebuilt.stdout) as { title: string }[]).map((r) => r.title)).toEqual(['fix the lexer', 'write docs', 'fix the parser'])
  const reindexed = await runCli(['sessions', '--reindex', '--json'], { env: cliEnv(home) })
  expect(reindexed.stderr).toContain('rebuilt the session index')
}, 120_000)
