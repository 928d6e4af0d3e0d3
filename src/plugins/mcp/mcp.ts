import { createHash } from 'node:crypto'
import { HarnessError } from '../../errors/harness-error.js'
import type { JsonValue } from '../../json/lossless.js'
import { defineTool, type DefinedTool } from '../../tools/define-tool.js'
import type { JsonSchema, ToolDefinition } from '../../tools/types.js'
import { McpServerConnection, type McpConnectionTiming, type McpListedTool, type McpServerConfig } from './connection.js'
import { mcpResultToOutput } from './content.js'

export type { McpHttpServer, McpServerConfig, McpStdioServer } from './connection.js'

/** Options of {@link mcpTools}. */
export interface McpToolsOptions {
  /** Servers by name; the name becomes the middle of each tool name (`mcp__<server>__<tool>`). */
  readonly servers: Readonly<Record<string, McpServerConfig>>
  /** One tool call, in ms (default 60 000). A call past it is a `TOOL_TIMEOUT` error and the server restarts. */
  readonly timeoutMs?: number
  /** Starting a server and listing its tools, in ms (default 30 000). */
  readonly startupTimeoutMs?: number
  /** Backoff between restarts of a crashed server: first wait and cap, in ms (defaults 500 and 30 000). */
  readonly restart?: { readonly baseDelayMs?: number; readonly maxDelayMs?: number }
}

/** The tools of a set of MCP servers, and the handle that stops them. */
export interface ToolSet {
  /** One tool per server tool, named `mcp__<server>__<tool>`; register them like any tool. */
  readonly tools: ToolDefinition[]
  /** Stops every server (stdio processes are ended). Call it when the harness closes. Idempotent. */
  close(): Promise<void>
}

const SERVER_NAME = /^[a-zA-Z0-9_-]{1,40}$/
const TOOL_NAME_MAX = 64

/**
 * Connects to MCP servers (`@modelcontextprotocol/sdk`, an optional peer dependency) and turns each server
 * tool into a ledgerloop tool named `mcp__<server>__<tool>`. Stdio servers are spawned now and ended by
 * `close()` (and killed if the process exits first); streamable HTTP servers are connected to. Arguments are
 * validated against the server's JSON Schema before anything is sent (`INVALID_ARGS`), results become content
 * blocks, and a server that crashes or times out fails that call with a tool error (`MCP_SERVER_UNAVAILABLE`,
 * `TOOL_TIMEOUT`) and is restarted, with backoff, by the next call. Permission rules see the tools by name, so
 * `mcp__fs__*` names a whole server.
 * @example
 * ```ts
 * const mcp = await mcpTools({ servers: {
 *   fs: { command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '.'] },
 *   docs: { url: 'http://127.0.0.1:3000/mcp' },
 * } })
 * const harness = createHarness({ tools: mcp.tools, plugins: [permissionPlugin({ rules: { allow: ['mcp__docs__*'] } })] })
 * // …
 * await harness.close()
 * await mcp.close()
 * ```
 * @throws HarnessError `INVALID_CONFIG` for a bad server entry, `MCP_SERVER_UNAVAILABLE` when a server cannot
 * be started, `INVALID_TOOL` when a server lists a tool whose schema cannot be compiled (in both cases the
 * servers already started are stopped again), `MISSING_DEPENDENCY` without the SDK
 */
export async function mcpTools(options: McpToolsOptions): Promise<ToolSet> {
  const timing = timingOf(options)
  const entries = Object.entries(checkServers(options?.servers))
  const connections = entries.map(([name, config]) => new McpServerConnection(name, config, timing))
  for (const c of connections) liveConnections.add(c)
  watchProcessExit()
  let closed: Promise<void> | undefined
  const close = (): Promise<void> => {
    closed ??= (async () => {
      await Promise.allSettled(connections.map((c) => c.close()))
      for (const c of connections) liveConnections.delete(c)
    })()
    return closed
  }
  const listed = await Promise.allSettled(connections.map((c) => c.start()))
  const failed = listed.findIndex((r) => r.status === 'rejected')
  if (failed >= 0) {
    await close()
    const reason = (listed[failed] as PromiseRejectedResult).reason as Error
    throw new HarnessError(reason.message, reason instanceof HarnessError ? reason.code : 'MCP_SERVER_UNAVAILABLE', { cause: reason })
  }
  const tools: DefinedTool[] = []
  const taken = new Set<string>()
  try {
    connections.forEach((connection, i) => {
      for (const listedTool of (listed[i] as PromiseFulfilledResult<McpListedTool[]>).value) {
        const name = uniqueName(toolName(connection.name, listedTool.name), taken)
        tools.push(serverTool(connection, listedTool, name))
      }
    })
  } catch (error) {
    // A tool whose schema cannot be compiled (INVALID_TOOL, naming it): stop what was started.
    await close()
    throw error
  }
  return { tools, close }
}

// Every connection of every open tool set, so one exit listener can kill what close() did not stop: a process
// that exits must not leave servers behind (they would hold pipes and ports).
const liveConnections = new Set<McpServerConnection>()
let exitWatched = false

function watchProcessExit(): void {
  if (exitWatched) return
  exitWatched = true
  process.once('exit', () => {
    for (const c of liveConnections) c.killNow()
  })
}

// `mcp__<server>__<tool>`, with characters model APIs refuse replaced, shortened with a hash if too long.
function toolName(server: string, tool: string): string {
  const raw = `mcp__${server}__${tool.replace(/[^a-zA-Z0-9_-]/g, '_')}`
  if (raw.length <= TOOL_NAME_MAX) return raw
  const hash = createHash('sha256').update(tool).digest('hex').slice(0, 8)
  return `${raw.slice(0, TOOL_NAME_MAX - 9)}_${hash}`
}

function uniqueName(name: string, taken: Set<string>): string {
  let candidate = name
  for (let n = 2; taken.has(candidate); n++) candidate = `${name.slice(0, TOOL_NAME_MAX - String(n).length - 1)}_${n}`
  taken.add(candidate)
  return candidate
}

function serverTool(connection: McpServerConnection, listed: McpListedTool, name: string): DefinedTool {
  const tool = defineTool<Record<string, unknown>>({
    name,
    description: listed.description ?? `${listed.name} (MCP server '${connection.name}')`,
    parameters: parametersOf(listed),
    execute: async (args, ctx) => mcpResultToOutput(await connection.call(listed.name, args, ctx.signal), connection.name, listed.name),
  })
  return tool as unknown as DefinedTool
}

/**
 * The server's input schema as the model and the validator see it. `$schema` is dropped: the validator
 * follows the keywords it knows and would refuse an unknown meta-schema URI; a schema without `type` is an
 * object schema by MCP's rules.
 */
function parametersOf(listed: McpListedTool): JsonSchema {
  const { $schema: _dropped, ...schema } = (typeof listed.inputSchema === 'object' && listed.inputSchema !== null ? listed.inputSchema : {}) as Record<string, JsonValue>
  return { type: 'object', ...schema } as JsonSchema
}

function checkServers(servers: unknown): Record<string, McpServerConfig> {
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    throw new HarnessError('mcpTools: servers must be an object of server configs by name', 'INVALID_CONFIG')
  }
  const out: Record<string, McpServerConfig> = {}
  for (const [name, config] of Object.entries(servers as Record<string, unknown>)) {
    const where = `mcpTools: server '${name}'`
    if (!SERVER_NAME.test(name)) throw new HarnessError(`${where}: names are 1-40 letters, digits, - or _`, 'INVALID_CONFIG')
    if (typeof config !== 'object' || config === null) throw new HarnessError(`${where}: expected {command, args?, env?} or {url, headers?}`, 'INVALID_CONFIG')
    const c = config as Record<string, unknown>
    if (typeof c.command === 'string' && c.command !== '') {
      if (c.args !== undefined && !(Array.isArray(c.args) && c.args.every((a) => typeof a === 'string'))) throw new HarnessError(`${where}: args must be an array of strings`, 'INVALID_CONFIG')
      checkStringRecord(c.env, `${where}: env`)
      if (c.cwd !== undefined && typeof c.cwd !== 'string') throw new HarnessError(`${where}: cwd must be a string`, 'INVALID_CONFIG')
      out[name] = config as McpServerConfig
    } else if (typeof c.url === 'string') {
      let url: URL
      try {
        url = new URL(c.url)
      } catch {
        throw new HarnessError(`${where}: url ${JSON.stringify(c.url)} is not a URL`, 'INVALID_CONFIG')
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new HarnessError(`${where}: url must be http(s)`, 'INVALID_CONFIG')
      checkStringRecord(c.headers, `${where}: headers`)
      out[name] = config as McpServerConfig
    } else {
      throw new HarnessError(`${where}: needs a command (stdio) or a url (streamable HTTP)`, 'INVALID_CONFIG')
    }
  }
  return out
}

function checkStringRecord(value: unknown, where: string): void {
  if (value === undefined) return
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw new HarnessError(`${where} must be an object of strings`, 'INVALID_CONFIG')
  }
}

function timingOf(options: McpToolsOptions): McpConnectionTiming {
  const positive = (value: number | undefined, fallback: number, what: string): number => {
    if (value === undefined) return fallback
    if (!Number.isFinite(value) || value <= 0) throw new HarnessError(`mcpTools: ${what} must be a positive number of ms`, 'INVALID_CONFIG')
    return value
  }
  return {
    callTimeoutMs: positive(options?.timeoutMs, 60_000, 'timeoutMs'),
    startupTimeoutMs: positive(options?.startupTimeoutMs, 30_000, 'startupTimeoutMs'),
    restartBaseDelayMs: positive(options?.restart?.baseDelayMs, 500, 'restart.baseDelayMs'),
    restartMaxDelayMs: positive(options?.restart?.maxDelayMs, 30_000, 'restart.maxDelayMs'),
  }
}
