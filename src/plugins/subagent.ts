import { z } from 'zod'
import { HarnessError } from '../errors/harness-error.js'
import type { JsonValue } from '../json/lossless.js'
import { addTokenUsage, emptyTokenTotals, type TokenTotals } from '../llm/token-usage.js'
import type { AssistantMessage, TokenUsage } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'
import { defineTool, type DefinedTool } from '../tools/define-tool.js'
import type { DelegatedAgent, ToolContext, ToolDefinition, ToolOutput } from '../tools/types.js'
import type { Agent } from '../loop/agent.js'
import type { ChildProfileSetup, DelegatingTool } from '../loop/delegation.js'

/** One sub-agent profile of {@link subagentTool}: how a child started under this name differs from its parent. */
export interface SubagentProfile {
  /** One line telling the model when to pick this profile (listed in the tool's description). */
  readonly description?: string
  /** The child's persona: replaces the harness's `system` section for the child only. */
  readonly system?: string
  /** Names of harness tools the child is offered (default: every harness tool the parent could be offered). */
  readonly tools?: readonly string[]
  /** Adapter route for the child (default: the parent's). */
  readonly provider?: string
  /** Model for the child (default: the parent's). */
  readonly model?: string
  /** Most steps of the child's turn; the next step is cancelled `{kind:'hook'}` and logged as `budget/exceeded`. */
  readonly maxSteps?: number
}

/** Options of {@link subagentTool}. */
export interface SubagentToolOptions {
  /** Tool name the model calls (default `task`). */
  readonly name?: string
  /** Tool description the model reads (default: a general one listing the profiles). */
  readonly description?: string
  /** Named profiles the model may pick with `agent`. Without `agent` a call uses `default` (built in unless defined here). */
  readonly agents?: Readonly<Record<string, SubagentProfile>>
  /**
   * Most delegation levels (default 2): the top agent is depth 0 and an agent at depth d is offered the tool
   * only while d < maxDepth. 0 turns the tool off.
   */
  readonly maxDepth?: number
}

/** Arguments of the sub-agent tool. */
export interface SubagentArgs {
  /** The complete, self-contained task (the child sees nothing else of the parent's conversation). */
  readonly task: string
  /** Profile name (default `default`). */
  readonly agent?: string
}

/** `meta` of a sub-agent tool result (log-only; what `inspect` and roll-ups read). */
export interface SubagentResultMeta {
  readonly childSession: string
  readonly profile: string
  /** How the child's turn ended (`completed`, `max-tokens`, `error`, `blocked`, `aborted`). */
  readonly reason: TurnEndReason['kind'] | 'not-started'
  /** Steps the child's turn took. */
  readonly steps: number
  /** The child's token usage, summed over its turn. */
  readonly usage: TokenUsage
}

/** The profile used when a call names none and `agents` defines no `default`. */
const DEFAULT_PROFILE = 'default'
const PROFILE_NAME = /^[A-Za-z0-9_-]{1,64}$/

// Told to every child, after its persona: the parent reads only the final message.
const CHILD_BRIEF =
  'You are a sub-agent: another agent handed you one self-contained task. Work on it with your tools, then ' +
  'end with a final message that answers it completely; that message is all the other agent will see.'

/**
 * A tool that hands a self-contained task to a child agent with a fresh context and returns the child's final
 * answer. The child runs on the same harness and store, in a new session whose header names the parent
 * session, the parent's tool call and the profile; it uses the parent's provider and model unless its profile
 * sets them. Calls are concurrency-safe (siblings run side by side, bounded by `maxParallelToolCalls`);
 * cancelling the parent's turn cancels every running child with `{kind:'parent'}`. A child that ends `error`,
 * `blocked` or `aborted` gives an error result that says so, and the parent's turn goes on.
 * @example
 * ```ts
 * const harness = createHarness({
 *   adapters: [deepseekAdapter()],
 *   tools: [...builtinTools({ root: '.' }), subagentTool({
 *     agents: { reader: { description: 'reads and summarises files', tools: ['read_file', 'grep'], maxSteps: 8 } },
 *   })],
 * })
 * ```
 * @throws HarnessError `INVALID_CONFIG` for a bad `maxDepth`, profile name or profile field
 */
export function subagentTool(options: SubagentToolOptions = {}): DefinedTool<SubagentArgs> {
  const maxDepth = options.maxDepth ?? 2
  if (!Number.isSafeInteger(maxDepth) || maxDepth < 0) throw new HarnessError(`subagentTool: maxDepth must be a non-negative integer, got ${String(maxDepth)}`, 'INVALID_CONFIG')
  const profiles = checkProfiles(options.agents ?? {})
  const name = options.name ?? 'task'
  const definition: ToolDefinition<SubagentArgs> & DelegatingTool = {
    name,
    description: options.description ?? describe(profiles),
    parameters: z.object({
      task: z.string().min(1).describe('The complete task, with every fact the sub-agent needs: it does not see this conversation.'),
      agent: z.string().optional().describe(`Profile name (default "${DEFAULT_PROFILE}").`),
    }),
    concurrencySafe: true,
    execute: (args, ctx) => runChild(args, ctx, name, profiles, maxDepth),
    // Read by the harness: not offered past the depth limit; a child (started or resumed) gets its profile's setup.
    delegation: Object.freeze({
      maxDepth,
      profile(profileName: string) {
        const profile = profileOf(profiles, profileName)
        return profile === undefined ? undefined : childSetup(profile)
      },
    }),
  }
  return defineTool(definition as never) as unknown as DefinedTool<SubagentArgs>
}

function profileOf(profiles: ReadonlyMap<string, SubagentProfile>, name: string): SubagentProfile | undefined {
  return profiles.get(name) ?? (name === DEFAULT_PROFILE ? {} : undefined)
}

/** What makes a child of `profile` differ from a top-level agent: applied when it starts and when it is resumed. */
function childSetup(profile: SubagentProfile): ChildProfileSetup {
  return {
    ...(profile.tools !== undefined ? { tools: profile.tools } : {}),
    prepare(child) {
      if (profile.system !== undefined) child.ctx.prompt.section('persona', { order: 0, text: profile.system })
      child.ctx.prompt.section('subagent', { order: 1, text: CHILD_BRIEF })
      if (profile.maxSteps !== undefined) capSteps(child, profile.maxSteps)
    },
  }
}

async function runChild(args: SubagentArgs, ctx: ToolContext, tool: string, profiles: ReadonlyMap<string, SubagentProfile>, maxDepth: number): Promise<ToolOutput> {
  const delegation = ctx.delegation
  if (delegation === undefined) throw new HarnessError('the sub-agent tool runs only for agents of a harness', 'SUBAGENT_UNAVAILABLE')
  const profileName = args.agent ?? DEFAULT_PROFILE
  const profile = profileOf(profiles, profileName)
  if (profile === undefined) {
    const known = [...new Set([DEFAULT_PROFILE, ...profiles.keys()])].join(', ')
    return failure(`unknown agent profile '${profileName}'; known profiles: ${known}`, 'UNKNOWN_AGENT_PROFILE')
  }
  // Not offered past the limit; this guards a model that calls it anyway (from an older request's tools).
  if (delegation.depth >= maxDepth) return failure(`sub-agents may not start sub-agents deeper than ${maxDepth} levels`, 'SUBAGENT_DEPTH')
  // The harness sets the child up from this tool's `delegation.profile` (tools, persona, budget).
  const child = await delegation.start({
    tool,
    profile: profileName,
    parentCallId: ctx.callId,
    ...(profile.provider !== undefined ? { provider: profile.provider } : {}),
    ...(profile.model !== undefined ? { model: profile.model } : {}),
  })
  try {
    const cancelChild = (): void => child.cancel({ kind: 'parent' })
    ctx.signal.addEventListener('abort', cancelChild, { once: true })
    try {
      const from = child.session.length
      child.followup(args.task)
      if (ctx.signal.aborted) cancelChild()
      await child.whenIdle()
      return outcome(child, profileName, from)
    } finally {
      ctx.signal.removeEventListener('abort', cancelChild)
    }
  } finally {
    // Each child answers one call: release its session (lock, writer) before the parent's result is logged.
    await child.dispose()
  }
}

/** The child's turn as a tool result: its final text, or an error that names how it ended. */
function outcome(child: DelegatedAgent, profile: string, from: number): ToolOutput {
  const events = child.session.events.slice(from)
  const turn = summarizeTurn(events)
  const meta: SubagentResultMeta = { childSession: child.id, profile, reason: turn.reason?.kind ?? 'not-started', steps: turn.steps, usage: turn.usage }
  const who = `the sub-agent (profile '${profile}', session ${child.id})`
  const partial = turn.text !== '' ? `\n\nIts last text before it stopped:\n${turn.text}` : ''
  const reason = turn.reason
  switch (reason?.kind) {
    case 'completed':
      return { content: turn.text !== '' ? turn.text : '(the sub-agent finished without a text answer)', meta: meta as unknown as JsonValue }
    case 'max-tokens':
      return { content: `${turn.text}\n\n[the sub-agent's answer was cut off at its output token limit]`, meta: meta as unknown as JsonValue }
    case 'error':
      return failure(`${who} ended with an error: ${reason.error.code}: ${reason.error.message}${partial}`, 'SUBAGENT_FAILED', meta)
    case 'blocked':
      return failure(`${who} was blocked: a hook refused its step${partial}`, 'SUBAGENT_BLOCKED', meta)
    case 'aborted': {
      const cause = reason.reason
      const why = cause.kind === 'parent' ? 'this turn was cancelled' : cause.kind === 'hook' ? cause.reason : cause.kind === 'disposed' ? 'the harness shut down' : 'a user cancelled it'
      return failure(`${who} was aborted (${why})${partial}`, 'SUBAGENT_ABORTED', meta)
    }
    default:
      return failure(`${who} was cancelled before its turn started`, 'SUBAGENT_ABORTED', meta)
  }
}

interface TurnSummary {
  reason: TurnEndReason | undefined
  steps: number
  text: string
  usage: TokenTotals
}

function summarizeTurn(events: readonly SessionEvent[]): TurnSummary {
  const summary: TurnSummary = { reason: undefined, steps: 0, text: '', usage: emptyTokenTotals() }
  for (const e of events) {
    if (e.type === 'step/start') summary.steps++
    else if (e.type === 'turn/end') summary.reason = e.data.reason
    else if (e.type === 'assistant/message') {
      const d = e.data
      addTokenUsage(summary.usage, d.usage)
      const text = textOf(d.message)
      if (text !== '') summary.text = text
    }
  }
  return summary
}

function textOf(message: AssistantMessage): string {
  return message.content
    .filter((b) => b.type === 'text')
    .map((b) => (b as { text: string }).text)
    .join('')
    .trim()
}

/** The profile's step budget, scoped to this child (the same events and cause as the turn-budget plugin). */
function capSteps(child: Agent, maxSteps: number): void {
  child.ctx.hooks.on('agent/pre-step', (payload, next) => {
    if (payload.step > maxSteps) {
      payload.agent.session.append('budget/exceeded', { turn: payload.turn, budget: 'steps', limit: maxSteps, used: payload.step - 1 })
      payload.agent.cancel({ kind: 'hook', reason: `sub-agent budget: more than ${maxSteps} steps` }, { keepInbox: true })
    }
    return next()
  })
}

function failure(message: string, code: string, meta?: SubagentResultMeta): ToolOutput {
  return { content: `Error: ${message}`, isError: true, errorCode: code, ...(meta !== undefined ? { meta: meta as unknown as JsonValue } : {}) }
}

function describe(profiles: ReadonlyMap<string, SubagentProfile>): string {
  const lines = [
    'Hands a self-contained task to a sub-agent that starts with a fresh context, works with its own tools, and returns its final answer.',
    'Use it for independent pieces of work you can describe completely; several calls in one response run in parallel.',
    'The sub-agent does not see this conversation: put every fact it needs into `task`.',
  ]
  if (profiles.size > 0) {
    lines.push(`Profiles (\`agent\`, default "${DEFAULT_PROFILE}"):`)
    if (!profiles.has(DEFAULT_PROFILE)) lines.push(`- ${DEFAULT_PROFILE}: a general-purpose sub-agent with the same tools as you`)
    for (const [n, p] of profiles) lines.push(`- ${n}${p.description !== undefined ? `: ${p.description}` : ''}`)
  }
  return lines.join('\n')
}

function checkProfiles(agents: Readonly<Record<string, SubagentProfile>>): ReadonlyMap<string, SubagentProfile> {
  if (typeof agents !== 'object' || agents === null) throw new HarnessError('subagentTool: agents must be an object of profiles', 'INVALID_CONFIG')
  const profiles = new Map<string, SubagentProfile>()
  for (const [name, profile] of Object.entries(agents)) {
    const bad = (why: string): never => {
      throw new HarnessError(`subagentTool: profile '${name}' ${why}`, 'INVALID_CONFIG')
    }
    if (!PROFILE_NAME.test(name)) bad(`has a bad name (must match ${String(PROFILE_NAME)})`)
    if (typeof profile !== 'object' || profile === null) bad('must be an object')
    for (const key of ['description', 'system', 'provider', 'model'] as const) {
      const v = profile[key]
      if (v !== undefined && (typeof v !== 'string' || v === '')) bad(`${key} must be a non-empty string`)
    }
    if (profile.tools !== undefined && (!Array.isArray(profile.tools) || profile.tools.some((t) => typeof t !== 'string'))) bad('tools must be an array of tool names')
    if (profile.maxSteps !== undefined && (!Number.isSafeInteger(profile.maxSteps) || profile.maxSteps < 1)) bad('maxSteps must be a positive integer')
    profiles.set(name, Object.freeze({ ...profile, ...(profile.tools !== undefined ? { tools: Object.freeze([...profile.tools]) } : {}) }))
  }
  return profiles
}
