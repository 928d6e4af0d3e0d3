import { isAbsolute, resolve } from 'node:path'
import { z } from 'zod'
import { HarnessError } from '../errors/harness-error.js'
import { mcpTools, type McpServerConfig, type ToolSet } from '../plugins/mcp/mcp.js'
import type { ToolDefinition } from '../tools/types.js'
import { UsageError } from './usage-error.js'

const text = z.string().min(1)

/**
 * One entry of the config file's `mcpServers`, in the shape other agent CLIs use: `{command, args?, env?, cwd?}`
 * for a server spawned over stdio, `{url, headers?}` (optionally `"type": "http"`) for streamable HTTP.
 * `${VAR}` in args, env, url and headers is replaced from the environment, so tokens stay out of the file.
 */
const mcpServerEntry = z
  .strictObject({
    type: z.enum(['stdio', 'http', 'streamable-http', 'streamableHttp', 'sse']).optional(),
    command: text.optional(),
    args: z.array(z.string()).optional(),
    env: z.record(z.string(), z.string()).optional(),
    cwd: text.optional(),
    url: text.optional(),
    headers: z.record(z.string(), z.string()).optional(),
    disabled: z.boolean().optional(),
  })
  .superRefine((entry, ctx) => {
    if (entry.type === 'sse') ctx.addIssue({ code: 'custom', message: 'the old SSE transport is not supported: give the server\'s streamable HTTP url' })
    else if ((entry.command === undefined) === (entry.url === undefined)) ctx.addIssue({ code: 'custom', message: 'needs either a command (stdio) or a url (streamable HTTP)' })
    else if (entry.type === 'stdio' && entry.command === undefined) ctx.addIssue({ code: 'custom', message: '"type": "stdio" needs a command' })
    else if (entry.type !== undefined && entry.type !== 'stdio' && entry.url === undefined) ctx.addIssue({ code: 'custom', message: `"type": "${entry.type}" needs a url` })
  })

/** The config file's `mcpServers` section: servers by name (letters, digits, - and _). */
export const mcpServersSchema = z.record(z.string().regex(/^[a-zA-Z0-9_-]{1,40}$/, 'MCP server names are 1-40 letters, digits, - or _'), mcpServerEntry)

/** One validated `mcpServers` entry. */
export type McpServerEntry = z.infer<typeof mcpServerEntry>

/** `${VAR}` replaced from `env`; a variable that is not set is a usage error naming the server. */
function expand(value: string, server: string, env: NodeJS.ProcessEnv): string {
  return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_all, name: string) => {
    const found = env[name]
    if (found === undefined) throw new UsageError(`MCP server '${server}' uses \${${name}}, which is not set in the environment`)
    return found
  })
}

function expandRecord(record: Readonly<Record<string, string>> | undefined, server: string, env: NodeJS.ProcessEnv): Record<string, string> | undefined {
  return record === undefined ? undefined : Object.fromEntries(Object.entries(record).map(([k, v]) => [k, expand(v, server, env)]))
}

/** The `mcpTools` config of an entry: variables expanded, a relative `cwd` taken from the tool root. */
export function mcpServerConfig(name: string, entry: McpServerEntry, root: string, env: NodeJS.ProcessEnv = process.env): McpServerConfig {
  if (entry.command !== undefined) {
    const serverEnv = expandRecord(entry.env, name, env)
    return {
      command: expand(entry.command, name, env),
      args: (entry.args ?? []).map((a) => expand(a, name, env)),
      ...(serverEnv !== undefined ? { env: serverEnv } : {}),
      ...(entry.cwd !== undefined ? { cwd: isAbsolute(entry.cwd) ? entry.cwd : resolve(root, entry.cwd) } : {}),
    }
  }
  const headers = expandRecord(entry.headers, name, env)
  return { url: expand(entry.url ?? '', name, env), ...(headers !== undefined ? { headers } : {}) }
}

/**
 * Starts every enabled server of the config. A server that cannot start costs a warning, not the run: the
 * agent gets the tools of the others. Resolves to one tool set whose `close` stops them all.
 */
export async function startConfiguredMcpServers(
  servers: Readonly<Record<string, McpServerEntry>>,
  root: string,
  env: NodeJS.ProcessEnv = process.env,
  warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): Promise<ToolSet> {
  const enabled = Object.entries(servers).filter(([, entry]) => entry.disabled !== true)
  const configs = enabled.map(([name, entry]) => [name, mcpServerConfig(name, entry, root, env)] as const)
  const started = await Promise.all(
    configs.map(async ([name, config]) => {
      try {
        return await mcpTools({ servers: { [name]: config } })
      } catch (error) {
        if (!(error instanceof HarnessError)) throw error
        warn(`ledgerloop: MCP server '${name}' is not available (${error.code}): ${error.message}`)
        return undefined
      }
    }),
  )
  const sets = started.filter((s): s is ToolSet => s !== undefined)
  const tools: ToolDefinition[] = sets.flatMap((s) => s.tools)
  return { tools, close: async () => void (await Promise.allSettled(sets.map((s) => s.close()))) }
}
