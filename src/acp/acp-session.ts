// One ACP session = one ledgerloop session, live in this process: its agent on a harness composed for the
// session's own cwd (the built-in tools confined to it, its AGENTS.md, the config file's and the client's MCP
// servers), sharing the process's store. The composition is the one of `run` and `chat` (app/compose.ts); only
// the permission questions differ: they go to the client.
import { randomUUID } from 'node:crypto'
import type { AgentContext, ContentBlock as AcpContentBlock, McpServer, PromptResponse, SessionUpdate } from '@agentclientprotocol/sdk'
import { RequestError } from '@agentclientprotocol/sdk'
import { composeHarness, type Approvals } from '../app/compose.js'
import type { EffectiveConfig } from '../app/config.js'
import type { HarnessExtensions } from '../app/harness-extensions.js'
import { startConfiguredMcpServers } from '../app/mcp-config.js'
import { projectInstructions } from '../app/project-instructions.js'
import { CLI_ROUTE_EVENT, type ModelRoute } from '../app/providers.js'
import type { Harness, RewindResult } from '../harness/harness.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import { createUserMessage } from '../llm/messages.js'
import type { ContentBlock } from '../llm/types.js'
import type { Agent } from '../loop/agent.js'
import type { LedgerHooks } from '../loop/hook-types.js'
import type { CancelCause } from '../session/events.js'
import type { SessionStore } from '../store/types.js'
import type { NetworkPolicy } from '../tools/builtin/bash.js'
import { Workspace } from '../tools/builtin/workspace-path.js'
import type { SandboxMode } from '../tools/builtin/sandbox.js'
import { clientPermissionAsk } from './client-permission.js'
import { readThroughClient } from './client-reads.js'
import { startSessionMcpServers } from './session-mcp.js'
import { describeSessionRewind, lastEndedTurn, type SessionCommand } from './session-commands.js'
import { replayUpdates, streamUpdates } from './session-updates.js'
import { promptOutcome } from './stop-reason.js'

/** What every session of one `ledgerloop acp` process is composed from (the options of `run`). */
export interface AcpSessionSetup {
  readonly config: EffectiveConfig
  readonly route: ModelRoute
  /** The process's store, shared by every session (each session's writer holds its own lock). */
  readonly store: SessionStore
  readonly sandbox: SandboxMode
  readonly network: NetworkPolicy
  /** `--yes`: every permission question is approved in advance (recorded `by: 'flag'`); else the client is asked. */
  readonly yes: boolean
  /** Span export, shared by every session (from `--otlp`). */
  readonly plugins: readonly Plugin<HookRegistrar<LedgerHooks>>[]
  /** Where warnings go (stderr: stdout carries only JSON-RPC). */
  readonly warn: (line: string) => void
  readonly env: NodeJS.ProcessEnv
}

/** How a session is opened: a new one, or a stored one taken up again (by `session/load` or `session/resume`). */
export type SessionOpening = { readonly kind: 'new'; readonly id: string } | { readonly kind: 'resume'; readonly id: string }

/** The client a session is opened for. */
export interface SessionClient {
  /** Where permission questions and file reads go. */
  readonly context: AgentContext
  /** Sends one `session/update`. */
  readonly notify: (update: SessionUpdate) => void
  /** The client offered `fs/read_text_file`: `read_file` reads its buffers (see client-reads.ts). */
  readonly readsFiles: boolean
}

/** The options every agent of a session is created or resumed with. */
interface AgentRoute {
  readonly provider: string
  readonly model: string
  readonly cwd: string
}

/** What a session re-attaches to each agent it runs (its first, and the one a rewind continues in). */
type Attach = (agent: Agent) => () => void

/**
 * A live ACP session. Its ACP id is the ledgerloop session it was opened on; after `/undo` or `/rewind N` it
 * runs the fork the rewind made under the same ACP id (the client's id keeps working for the connection), so
 * `agent.id` may differ from `id`.
 */
export class AcpSession {
  /** The id the client holds. */
  readonly id: string
  readonly cwd: string
  readonly #harness: Harness
  readonly #attach: Attach
  readonly #agentOptions: AgentRoute
  readonly #notify: (update: SessionUpdate) => void
  #agent: Agent
  #stopListening: () => void
  #prompting = false
  #cancelled = false
  // The last rewind, while the session still sits where it left it (no turn since): `/rewind N --force` with
  // the same N then redoes it with force from the session it rewound, instead of finding nothing to rewind.
  #lastRewind: { readonly from: string; readonly toTurn: number; readonly landedIn: string } | undefined

  private constructor(id: string, cwd: string, harness: Harness, agent: Agent, attach: Attach, notify: (update: SessionUpdate) => void, agentOptions: AgentRoute) {
    this.id = id
    this.cwd = cwd
    this.#harness = harness
    this.#agent = agent
    this.#attach = attach
    this.#notify = notify
    this.#agentOptions = agentOptions
    this.#stopListening = attach(agent)
  }

  /** The agent of the ledgerloop session this ACP session runs now (a rewind's fork after `/undo`). */
  get agent(): Agent {
    return this.#agent
  }

  /**
   * Composes the session's harness on `cwd` and creates or resumes its agent; updates go to the client from
   * then on. A failure closes what was started (MCP servers included) and rethrows. `acpId` is the id the
   * client holds (default: the session opened), which differs once a rewind has moved the session to a fork.
   * @throws UsageError for a cwd the tools cannot work in; HarnessError `SESSION_NOT_FOUND`, `SESSION_LOCKED`, …
   */
  static async open(setup: AcpSessionSetup, opening: SessionOpening, cwd: string, mcpServers: readonly McpServer[], client: SessionClient, acpId = opening.id): Promise<AcpSession> {
    const extensions = await sessionExtensions(setup, cwd, mcpServers)
    const approvals: Approvals = setup.yes ? { kind: 'yes' } : { kind: 'ask', ask: clientPermissionAsk(client.context, acpId) }
    let harness: Harness
    try {
      harness = composeHarness({
        config: setup.config,
        route: setup.route,
        root: cwd,
        store: borrowed(setup.store),
        sandbox: setup.sandbox,
        network: setup.network,
        approvals,
        instructions: projectInstructions(setup.config.system, cwd, setup.config.projectFile).text,
        extensions,
      })
    } catch (error) {
      await extensions.close()
      throw error
    }
    try {
      const options = { provider: setup.route.provider, model: setup.route.model, cwd }
      const agent = opening.kind === 'new' ? await harness.createAgent({ ...options, sessionId: opening.id }) : await harness.resumeAgent(opening.id, options)
      rememberEndpoint(agent, setup.route)
      const workspace = new Workspace(cwd)
      const attach: Attach = (live) => {
        rememberEndpoint(live, setup.route)
        const stopUpdates = streamUpdates({ harness, sessionId: live.id, root: cwd, workspace }, client.notify)
        const stopReads = client.readsFiles ? readThroughClient(harness, live.id, cwd, client.context, setup.warn) : () => undefined
        return () => {
          stopUpdates()
          stopReads()
        }
      }
      return new AcpSession(acpId, cwd, harness, agent, attach, client.notify, options)
    } catch (error) {
      await harness.close().catch(() => undefined)
      throw error
    }
  }

  /** Whether a prompt of this session is running. */
  get prompting(): boolean {
    return this.#prompting
  }

  /** The stored conversation as updates (what `session/load` replays). */
  replay(): SessionUpdate[] {
    return replayUpdates(this.#agent.session.events, this.cwd)
  }

  /**
   * Runs one prompt as a followup turn and resolves with its stop reason once the turn has ended (its
   * `turn/end` is durable). A cancel resolves it `cancelled`.
   * @throws RequestError for a prompt while another runs, and for a turn that failed (its code in `data`)
   */
  async prompt(blocks: readonly AcpContentBlock[]): Promise<PromptResponse> {
    if (this.#prompting) throw RequestError.invalidRequest({ sessionId: this.id }, 'a prompt is already running in this session: cancel it first')
    const content = promptContent(blocks)
    if (content.length === 0) throw RequestError.invalidParams({ sessionId: this.id }, 'the prompt has no text')
    this.#prompting = true
    this.#cancelled = false
    try {
      const result = await this.#agent.run(createUserMessage(content))
      const outcome = promptOutcome(result.reason)
      if ('stopReason' in outcome) return { stopReason: outcome.stopReason }
      throw new RequestError(-32603, `the turn failed: ${outcome.failure.message}`, { code: outcome.failure.code, sessionId: this.id })
    } catch (error) {
      // A cancel that came before the turn claimed the prompt discards it: the run rejects, the prompt was cancelled.
      if (this.#cancelled && !(error instanceof RequestError)) return { stopReason: 'cancelled' }
      throw error
    } finally {
      this.#prompting = false
    }
  }

  /**
   * Cancels the running turn (a pending permission question is no longer waited for): by default as
   * `session/cancel` does, `{kind:'user'}`.
   */
  cancel(cause: CancelCause = { kind: 'user' }): void {
    if (!this.#prompting) return
    this.#cancelled = true
    this.#agent.cancel(cause)
  }

  /**
   * Cancels what runs with `cause` (default: the agent's disposal, `{kind:'disposed'}`), releases the session
   * (its log flushed, its lock freed) and stops its MCP servers.
   */
  async close(cause?: CancelCause): Promise<void> {
    if (cause !== undefined) this.cancel(cause)
    this.#stopListening()
    await this.#harness.close()
  }

  /**
   * Runs `/undo` or `/rewind N` instead of a model turn: the rewind's report goes to the client as an agent
   * message, and the prompt ends `end_turn`. A rewind that cannot run (nothing to undo, a turn that never
   * ended, a store error) says why and leaves the session as it was.
   * @throws RequestError for a command while a prompt runs
   */
  async runCommand(command: SessionCommand): Promise<PromptResponse> {
    if (this.#prompting) throw RequestError.invalidRequest({ sessionId: this.id }, 'a prompt is already running in this session: cancel it first')
    this.#prompting = true
    try {
      const text = await this.#rewind(command)
      this.#notify({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } })
      return { stopReason: 'end_turn' }
    } finally {
      this.#prompting = false
    }
  }

  async #rewind(command: SessionCommand): Promise<string> {
    if (command.kind === 'unusable') return command.message
    const previous = this.#lastRewind
    const redo = command.kind === 'rewind' && command.force && previous !== undefined && previous.toTurn === command.toTurn && previous.landedIn === this.#agent.id && lastEndedTurn(this.#agent.session.events) === (command.toTurn === 0 ? 0 : command.toTurn)
    const from = redo ? previous.from : this.#agent.id
    const last = redo ? command.toTurn + 1 : lastEndedTurn(this.#agent.session.events)
    if (last === 0) return 'Nothing to rewind yet: no turn has ended in this session.'
    const toTurn = command.kind === 'undo' ? last - 1 : command.toTurn
    if (toTurn >= last) return `Nothing to rewind: turn ${last} is the last turn of this session.`
    let result: RewindResult
    try {
      // Before the first turn only the files go back: a conversation forked there would be empty, so the
      // session goes on in a new, empty ledgerloop session instead (as chat's /undo of its only turn).
      result = await this.#harness.rewind(from, toTurn === 0 ? { toTurn, conversation: false, force: command.force } : { toTurn, force: command.force })
    } catch (error) {
      return `Could not rewind: ${error instanceof Error ? error.message : String(error)}`
    }
    this.#stopListening()
    this.#stopListening = () => undefined
    await this.#agent.dispose()
    let next: Agent
    try {
      next = toTurn === 0 ? await this.#harness.createAgent({ ...this.#agentOptions, sessionId: randomUUID() }) : await this.#harness.resumeAgent(result.sessionId, this.#agentOptions)
    } catch (error) {
      // The files are back, but the fork cannot be run here: go on in the session as it was.
      this.#agent = await this.#harness.resumeAgent(from, this.#agentOptions)
      this.#stopListening = this.#attach(this.#agent)
      return `The files were rewound, but the conversation could not continue in the fork: ${error instanceof Error ? error.message : String(error)}`
    }
    this.#agent = next
    this.#stopListening = this.#attach(next)
    this.#lastRewind = { from, toTurn, landedIn: next.id }
    return describeSessionRewind(from, toTurn, result, next.id)
  }
}

/** The config file's MCP servers (relative `cwd`s taken from the session's cwd) and the client's, with span export. */
async function sessionExtensions(setup: AcpSessionSetup, cwd: string, mcpServers: readonly McpServer[]): Promise<HarnessExtensions> {
  const [configured, client] = await Promise.all([startConfiguredMcpServers(setup.config.mcpServers, cwd, setup.env, setup.warn), startSessionMcpServers(mcpServers, setup.warn)])
  return {
    tools: [...configured.tools, ...client.tools],
    plugins: setup.plugins,
    async close() {
      await Promise.allSettled([configured.close(), client.close()])
    },
  }
}

/**
 * The process's store for one session's harness: closing that harness (when the session closes) must not close
 * the store the other sessions write to. Everything else goes straight through.
 */
function borrowed(store: SessionStore): SessionStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'close') return async () => undefined
      const value: unknown = Reflect.get(target, key, target)
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value
    },
  })
}

/** As `run` does: a session on a non-default endpoint logs it, so a later resume goes back to the same one. */
function rememberEndpoint(agent: Agent, route: ModelRoute): void {
  if (route.baseURL === undefined) return
  let last: string | undefined
  for (const event of agent.session.events) if (event.type === CLI_ROUTE_EVENT) last = (event.data as { baseURL?: string }).baseURL
  if (last !== route.baseURL) agent.session.append(CLI_ROUTE_EVENT, { provider: route.provider, baseURL: route.baseURL }, { ignorable: true })
}

/**
 * An ACP prompt as the content of a ledgerloop user message: text as text; a resource link as a line naming it;
 * an embedded text resource as its text, headed by its URI (images and audio are not advertised, so not sent).
 */
export function promptContent(blocks: readonly AcpContentBlock[]): ContentBlock[] {
  const out: ContentBlock[] = []
  for (const block of blocks) {
    if (block.type === 'text') {
      if (block.text !== '') out.push({ type: 'text', text: block.text })
    } else if (block.type === 'resource_link') {
      out.push({ type: 'text', text: `[${block.name}](${block.uri})` })
    } else if (block.type === 'resource' && 'text' in block.resource) {
      out.push({ type: 'text', text: `<resource uri="${block.resource.uri}">\n${block.resource.text}\n</resource>` })
    }
  }
  return out
}
