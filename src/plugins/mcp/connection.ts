import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { HarnessError } from '../../errors/harness-error.js'

/** A server ledgerloop spawns and talks to over stdin/stdout. */
export interface McpStdioServer {
  /** Executable to run (looked up on `PATH`). */
  readonly command: string
  readonly args?: readonly string[]
  /** Added to a small safe default environment (`PATH`, `HOME`, …); the rest of ours is not inherited. */
  readonly env?: Readonly<Record<string, string>>
  /** Working directory of the server process (default: ours). */
  readonly cwd?: string
}

/** A server reached over MCP's streamable HTTP transport. */
export interface McpHttpServer {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  readonly url: string
  /** Sent with every request (e.g. `Authorization`). */
  readonly headers?: Readonly<Record<string, string>>
}

/** One configured MCP server: spawned over stdio, or reached over streamable HTTP. */
export type McpServerConfig = McpStdioServer | McpHttpServer

/** A tool as an MCP server lists it (the fields ledgerloop uses). */
export interface McpListedTool {
  readonly name: string
  readonly description?: string
  readonly inputSchema: Readonly<Record<string, unknown>>
}

/** The raw `tools/call` result of an MCP server (mapped to content blocks by the caller). */
export interface McpCallResult {
  readonly content?: readonly unknown[]
  readonly structuredContent?: unknown
  readonly isError?: boolean
}

/** Timeouts and restart backoff of one connection. */
export interface McpConnectionTiming {
  /** Connecting, handshake and tool listing together (ms). */
  readonly startupTimeoutMs: number
  /** One tool call (ms); past it the call is a `TOOL_TIMEOUT` error and the server is restarted. */
  readonly callTimeoutMs: number
  /** Wait before the first restart after a crash or timeout; doubles per failed restart (ms). */
  readonly restartBaseDelayMs: number
  /** Cap on the restart wait (ms). */
  readonly restartMaxDelayMs: number
}

type SdkModules = {
  readonly Client: typeof import('@modelcontextprotocol/sdk/client/index.js').Client
  readonly StdioClientTransport: typeof import('@modelcontextprotocol/sdk/client/stdio.js').StdioClientTransport
  readonly StreamableHTTPClientTransport: typeof import('@modelcontextprotocol/sdk/client/streamableHttp.js').StreamableHTTPClientTransport
}

let sdk: Promise<SdkModules> | undefined

/** Loads the optional peer `@modelcontextprotocol/sdk` once; a clear error when it is not installed. */
function loadMcpSdk(): Promise<SdkModules> {
  sdk ??= (async () => {
    try {
      const [client, stdio, http] = await Promise.all([
        import('@modelcontextprotocol/sdk/client/index.js'),
        import('@modelcontextprotocol/sdk/client/stdio.js'),
        import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      ])
      return { Client: client.Client, StdioClientTransport: stdio.StdioClientTransport, StreamableHTTPClientTransport: http.StreamableHTTPClientTransport }
    } catch (error) {
      sdk = undefined
      throw new HarnessError('mcpTools needs the optional dependency @modelcontextprotocol/sdk: npm install @modelcontextprotocol/sdk@1.32.2', 'MISSING_DEPENDENCY', { cause: error })
    }
  })()
  return sdk
}

const STDERR_TAIL_BYTES = 2048
// The SDK's own refusals, made before sending or after receiving (task-only tools, output schema checks): the
// client refused, and the message must not blame the server.
const LOCAL_REFUSAL = /requires task-based execution|has an output schema but did not return|Structured content does not match|Failed to validate structured content/
// The reason a cancelled call carries on the wire (`notifications/cancelled` wants a string).
const CANCEL_REASON = 'the caller cancelled the tool call'
// A call that keeps reporting progress may run this many times its timeout in all.
const PROGRESS_CAP_FACTOR = 10
// How long close() waits for a streamable HTTP server to answer the session's DELETE.
const SESSION_END_WAIT_MS = 2_000
// How the SDK's streamable HTTP client reports a response stream it lost and will not resume.
const LOST_STREAM = /^(SSE stream disconnected|Maximum reconnection attempts|Failed to reconnect)/

type State =
  | { readonly kind: 'up'; readonly client: Client; readonly transport: Transport }
  | { readonly kind: 'starting'; readonly ready: Promise<void> }
  | { readonly kind: 'down'; readonly since: number; readonly reason: string }
  | { readonly kind: 'closed' }

/**
 * One MCP server as ledgerloop keeps it: connected on demand, and after a crash or a timed-out call marked down
 * and restarted by the next call once a backoff has passed (doubling per failed restart, reset by a good one).
 * Restarts are lazy on purpose: a broken server costs nothing until the model calls it again.
 */
export class McpServerConnection {
  readonly name: string
  readonly config: McpServerConfig
  readonly #timing: McpConnectionTiming
  #state: State = { kind: 'down', since: 0, reason: 'not started' }
  #failedRestarts = 0
  // Shutdowns of replaced servers still under way.
  readonly #stopping = new Set<Promise<void>>()
  #stderrTail = ''

  constructor(name: string, config: McpServerConfig, timing: McpConnectionTiming) {
    this.name = name
    this.config = config
    this.#timing = timing
  }

  /** Process id of a running stdio server. */
  get pid(): number | undefined {
    const state = this.#state
    if (state.kind !== 'up') return undefined
    const pid = (state.transport as { pid?: number | null }).pid
    return typeof pid === 'number' ? pid : undefined
  }

  /** Starts the server and lists its tools (all pages). */
  async start(): Promise<McpListedTool[]> {
    await this.#connect()
    return await this.listTools()
  }

  /** The server's tools now. */
  async listTools(): Promise<McpListedTool[]> {
    const client = await this.#client(undefined)
    const tools: McpListedTool[] = []
    let cursor: string | undefined
    do {
      const page = await client.listTools(cursor !== undefined ? { cursor } : {}, { timeout: this.#timing.startupTimeoutMs })
      for (const tool of page.tools) {
        // Task-only tools need the tasks capability, which we do not declare: the SDK would refuse every call.
        if (tool.execution?.taskSupport === 'required') continue
        tools.push({ name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), inputSchema: tool.inputSchema })
      }
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return tools
  }

  /**
   * Calls a tool. A crash, a refused connection or a timeout comes back as a `HarnessError`
   * (`MCP_SERVER_UNAVAILABLE`, `TOOL_TIMEOUT`) the pipeline turns into a tool error; the next call restarts.
   */
  async call(tool: string, args: Record<string, unknown>, signal: AbortSignal): Promise<McpCallResult> {
    const client = await this.#client(signal)
    // The SDK gets a signal of its own per call: its abort listener then dies with the call instead of piling up
    // on the turn's signal, a turn cancelled after the answer sends no `notifications/cancelled` for it, and the
    // reason on the wire is a string (the SDK stringifies whatever the signal was aborted with).
    const own = new AbortController()
    const onAbort = (): void => own.abort(CANCEL_REASON)
    if (signal.aborted) onAbort()
    else signal.addEventListener('abort', onAbort, { once: true })
    try {
      const timeout = this.#timing.callTimeoutMs
      const result = await client.callTool({ name: tool, arguments: args }, undefined, {
        signal: own.signal,
        timeout,
        // Asking for progress (the SDK then sends a progressToken) lets a long call that reports progress live
        // past the timeout, which restarts at each report; the cap keeps a server that reports forever bounded.
        onprogress: () => undefined,
        resetTimeoutOnProgress: true,
        maxTotalTimeout: timeout * PROGRESS_CAP_FACTOR,
      })
      return result as McpCallResult
    } catch (error) {
      if (signal.aborted) throw signal.reason
      const code = (error as { code?: unknown }).code
      if (code === -32001) {
        // A hung server is as good as a crashed one: drop it so the next call gets a fresh process. The shutdown
        // runs in the background (a hung stdio server takes seconds to stop); the answer is due now.
        void this.#markDown(`a call to '${tool}' timed out after ${this.#timing.callTimeoutMs} ms`, { hung: true })
        throw new HarnessError(`MCP server '${this.name}' did not answer '${tool}' within ${this.#timing.callTimeoutMs} ms; it will be restarted`, 'TOOL_TIMEOUT', { cause: error })
      }
      if ((error as Error).name === 'McpError' && LOCAL_REFUSAL.test((error as Error).message)) {
        throw new HarnessError(`the MCP client (not server '${this.name}') refused '${tool}': ${(error as Error).message}`, 'MCP_CALL_FAILED', { cause: error })
      }
      if (code !== -32000 && (error as Error).name === 'McpError' && this.#state.kind === 'up') {
        // A protocol-level error from a live server (unknown tool, invalid params): the model should read it.
        throw new HarnessError(`MCP server '${this.name}' refused '${tool}': ${(error as Error).message}`, 'MCP_CALL_FAILED', { cause: error })
      }
      // The process died, the connection closed, or HTTP failed (refused, reset, session gone): restart next time.
      await this.#markDown(`'${tool}' failed: ${(error as Error).message}`)
      throw new HarnessError(`MCP server '${this.name}' went away during '${tool}'${this.#stderrNote()}; the next call restarts it`, 'MCP_SERVER_UNAVAILABLE', { cause: error })
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
  }

  /** Stops the server (a stdio server's process is ended) and refuses further calls. */
  async close(): Promise<void> {
    const state = this.#state
    this.#state = { kind: 'closed' }
    if (state.kind === 'starting') await state.ready.catch(() => undefined)
    const current = state.kind === 'up' ? state : undefined
    await Promise.all([current !== undefined ? shutDown(current) : undefined, ...this.#stopping])
  }

  /** Kills a running stdio server at once (process exit: no time for a graceful close). */
  killNow(): void {
    this.#signal('SIGKILL')
  }

  #signal(signal: NodeJS.Signals): void {
    const pid = this.pid
    if (pid === undefined) return
    try {
      process.kill(pid, signal)
    } catch {
      // Already gone.
    }
  }

  async #client(signal: AbortSignal | undefined): Promise<Client> {
    for (;;) {
      const state = this.#state
      if (state.kind === 'up') return state.client
      if (state.kind === 'closed') throw new HarnessError(`MCP server '${this.name}' is closed`, 'MCP_SERVER_UNAVAILABLE')
      if (state.kind === 'starting') {
        await state.ready
        continue
      }
      const wait = state.since + this.#backoff() - Date.now()
      if (wait > this.#timing.callTimeoutMs) {
        throw new HarnessError(`MCP server '${this.name}' is down (${state.reason}); next restart in ${Math.ceil(wait / 1000)} s`, 'MCP_SERVER_UNAVAILABLE')
      }
      if (wait > 0) await sleep(wait, signal)
      if (this.#state === state) await this.#connect()
    }
  }

  // Counted from when the server went down; the very first start (since = 0) never waits.
  #backoff(): number {
    return Math.min(this.#timing.restartMaxDelayMs, this.#timing.restartBaseDelayMs * 2 ** this.#failedRestarts)
  }

  #connect(): Promise<void> {
    const first = this.#state.kind === 'down' && this.#state.since === 0
    const ready = this.#open().then(
      (up) => {
        if (this.#state.kind === 'closed') {
          void up.client.close().catch(() => undefined)
          throw new HarnessError(`MCP server '${this.name}' is closed`, 'MCP_SERVER_UNAVAILABLE')
        }
        this.#failedRestarts = 0
        this.#state = up
      },
      (error: unknown) => {
        if (!first) this.#failedRestarts++
        if (this.#state.kind !== 'closed') this.#state = { kind: 'down', since: Date.now(), reason: (error as Error).message }
        throw new HarnessError(`MCP server '${this.name}' could not be started: ${(error as Error).message}${this.#stderrNote()}`, 'MCP_SERVER_UNAVAILABLE', { cause: error })
      },
    )
    this.#state = { kind: 'starting', ready }
    return ready
  }

  async #open(): Promise<Extract<State, { kind: 'up' }>> {
    const { Client, StdioClientTransport, StreamableHTTPClientTransport } = await loadMcpSdk()
    const config = this.config
    let transport: Transport
    if ('command' in config) {
      const stdio = new StdioClientTransport({
        command: config.command,
        args: [...(config.args ?? [])],
        ...(config.env !== undefined ? { env: { ...config.env } } : {}),
        ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
        // Piped, not inherited: a server's log must not scribble over the terminal; its tail explains a crash.
        stderr: 'pipe',
      })
      this.#stderrTail = ''
      stdio.stderr?.on('data', (chunk: Buffer) => {
        this.#stderrTail = (this.#stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES)
      })
      transport = stdio
    } else {
      transport = new StreamableHTTPClientTransport(new URL(config.url), config.headers !== undefined ? { requestInit: { headers: { ...config.headers } } } : {})
    }
    const client = new Client({ name: 'ledgerloop', version: '0.1.0' }, { capabilities: {} })
    const up = { kind: 'up' as const, client, transport }
    client.onclose = () => {
      if (this.#state === up) this.#state = { kind: 'down', since: Date.now(), reason: `the connection closed${this.#stderrNote()}` }
    }
    client.onerror = (error) => {
      // A streamable HTTP response stream that breaks (server gone) leaves its request pending until the
      // timeout; closing the client fails it now. A stdio server's death arrives through onclose instead.
      if (LOST_STREAM.test(error.message) && this.#state === up) void this.#markDown(`the connection broke: ${error.message}`)
    }
    try {
      await client.connect(transport, { timeout: this.#timing.startupTimeoutMs })
    } catch (error) {
      await client.close().catch(() => undefined)
      throw error
    }
    return up
  }

  // Marks the server down at once; the returned promise is its shutdown, which close() also waits for.
  #markDown(reason: string, options: { readonly hung?: boolean } = {}): Promise<void> {
    const state = this.#state
    if (state.kind !== 'up') return Promise.resolve()
    // A hung stdio server gets no grace period: the SDK would wait 2 s for it to leave on its own before its
    // SIGTERM, and meanwhile the process (and its pipes) would outlive the restart.
    if (options.hung === true) this.#signal('SIGTERM')
    this.#state = { kind: 'down', since: Date.now(), reason }
    const stopping = shutDown(state)
    this.#stopping.add(stopping)
    void stopping.finally(() => this.#stopping.delete(stopping))
    return stopping
  }

  #stderrNote(): string {
    const tail = this.#stderrTail.trim()
    return tail === '' ? '' : ` (server stderr: ${tail.slice(-400)})`
  }
}

/**
 * Ends one connection: a streamable HTTP session is terminated first (the spec's DELETE; a server that does not
 * support it answers 405, which the SDK accepts), then the client is closed (a stdio server's process ends).
 */
async function shutDown(up: Extract<State, { kind: 'up' }>): Promise<void> {
  const http = up.transport as { terminateSession?: () => Promise<void> }
  if (typeof http.terminateSession === 'function') {
    // Bounded: a hung server may never answer the DELETE, and closing must still finish.
    let timer: NodeJS.Timeout | undefined
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, SESSION_END_WAIT_MS).unref()))
    await Promise.race([http.terminateSession().catch(() => undefined), bound])
    clearTimeout(timer)
  }
  await up.client.close().catch(() => undefined)
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) return reject(signal.reason)
    const onAbort = (): void => {
      clearTimeout(timer)
      reject(signal?.reason)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
