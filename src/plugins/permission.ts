import { HarnessError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { JsonValue } from '../json/lossless.js'
import type { LedgerHooks, ToolCall } from '../loop/hook-types.js'

/** A permission decision for a tool call. */
export type PermissionDecision = 'allow' | 'ask' | 'deny'

/**
 * A rule: a tool name (`*` and `?` wildcards) optionally followed by `: <pattern>` matched against the call's
 * subject — the `command` of `bash`, the `path` of file tools, the `pattern` of `grep`/`glob`, else the
 * arguments as JSON. Examples: `read_file`, `bash: git *`, `write_file: src/**`, `*`.
 */
export type PermissionRule = string

/** Rules by decision. Within user rules `deny` beats `ask` beats `allow`; user rules beat the defaults. */
export interface PermissionRules {
  readonly allow?: readonly PermissionRule[]
  readonly ask?: readonly PermissionRule[]
  readonly deny?: readonly PermissionRule[]
}

/** What the `ask` callback is asked. */
export interface PermissionQuestion {
  readonly tool: string
  /** The model's id of the call asked about (what a client shows the question beside, e.g. ACP's tool call). */
  readonly callId: string
  readonly arguments: JsonValue
  /** The call's subject (command, path, …) shown to the user. */
  readonly subject: string
  readonly reason: string
  readonly signal: AbortSignal
  /** Set when the call asks for the host network (a `bash` call passing `network: true`). */
  readonly network?: true
}

/** The user's answer: `always` allows this tool for the rest of the agent's session. */
export type PermissionAnswer = 'yes' | 'no' | 'always'

/**
 * An answer that says who gave it: `user` (a person typed it), `flag` (a command-line switch such as `--yes`
 * answered for them) or `auto` (a policy of the caller, e.g. a throwaway scratch folder). A bare
 * {@link PermissionAnswer} counts as `user`.
 */
export interface AttributedAnswer {
  readonly answer: PermissionAnswer
  readonly by: 'user' | 'flag' | 'auto'
  /**
   * With `always`: allow only later calls whose subject (a `bash` command) starts with these words (`git status`),
   * instead of every call of the tool. A command joining others with shell operators (`;`, `&&`, `|`, `$(…)`,
   * redirections) never matches a prefix: `git status && rm -rf ~` is not a `git status` command.
   */
  readonly prefix?: string
}

/** Options of {@link permissionPlugin}. */
export interface PermissionPluginOptions {
  readonly rules?: PermissionRules
  /** Asks a person (a TTY prompt). Without it, `ask` decisions are denied with a clear reason. */
  readonly ask?: (question: PermissionQuestion) => Promise<PermissionAnswer | AttributedAnswer>
  /** Replace the defaults (reads allowed; writes and shell ask). */
  readonly defaults?: PermissionRules
}

/**
 * Reads allowed; writes, the shell and network access ask. A call no rule matches asks too. `network` is a
 * pseudo-tool: a `bash` call passing `network: true` (see `builtinTools`' `'per-call'` network policy) must
 * pass the rules for `bash` and for `network`, both matched against the command (e.g. `network: npm install*`).
 */
export const DEFAULT_PERMISSION_RULES: PermissionRules = Object.freeze({
  allow: ['read_file', 'list', 'grep', 'glob'],
  ask: ['write_file', 'edit_file', 'bash', 'network'],
})

/** Data of the `permission/decision` event logged for every decision. */
export interface PermissionDecisionData {
  readonly turn: number
  readonly step: number
  readonly callId: string
  readonly tool: string
  readonly decision: 'allow' | 'deny'
  /**
   * Who decided: a configured `rule`, the `default` rules, a person (`user`), a command-line switch (`flag`), the
   * caller's own policy (`auto`), an earlier `always` (`remembered`), or nobody could be asked (`no-approver`).
   */
  readonly by: 'rule' | 'default' | 'user' | 'flag' | 'auto' | 'remembered' | 'no-approver'
  readonly rule?: string
  readonly answer?: PermissionAnswer
  /** Set when the call (a `bash` call passing `network: true`) also asked for the network. */
  readonly network?: true
  /** What an `always` answer allows from now on in this session: tool names (and `network`). */
  readonly grants?: readonly string[]
  /** With {@link grants}: only subjects starting with these words (see {@link AttributedAnswer.prefix}). */
  readonly prefix?: string
  /**
   * How long the question waited for its answer, in ms (set when an approver was asked): time a person spent,
   * not the tool's, so views can show a call's own duration apart from the wait.
   */
  readonly waitedMs?: number
}

const SUBJECT_KEYS: Readonly<Record<string, string>> = { bash: 'command', read_file: 'path', write_file: 'path', edit_file: 'path', list: 'path', grep: 'pattern', glob: 'pattern' }

/**
 * Allow / ask / deny tool calls by name and argument pattern, on the `tools/pre-execute` and `tools/approve`
 * seams. Every decision is logged as a `permission/decision` event; a denial reaches the model as a
 * `TOOL_DENIED` tool error it can read.
 * @example
 * ```ts
 * permissionPlugin({ rules: { allow: ['bash: git status*'], deny: ['bash: rm *'] }, ask: promptOnTty })
 * ```
 */
export function permissionPlugin(options: PermissionPluginOptions = {}): Plugin<HookRegistrar<LedgerHooks>> {
  const user = compile(options.rules ?? {})
  const defaults = compile(options.defaults ?? DEFAULT_PERMISSION_RULES)
  // agent id → what `always` answers allowed for the session: whole tools (and `network`), or tools for subjects
  // starting with a prefix. Rebuilt from the session's own logged decisions when an agent is first seen, so a
  // resumed session (`chat -c`) keeps them.
  const remembered = new Map<string, SessionGrants>()
  const grantsOf = (agent: { id: string; session: { events: readonly { type: string; data: unknown }[] } }): SessionGrants => {
    let grants = remembered.get(agent.id)
    if (grants === undefined) {
      grants = grantsFromLog(agent.session.events)
      remembered.set(agent.id, grants)
    }
    return grants
  }
  const judge = (part: Verdict['part'], tool: string, subject: string): Verdict => {
    const hit = match(user, tool, subject)
    const chosen = hit ?? match(defaults, tool, subject)
    return { part, decision: chosen?.decision ?? 'ask', by: hit !== undefined ? 'rule' : 'default', ...(chosen !== undefined ? { rule: chosen.rule } : {}) }
  }
  // The call's decision parts: the tool itself, plus the network for a bash call that asks for it.
  const verdicts = (memory: SessionGrants, call: ToolCall, subject: string): Verdict[] => {
    const parts: Verdict[] = [memory.allows(call.name, subject) ? { part: 'tool', decision: 'allow', by: 'remembered' } : judge('tool', call.name, subject)]
    if (wantsNetwork(call)) parts.push(memory.allows(NETWORK, subject) ? { part: 'network', decision: 'allow', by: 'remembered' } : judge('network', NETWORK, subject))
    return parts
  }
  return {
    name: 'ledgerloop/permission',
    setup(hooks) {
      const offPre = hooks.on('tools/pre-execute', async ({ agent, call }, next) => {
        const subject = subjectOf(call)
        const parts = verdicts(grantsOf(agent), call, subject)
        const asksNetwork = parts.length > 1 ? { network: true as const } : {}
        const denied = parts.find((p) => p.decision === 'deny')
        if (denied !== undefined) {
          log(agent.session, call, { decision: 'deny', by: denied.by, ...ruleOf(denied), ...asksNetwork })
          const what = denied.part === 'network' ? `network access for ${call.name}` : call.name
          return { kind: 'deny', reason: `permission denied for ${what}${denied.rule !== undefined ? ` by rule '${denied.rule}'` : ''}` }
        }
        const asking = parts.filter((p) => p.decision === 'ask')
        if (asking.length === 0) {
          // The narrowest grant decides what the audit names: the network rule when the call asked for it.
          const decisive = parts[parts.length - 1] as Verdict
          log(agent.session, call, { decision: 'allow', by: decisive.by, ...ruleOf(decisive), ...asksNetwork })
          return next()
        }
        const shown = `${call.name}${subject !== '' ? ` ${subject}` : ''}`
        return { kind: 'ask', reason: asking.some((p) => p.part === 'network') ? `${shown} asks for network access` : `${shown} needs approval` }
      })
      const offApprove = hooks.on('tools/approve', async ({ agent, call, reason, signal }) => {
        // What the question is about, derived again from the rules (another plugin's `ask` counts as the tool's).
        const asking = verdicts(grantsOf(agent), call, subjectOf(call)).filter((p) => p.decision === 'ask')
        const asked = asking.length > 0 ? asking.map((p) => p.part) : ['tool']
        const asksNetwork = wantsNetwork(call) ? { network: true as const } : {}
        if (options.ask === undefined) {
          log(agent.session, call, { decision: 'deny', by: 'no-approver', ...asksNetwork })
          return { kind: 'deny', reason: `${reason}, and no one can approve it here (run interactively, or allow it with a rule or --yes)` }
        }
        let given: Awaited<ReturnType<NonNullable<PermissionPluginOptions['ask']>>>
        const askedAt = Date.now()
        try {
          given = await options.ask({ tool: call.name, callId: call.callId, arguments: call.arguments, subject: subjectOf(call), reason, signal, ...asksNetwork })
        } catch (error) {
          // The question went unanswered (a closed prompt, a cancelled turn): the audit log still says the call
          // was not allowed; the loop turns the failure into the call's result.
          log(agent.session, call, { decision: 'deny', by: 'no-approver', ...asksNetwork, waitedMs: Date.now() - askedAt })
          throw error
        }
        const waitedMs = Date.now() - askedAt
        // An answer that comes after the turn was cancelled decides nothing: the loop has already answered the
        // call (ABORTED_BEFORE_DISPATCH) and may have closed the turn, so nothing is remembered or logged.
        if (signal.aborted) throw signal.reason
        const attributed = typeof given === 'string' ? { answer: given, by: 'user' as const } : given
        const prefix = attributed.answer === 'always' ? usablePrefix(attributed.prefix) : undefined
        // A prefix that cannot be honoured must not widen into the whole tool: the call is allowed once, no more.
        const answer: PermissionAnswer = attributed.answer === 'always' && attributed.prefix !== undefined && prefix === undefined ? 'yes' : attributed.answer
        const by = attributed.by
        let granted: { grants?: string[]; prefix?: string } = {}
        if (answer === 'always') {
          // `always` covers what was asked: the tool, the network, or both, for this agent's session; logged, so
          // that a resume rebuilds it.
          const grants = asked.map((part) => (part === 'network' ? NETWORK : call.name))
          grantsOf(agent).add(grants, prefix)
          granted = { grants, ...(prefix !== undefined ? { prefix } : {}) }
        }
        const allowed = answer === 'yes' || answer === 'always'
        log(agent.session, call, { decision: allowed ? 'allow' : 'deny', by, answer, ...asksNetwork, ...granted, waitedMs })
        return allowed ? { kind: 'allow' } : { kind: 'deny', reason: by === 'user' ? `the user declined ${call.name}` : `${call.name} was declined (${reason})` }
      })
      return () => {
        offPre()
        offApprove()
      }
    },
  }
}

/**
 * What `always` answers allowed in one session: tools for every subject, and tools for subjects starting with a
 * prefix of whole words.
 */
class SessionGrants {
  readonly #tools = new Set<string>()
  readonly #prefixes: { readonly tool: string; readonly prefix: string }[] = []

  add(tools: readonly string[], prefix: string | undefined): void {
    for (const tool of tools) {
      if (prefix === undefined) this.#tools.add(tool)
      else this.#prefixes.push({ tool, prefix })
    }
  }

  allows(tool: string, subject: string): boolean {
    if (this.#tools.has(tool)) return true
    return this.#prefixes.some((grant) => grant.tool === tool && startsWithWords(subject, grant.prefix))
  }
}

/**
 * The grants of a session's logged `always` answers. A decision logged before `grants` existed granted its tool
 * (not the network: which parts it covered was not recorded, so the narrower reading wins).
 */
function grantsFromLog(events: readonly { type: string; data: unknown }[]): SessionGrants {
  const grants = new SessionGrants()
  for (const event of events) {
    if (event.type !== 'permission/decision') continue
    const data = event.data as Partial<PermissionDecisionData>
    if (data.answer !== 'always' || data.decision !== 'allow' || typeof data.tool !== 'string') continue
    const tools = Array.isArray(data.grants) ? data.grants.filter((t): t is string => typeof t === 'string') : data.network === true ? [] : [data.tool]
    const prefix = usablePrefix(data.prefix)
    if (data.prefix !== undefined && prefix === undefined) continue // a prefix we cannot honour grants nothing
    grants.add(tools, prefix)
  }
  return grants
}

/** A prefix as a grant can use it: trimmed whole words, none of them a shell operator; undefined otherwise. */
function usablePrefix(prefix: unknown): string | undefined {
  if (typeof prefix !== 'string') return undefined
  const words = prefix.trim().split(/\s+/).filter((w) => w !== '')
  if (words.length === 0 || words.some((w) => SHELL_CONTROL.test(w))) return undefined
  return words.join(' ')
}

/** Characters that join, substitute or redirect commands: a command holding one is never "just" its prefix. */
const SHELL_CONTROL = /[;&|`$<>()\n\\]/

/** `git status -s` starts with the words `git status`; `git statusx` and `git status; rm x` do not. */
function startsWithWords(subject: string, prefix: string): boolean {
  if (SHELL_CONTROL.test(subject)) return false
  const words = subject.trim().split(/\s+/)
  const wanted = prefix.split(' ')
  return wanted.every((word, i) => words[i] === word)
}

/** The pseudo-tool whose rules decide whether a `bash` call that passes `network: true` may have the network. */
const NETWORK = 'network'

/** One part of a call's decision: the tool itself, or (for a `bash` call asking for it) the network. */
interface Verdict {
  readonly part: 'tool' | 'network'
  readonly decision: PermissionDecision
  readonly by: 'rule' | 'default' | 'remembered'
  readonly rule?: string
}

function ruleOf(verdict: Verdict): { rule?: string } {
  return verdict.rule !== undefined ? { rule: verdict.rule } : {}
}

/** A `bash` call under the `'per-call'` network policy asking for the host network. */
function wantsNetwork(call: ToolCall): boolean {
  const args = call.arguments
  return call.name === 'bash' && typeof args === 'object' && args !== null && !Array.isArray(args) && args.network === true
}

interface CompiledRule {
  readonly rule: string
  readonly decision: PermissionDecision
  readonly tool: RegExp
  readonly subject: RegExp | undefined
}

function compile(rules: PermissionRules): CompiledRule[] {
  const out: CompiledRule[] = []
  for (const decision of ['deny', 'ask', 'allow'] as const) {
    for (const rule of rules[decision] ?? []) {
      if (typeof rule !== 'string' || rule.trim() === '') throw new HarnessError(`permission rule ${JSON.stringify(rule)} must be a non-empty string`, 'INVALID_CONFIG')
      const colon = rule.indexOf(':')
      const tool = (colon < 0 ? rule : rule.slice(0, colon)).trim()
      const subject = colon < 0 ? undefined : rule.slice(colon + 1).trim()
      out.push({ rule, decision, tool: wildcard(tool), subject: subject === undefined ? undefined : wildcard(subject) })
    }
  }
  return out
}

function match(rules: readonly CompiledRule[], tool: string, subject: string): CompiledRule | undefined {
  return rules.find((r) => r.tool.test(tool) && (r.subject === undefined || r.subject.test(subject)))
}

function wildcard(pattern: string): RegExp {
  const body = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*+/g, '.*').replace(/\?/g, '.')
  return new RegExp(`^${body}$`, 's')
}

function subjectOf(call: ToolCall): string {
  const key = SUBJECT_KEYS[call.name]
  const args = call.arguments
  if (key !== undefined && typeof args === 'object' && args !== null && !Array.isArray(args)) {
    const value = args[key]
    if (typeof value === 'string') return value
  }
  return typeof args === 'string' ? args : JSON.stringify(args)
}

function log(
  session: { append(type: string, data: unknown): unknown },
  call: ToolCall,
  fields: Pick<PermissionDecisionData, 'decision' | 'by'> & Partial<Pick<PermissionDecisionData, 'rule' | 'answer' | 'network' | 'grants' | 'prefix' | 'waitedMs'>>,
): void {
  const data: PermissionDecisionData = { turn: call.turn, step: call.step, callId: call.callId, tool: call.name, ...fields }
  session.append('permission/decision', data)
}
