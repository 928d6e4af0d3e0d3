// The MCP servers a client hands to `session/new` (or `load`/`resume`), started through the MCP plugin beside
// those of the config file, so a session gets both sets of tools. The client's values are used as given (no
// `${VAR}` expansion: that is the config file's convenience, and a client's arguments must not pull our
// environment into a server).
import type { McpServer } from '@agentclientprotocol/sdk'
import { HarnessError } from '../errors/harness-error.js'
import { mcpTools, type McpServerConfig, type ToolSet } from '../plugins/mcp/mcp.js'

const NAME_MAX = 40

/** A client's server name as an MCP plugin name (letters, digits, - and _; tools are `mcp__<name>__<tool>`). */
export function serverName(name: string, taken: ReadonlySet<string>): string {
  const base = name.replace(/[^a-zA-Z0-9_-]+/g, '_').slice(0, NAME_MAX) || 'server'
  let candidate = base
  for (let n = 2; taken.has(candidate); n++) candidate = `${base.slice(0, NAME_MAX - String(n).length - 1)}_${n}`
  return candidate
}

/** The MCP plugin's config of one ACP server; undefined for transports it does not speak (SSE). */
export function mcpConfigOf(server: McpServer): McpServerConfig | undefined {
  if ('type' in server && server.type === 'sse') return undefined
  if ('command' in server) {
    return { command: server.command, args: [...server.args], env: Object.fromEntries(server.env.map((v) => [v.name, v.value])) }
  }
  return { url: server.url, headers: Object.fromEntries(server.headers.map((h) => [h.name, h.value])) }
}

/**
 * Starts the client's servers. One that cannot start (or speaks SSE, which ledgerloop does not) costs a line on
 * `warn`, not the session: it gets the tools of the others. Resolves to one set whose `close` stops them all.
 */
export async function startSessionMcpServers(servers: readonly McpServer[], warn: (line: string) => void): Promise<ToolSet> {
  const taken = new Set<string>()
  const started = await Promise.all(
    servers.map(async (server) => {
      const config = mcpConfigOf(server)
      if (config === undefined) {
        warn(`ledgerloop acp: MCP server '${server.name}' uses the SSE transport, which is not supported; give its streamable HTTP url`)
        return undefined
      }
      const name = serverName(server.name, taken)
      taken.add(name)
      try {
        return await mcpTools({ servers: { [name]: config } })
      } catch (error) {
        if (!(error instanceof HarnessError)) throw error
        warn(`ledgerloop acp: MCP server '${server.name}' is not available (${error.code}): ${error.message}`)
        return undefined
      }
    }),
  )
  const sets = started.filter((s): s is ToolSet => s !== undefined)
  return { tools: sets.flatMap((s) => s.tools), close: async () => void (await Promise.allSettled(sets.map((s) => s.close()))) }
}
