import { Command } from 'commander'
import { DEFAULT_PERMISSION_RULES, type PermissionRules } from '../../plugins/permission.js'
import { builtinTools } from '../../tools/builtin/index.js'
import { CliError, EXIT } from '../cli-error.js'
import { resolveConfig } from '../../app/config.js'
import { startConfiguredMcpServers } from '../../app/mcp-config.js'
import { styleFor } from '../style.js'

/** One row of `ledgerloop tools --json`. */
export interface ToolRow {
  readonly name: string
  readonly description: string
  /** What happens to a call: `allow`, `ask` or `deny`. */
  readonly permission: 'allow' | 'ask' | 'deny'
  /** The rule that decides it (`default: write_file`, `config: bash: git *`, …). */
  readonly rule: string
  /** Rules that decide some calls differently, by their argument (`bash: git *`). */
  readonly subjectRules: readonly string[]
}

function wildcardMatches(pattern: string, text: string): boolean {
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*+/g, '.*').replace(/\?/g, '.')
  return new RegExp(`^${body}$`, 's').test(text)
}

/**
 * The permission a tool's calls get, read the way the permission plugin reads rules: the config's rules first
 * (deny, then ask, then allow), then the defaults; a rule with `: pattern` only decides the calls it matches.
 */
export function permissionOf(tool: string, user: PermissionRules, defaults: PermissionRules = DEFAULT_PERMISSION_RULES): Pick<ToolRow, 'permission' | 'rule' | 'subjectRules'> {
  const subjectRules: string[] = []
  for (const [origin, rules] of [
    ['config', user],
    ['default', defaults],
  ] as const) {
    for (const decision of ['deny', 'ask', 'allow'] as const) {
      for (const rule of rules[decision] ?? []) {
        const colon = rule.indexOf(':')
        const toolPart = (colon < 0 ? rule : rule.slice(0, colon)).trim()
        if (!wildcardMatches(toolPart, tool)) continue
        if (colon >= 0) {
          subjectRules.push(`${decision} '${rule}' (${origin})`)
          continue
        }
        return { permission: decision, rule: `${origin}: ${rule}`, subjectRules }
      }
    }
  }
  return { permission: 'ask', rule: 'no rule matches: ask', subjectRules }
}

/**
 * Who decides a tool's calls, without repeating the tool's own name: `default` or `config` when the rule is the
 * tool's name, the rule itself when it is a pattern (`config: *_file`), `no rule` when none matches.
 */
function decidedBy(row: Pick<ToolRow, 'name' | 'rule'>): string {
  const colon = row.rule.indexOf(': ')
  if (colon < 0 || row.rule.startsWith('no rule')) return 'no rule'
  const origin = row.rule.slice(0, colon)
  const rule = row.rule.slice(colon + 2)
  return rule === row.name ? origin : row.rule
}

/** `ledgerloop tools [--json] [--root DIR]`: the tools an agent would get (built-in and MCP), with their permission rule. */
export async function toolsCommand(flags: { json?: boolean; root?: string; store?: string }): Promise<number> {
  const config = resolveConfig({ ...(flags.root !== undefined ? { root: flags.root } : {}), ...(flags.store !== undefined ? { store: flags.store } : {}) })
  let tools
  try {
    tools = builtinTools({ root: config.root, shell: config.shell })
  } catch (error) {
    throw new CliError(`tool root ${config.root}: ${(error as Error).message}`, EXIT.usage)
  }
  // MCP servers are started to ask for their tools (as run and chat would), then stopped again.
  const mcp = Object.keys(config.mcpServers).length > 0 ? await startConfiguredMcpServers(config.mcpServers, config.root) : undefined
  try {
    tools = [...tools, ...(mcp?.tools ?? [])]
  } finally {
    await mcp?.close()
  }
  const rows: ToolRow[] = tools.map((t) => ({ name: t.name, description: t.description, ...permissionOf(t.name, config.permissions) }))
  if (flags.json === true) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`)
    return EXIT.ok
  }
  const style = styleFor(process.stdout)
  const decided = rows.map((row) => decidedBy(row))
  const nameWidth = Math.max('TOOL'.length, ...rows.map((r) => r.name.length))
  const byWidth = Math.max('DECIDED BY'.length, ...decided.map((d) => d.length))
  const permissionWidth = 'PERMISSION'.length
  const lines = [
    `tools in ${config.root}${config.shell ? '' : ' (the shell is off: "shell": false in the config file)'}`,
    style.dim(`  ${'TOOL'.padEnd(nameWidth)}  ${'PERMISSION'}  ${'DECIDED BY'.padEnd(byWidth)}  WHAT IT DOES`),
  ]
  rows.forEach((row, i) => {
    // Padded before colouring: escape codes have no width on screen but do in padEnd.
    const padded = row.permission.padEnd(permissionWidth)
    const permission = row.permission === 'allow' ? style.green(padded) : row.permission === 'deny' ? style.red(padded) : style.yellow(padded)
    lines.push(`  ${style.bold(row.name.padEnd(nameWidth))}  ${permission}  ${style.dim((decided[i] as string).padEnd(byWidth))}  ${row.description.split(/(?<=\.)\s/)[0] ?? ''}`)
    for (const rule of row.subjectRules) lines.push(`  ${' '.repeat(nameWidth + permissionWidth + 4)}${style.dim(`also: ${rule}`)}`)
  })
  lines.push(style.dim('ask = a question on a terminal; denied in scripts unless --yes. Rules live under "permissions" in the config file.'))
  process.stdout.write(`${lines.join('\n')}\n`)
  return EXIT.ok
}

/** Registers `tools`. */
export function registerTools(program: Command, exit: { code: number }): void {
  program
    .command('tools')
    .description('list the tools an agent would get, with the permission rule that decides their calls')
    .option('--json', 'an array of {name, description, permission, rule, subjectRules}')
    .option('--root <dir>', 'folder the tools work in (default: the current folder)')
    .option('--store <url|dir>', 'accepted for symmetry with every command (tools do not read sessions)')
    .action(async (flags: { json?: boolean; root?: string; store?: string }) => {
      exit.code = await toolsCommand(flags)
    })
}
