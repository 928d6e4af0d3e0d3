import { HarnessError } from '../errors/harness-error.js'
import type { Plugin } from '../hooks/hook-bus.js'
import type { HookRegistrar } from '../hooks/types.js'
import type { JsonValue } from '../json/lossless.js'
import type { LedgerHooks, ToolCall } from '../agent/hook-types.js'

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
  readonly arguments: JsonValue
  /** The call's subject (command, path, …) shown to the user. */
  readonly subject: string
  readonly reason: string
  readonly signal: AbortSignal
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
}

/** Options of {@link permissionPlugin}. */
export interface PermissionPluginOptions {
  readonly rules?: PermissionRules
  /** Asks a person (a TTY prompt). Without it, `ask` decisions are denied with a clear reason. */
  readonly ask?: (question: PermissionQuestion) => Promise<PermissionAnswer | AttributedAnswer>
  /** Replace the defaults (reads allowed; writes and shell ask). */
  readonly defaults?: PermissionRules
}

/** Reads allowed; writes and the shell ask. A call no rule matches asks too. */
export const DEFAULT_PERMISSION_RULES: PermissionRules = Object.freeze({
  allow: ['read_file', 'list', 'grep', 'glob'],
  ask: ['write_file', 'edit_file', 'bash'],
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
  const remembered = new Map<string, Set<string>>() // agent id → tools allowed for the session
  return {
    name: 'ledgerloop/permission',
    setup(hooks) {
      const offPre = hooks.on('tools/pre-execute', async ({ agent, call }, next) => {
        if (remembered.get(agent.id)?.has(call.name) === true) {
          log(agent.session, call, { decision: 'allow', by: 'remembered' })
          return next()
        }
        const subject = subjectOf(call)
        const hit = match(user, call.name, subject)
        const chosen = hit ?? match(defaults, call.name, subject)
        const by = hit !== undefined ? 'rule' : 'default'
        const decision = chosen?.decision ?? 'ask'
        const rule = chosen?.rule
        if (decision === 'deny') {
          log(agent.session, call, { decision: 'deny', by, ...(rule !== undefined ? { rule } : {}) })
          return { kind: 'deny', reason: `permission denied for ${call.name}${rule !== undefined ? ` by rule '${rule}'` : ''}` }
        }
        if (decision === 'allow') {
          log(agent.session, call, { decision: 'allow', by, ...(rule !== undefined ? { rule } : {}) })
          return next()
        }
        return { kind: 'ask', reason: `${call.name}${subject !== '' ? ` ${subject}` : ''} needs approval` }
      })
      const offApprove = hooks.on('tools/approve', async ({ agent, call, reason, signal }) => {
        if (options.ask === undefined) {
          log(agent.session, call, { decision: 'deny', by: 'no-approver' })
          return { kind: 'deny', reason: `${reason}, and no one can approve it here (run interactively, or allow it with a rule or --yes)` }
        }
        let given: Awaited<ReturnType<NonNullable<PermissionPluginOptions['ask']>>>
        try {
          given = await options.ask({ tool: call.name, arguments: call.arguments, subject: subjectOf(call), reason, signal })
        } catch (error) {
          // The question went unanswered (a closed prompt, a cancelled turn): the audit log still says the call
          // was not allowed; the loop turns the failure into the call's result.
          log(agent.session, call, { decision: 'deny', by: 'no-approver' })
          throw error
        }
        const { answer, by } = typeof given === 'string' ? { answer: given, by: 'user' as const } : given
        if (answer === 'always') {
          const set = remembered.get(agent.id) ?? new Set<string>()
          set.add(call.name)
          remembered.set(agent.id, set)
        }
        const allowed = answer === 'yes' || answer === 'always'
        log(agent.session, call, { decision: allowed ? 'allow' : 'deny', by, answer })
        return allowed ? { kind: 'allow' } : { kind: 'deny', reason: by === 'user' ? `the user declined ${call.name}` : `${call.name} was declined (${reason})` }
      })
      return () => {
        offPre()
        offApprove()
      }
    },
  }
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
  fields: Pick<PermissionDecisionData, 'decision' | 'by'> & Partial<Pick<PermissionDecisionData, 'rule' | 'answer'>>,
): void {
  const data: PermissionDecisionData = { turn: call.turn, step: call.step, callId: call.callId, tool: call.name, ...fields }
  session.append('permission/decision', data)
}
