import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { cliEnv, ensureBuilt, REPO, runCli, tempHome } from './cli-process.js'

beforeAll(() => ensureBuilt(), 120_000)

/** Lines of one `Name:` section of commander's help (until the next blank line). */
function section(help: string, name: string): string[] {
  const lines = help.split('\n')
  const start = lines.indexOf(`${name}:`)
  if (start < 0) return []
  const out: string[] = []
  for (const line of lines.slice(start + 1)) {
    if (line.trim() === '') break
    out.push(line)
  }
  return out
}

/** The long flags commander registered, as its help prints them (`-c, --continue` → `--continue`). */
function helpFlags(help: string): string[] {
  return section(help, 'Options')
    .map((line) => /^ {2}(?:-\w, )?(--[a-z][a-z0-9-]*)/.exec(line)?.[1])
    .filter((flag): flag is string => flag !== undefined && flag !== '--help')
    .sort()
}

/** Documented flags per command: the first column of each `### Options of `a` and `b`` table in docs/cli.md. */
function documentedFlags(): Map<string, string[]> {
  const docs = readFileSync(join(REPO, 'docs/cli.md'), 'utf8')
  const byCommand = new Map<string, string[]>()
  const blocks = docs.split(/^### /m).slice(1)
  for (const block of blocks) {
    const heading = block.split('\n')[0] as string
    if (!heading.startsWith('Options of ')) continue
    const commands = [...heading.matchAll(/`([a-z-]+)`/g)].map((m) => m[1] as string)
    const flags: string[] = []
    for (const row of block.split('\n').filter((l) => l.startsWith('| `'))) {
      const firstCell = row.split(/(?<!\\)\|/)[1] ?? ''
      for (const m of firstCell.matchAll(/(?:^|[\s`])(--[a-z][a-z0-9-]*)/g)) flags.push(m[1] as string)
    }
    for (const command of commands) byCommand.set(command, [...(byCommand.get(command) ?? []), ...flags].sort())
  }
  return byCommand
}

describe('docs/cli.md and --help agree', () => {
  it('every command commander registers is documented flag for flag, and every documented flag exists', async () => {
    const env = cliEnv(tempHome())
    const top = await runCli(['--help'], { env })
    expect(top.code).toBe(0)
    const commands = section(top.stdout, 'Commands')
      .map((line) => /^ {2}([a-z][a-z-]*)/.exec(line)?.[1])
      .filter((name): name is string => name !== undefined && name !== 'help')
    expect(commands).toContain('run')
    const docs = documentedFlags()
    expect(docs.get('ledgerloop'), 'docs/cli.md needs "### Options of `ledgerloop`"').toEqual(helpFlags(top.stdout))
    for (const command of commands) {
      const help = await runCli([command, '--help'], { env })
      expect(help.code, `${command} --help`).toBe(0)
      const registered = helpFlags(help.stdout)
      const documented = docs.get(command)
      expect(documented, `docs/cli.md has no "### Options of \`${command}\`" table`).toBeDefined()
      expect(documented, `flags of '${command}': docs/cli.md vs --help`).toEqual(registered)
      // Every command can be pointed at another store.
      expect(registered, command).toContain('--store')
    }
  }, 120_000)

  it('help has examples and lists the environment variables', async () => {
    const env = cliEnv(tempHome())
    const top = await runCli(['--help'], { env })
    for (const text of ['Examples:', 'Environment:', 'LEDGERLOOP_HOME', 'DEEPSEEK_API_KEY', 'LEDGERLOOP_STORE', 'LEDGERLOOP_IDLE_TIMEOUT']) expect(top.stdout).toContain(text)
    const run = await runCli(['run', '--help'], { env })
    expect(run.stdout).toContain('Examples:')
    expect(run.stdout).toContain('ledgerloop run -c')
  }, 60_000)
})
