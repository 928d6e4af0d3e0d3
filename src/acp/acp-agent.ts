// `ledgerloop acp`: an Agent Client Protocol agent (protocol version 1, over newline-delimited JSON-RPC). Every
// method maps onto what ledgerloop already has: a session is a ledgerloop session (the ACP id is its id), a
// prompt is a followup turn, `session/load` is `resumeAgent` plus a replay of the stored conversation, and a
// cancel is `agent.cancel`. Requests are parsed by the SDK against the protocol's schemas, so bad params get
// -32602, an unknown method -32601 and a line that is not JSON -32700, and the process goes on.
import { statSync } from 'node:fs'
import { isAbsolute } from 'node:path'
import { randomUUID } from 'node:crypto'
import { agent as agentApp, PROTOCOL_VERSION, RequestError, type AgentApp, type AgentContext, type InitializeResponse, type ListSessionsResponse, type McpServer, type SessionUpdate, type Stream } from '@agentclientprotocol/sdk'
import { HarnessError } from '../errors/harness-error.js'
import type { CancelCause } from '../session/events.js'
import { UsageError } from '../app/usage-error.js'
import { AcpSession, type AcpSessionSetup, type SessionOpening } from './acp-session.js'
import { parseSessionCommand, SESSION_COMMANDS } from './session-commands.js'
import { listAcpSessions } from './session-listing.js'

/** Options of {@link startAcpAgent}. */
export interface AcpAgentOptions extends AcpSessionSetup {
  /** The tool root of a session whose client names no `cwd` (an empty string). */
  readonly defaultRoot: string
  /** Reported as `agentInfo.version`. */
  readonly version: string
}

/** A running ACP agent on one connection. */
export interface AcpAgent {
  /** Resolves once the connection has closed (the client ended stdin) and every session is released. */
  readonly finished: Promise<void>
  /**
   * Closes every session (running turns are cancelled with `cause`, default `{kind:'disposed'}`; logs flushed),
   * then the connection.
   */
  close(cause?: CancelCause): Promise<void>
}

/** What `initialize` answers: honest capabilities (what the handlers below implement, nothing more). */
function initializeResponse(version: string): InitializeResponse {
  return {
    // A client asking for another version gets the one we speak; it decides whether to go on.
    protocolVersion: PROTOCOL_VERSION,
    agentCapabilities: {
      loadSession: true,
      promptCapabilities: { image: false, audio: false, embeddedContext: true },
      mcpCapabilities: { http: true, sse: false },
      sessionCapabilities: { list: {}, resume: {}, close: {} },
    },
    authMethods: [],
    agentInfo: { name: 'ledgerloop', title: 'ledgerloop', version },
  }
}

/**
 * Serves ACP on `stream` until the client closes it. Sessions are opened by `session/new`, `session/load` and
 * `session/resume` and live until `session/close` or the end of the connection.
 */
export function startAcpAgent(options: AcpAgentOptions, stream: Stream): AcpAgent {
  const sessions = new Map<string, AcpSession>()
  // What the client said it can do (initialize): sessions opened later use its file reads when offered.
  let readsFiles = false
  // Opening and closing one session id happen one at a time (a load racing a close of the same session).
  const queues = new Map<string, Promise<void>>()
  const exclusive = async <T>(sessionId: string, work: () => Promise<T>): Promise<T> => {
    const before = queues.get(sessionId) ?? Promise.resolve()
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const mine = before.then(() => released)
    queues.set(sessionId, mine)
    await before
    try {
      return await work()
    } finally {
      release()
      if (queues.get(sessionId) === mine) queues.delete(sessionId)
    }
  }

  const live = (sessionId: string): AcpSession => {
    const session = sessions.get(sessionId)
    if (session === undefined) throw RequestError.sessionNotFound(sessionId)
    return session
  }

  const open = (opening: SessionOpening, cwd: string, mcpServers: readonly McpServer[], client: AgentContext): Promise<AcpSession> => {
    const root = cwd === '' ? options.defaultRoot : cwd
    if (!isAbsolute(root)) throw RequestError.invalidParams({ cwd }, `cwd must be an absolute path, got ${JSON.stringify(cwd)}`)
    if (statSync(root, { throwIfNoEntry: false })?.isDirectory() !== true) throw RequestError.invalidParams({ cwd }, `cwd ${JSON.stringify(root)} is not a directory`)
    const acpId = opening.id
    return exclusive(acpId, async () => {
      const current = sessions.get(acpId)
      let taken = opening
      if (current !== undefined) {
        // Loaded or resumed again (perhaps with another cwd or other MCP servers): taken up afresh, in the
        // ledgerloop session it runs now (a rewind's fork, if the client ran /undo or /rewind).
        if (current.prompting) throw RequestError.invalidRequest({ sessionId: acpId }, 'the session is running a prompt: cancel it first')
        sessions.delete(acpId)
        taken = { kind: 'resume', id: current.agent.id }
        await current.close()
      }
      const notify = (update: SessionUpdate): void => {
        void client.notify('session/update', { sessionId: acpId, update }).catch(() => undefined)
      }
      try {
        const session = await AcpSession.open(options, taken, root, mcpServers, { context: client, notify, readsFiles }, acpId)
        sessions.set(session.id, session)
        return session
      } catch (error) {
        throw asRequestError(error, opening.id)
      }
    })
  }

  const app: AgentApp = agentApp({ name: 'ledgerloop' })
    .onRequest('initialize', ({ params }) => {
      readsFiles = params.clientCapabilities?.fs?.readTextFile === true
      return initializeResponse(options.version)
    })
    .onRequest('session/new', async ({ params, client }) => {
      const session = await open({ kind: 'new', id: randomUUID() }, params.cwd, params.mcpServers, client)
      advertiseCommands(client, session.id)
      return { sessionId: session.id }
    })
    .onRequest('session/load', async ({ params, client }) => {
      const session = await open({ kind: 'resume', id: params.sessionId }, params.cwd, params.mcpServers, client)
      // The whole conversation goes out before the response, as the protocol asks.
      for (const update of session.replay()) await client.notify('session/update', { sessionId: session.id, update })
      advertiseCommands(client, session.id)
      return {}
    })
    .onRequest('session/resume', async ({ params, client }) => {
      const session = await open({ kind: 'resume', id: params.sessionId }, params.cwd, params.mcpServers ?? [], client)
      advertiseCommands(client, session.id)
      return {}
    })
    .onRequest('session/list', async ({ params }): Promise<ListSessionsResponse> => listAcpSessions(options.store, params))
    .onRequest('session/prompt', async ({ params }) => {
      try {
        const session = live(params.sessionId)
        const command = parseSessionCommand(params.prompt)
        return await (command === undefined ? session.prompt(params.prompt) : session.runCommand(command))
      } catch (error) {
        throw asRequestError(error, params.sessionId)
      }
    })
    .onRequest('session/close', ({ params }) =>
      exclusive(params.sessionId, async () => {
        const session = live(params.sessionId)
        sessions.delete(session.id)
        // The person closed it: a turn still running ends as their cancel would end it.
        await session.close({ kind: 'user' })
        return {}
      }),
    )
    .onNotification('session/cancel', ({ params }) => {
      sessions.get(params.sessionId)?.cancel()
    })

  const connection = app.connect(stream)
  const closeSessions = async (cause?: CancelCause): Promise<void> => {
    const all = [...sessions.values()]
    sessions.clear()
    const closed = await Promise.allSettled(all.map((s) => s.close(cause)))
    for (const result of closed) if (result.status === 'rejected') options.warn(`ledgerloop acp: closing a session failed: ${describe(result.reason)}`)
  }
  const finished = connection.closed.then(() => closeSessions())
  return {
    finished,
    async close(cause) {
      await closeSessions(cause)
      connection.close()
      await finished
    },
  }
}

/**
 * Tells the client which session commands `sessionId` offers. Sent once the request that opened the session
 * has been answered (a timer runs after the response is written): a client learns a new session's id only
 * from that response, so an update naming it any earlier could not be placed.
 */
function advertiseCommands(client: AgentContext, sessionId: string): void {
  setTimeout(() => {
    void client.notify('session/update', { sessionId, update: { sessionUpdate: 'available_commands_update', availableCommands: [...SESSION_COMMANDS] } }).catch(() => undefined)
  }, 0)
}

/** A failure as the JSON-RPC error a client can act on (the code in `data`); a protocol error passes through. */
function asRequestError(error: unknown, sessionId: string): RequestError {
  if (error instanceof RequestError) return error
  if (error instanceof HarnessError && error.code === 'SESSION_NOT_FOUND') return RequestError.sessionNotFound(sessionId)
  if (error instanceof HarnessError && (error.code === 'INVALID_SESSION_ID' || error.code === 'INVALID_CONFIG')) return RequestError.invalidParams({ sessionId, code: error.code }, error.message)
  if (error instanceof HarnessError) return new RequestError(-32603, error.message, { sessionId, code: error.code })
  if (error instanceof UsageError) return RequestError.invalidParams({ sessionId }, error.message)
  return new RequestError(-32603, describe(error), { sessionId })
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}
