import { createHash } from 'node:crypto'
import { errorChain, HarnessError } from '../errors/harness-error.js'
import type { HookBus } from '../hooks/hook-bus.js'
import { snapshotJsonFrozen, type JsonValue } from '../json/lossless.js'
import type { ContentBlock, UserMessage } from '../llm/types.js'
import { normalizeToolOutput, type DefinedTool } from '../tools/define-tool.js'
import type { ToolRegistry } from '../tools/tool-registry.js'
import type { ToolContext, ToolDelegation } from '../tools/types.js'
import type { AgentHandle, LoopHooks, ToolCall, ToolCallResult } from './hook-table.js'

/** What one call's stages need from the step that runs them. */
export interface ToolStageContext {
  readonly agent: AgentHandle
  readonly hooks: HookBus<LoopHooks>
  readonly tools: ToolRegistry
  readonly signal: AbortSignal
  /** How the bodies start child agents (`ToolContext.delegation`; set by the harness). */
  readonly delegation: ToolDelegation | undefined
  /** Makes the log durable up to now: awaited before a body runs (intent before effect). */
  flush(): Promise<void>
}

/**
 * A call's outcome before commit. `logFailure` is set when the log itself failed on the way (the intent could
 * not be made durable): the result is still committed, then the batch stops and the turn fails.
 */
export interface ToolOutcome {
  readonly result: ToolCallResult
  readonly logFailure?: unknown
}

/**
 * Policy for one call, in model order: unknown tool, unparseable arguments,
 * `tools/pre-execute`, and `tools/approve` for an ask. Returns an early result, or `undefined` to run the body.
 * Never throws: a throwing listener is a `TOOL_HOOK_FAILED` result, a failing or cancelled approver a denial
 * (`ABORTED_BEFORE_DISPATCH` when the turn is being cancelled) — the call still gets its result.
 */
export async function prepareToolCall(ctx: ToolStageContext, call: ToolCall, tool: DefinedTool | undefined): Promise<ToolCallResult | undefined> {
  if (tool === undefined) {
    const known = ctx.tools.names()
    return errorResult(`unknown tool '${call.name}'${known.length > 0 ? `; available tools: ${known.join(', ')}` : ''}`, 'UNKNOWN_TOOL', 'ToolNotFoundError')
  }
  if (typeof call.arguments === 'string') {
    return errorResult(`the arguments of '${call.name}' are not valid JSON; send a JSON object matching the tool's parameters`, 'INVALID_ARGS', 'ToolArgsError')
  }
  if (ctx.signal.aborted) return abortedBeforeDispatch()
  // Without a listener every call is allowed: no payload, no tick.
  if (!ctx.hooks.has('tools/pre-execute')) return undefined
  let decision: unknown
  try {
    decision = await ctx.hooks.waterfall('tools/pre-execute', { agent: ctx.agent, call, signal: ctx.signal }, () => ({ kind: 'allow' as const }), ctx.agent.id)
  } catch (error) {
    return hookFailed('tools/pre-execute', error)
  }
  const kind = (decision as { kind?: unknown } | undefined)?.kind
  const reason = (decision as { reason?: unknown } | undefined)?.reason
  if (kind === 'deny') return errorResult(typeof reason === 'string' ? reason : `${call.name} was denied`, 'TOOL_DENIED', 'ToolDeniedError')
  if (kind === 'ask') {
    const denied = await approve(ctx, call, typeof reason === 'string' ? reason : `${call.name} needs approval`)
    if (denied !== undefined) return denied
  } else if (kind !== 'allow') {
    return hookFailed('tools/pre-execute', new HarnessError(`returned ${describe(decision)}; expected {kind:'allow'|'deny'|'ask'}`, 'INVALID_DECISION'))
  }
  if (ctx.signal.aborted) return abortedBeforeDispatch()
  return undefined
}

/**
 * The `tools/approve` seam; `undefined` when allowed. A turn cancelled before the question (during
 * `tools/pre-execute`) asks no one, and a cancel does not wait for the answer: an approver may wait for a person
 * indefinitely, or listen for an abort that already happened, so the turn must not depend on it settling.
 */
async function approve(ctx: ToolStageContext, call: ToolCall, reason: string): Promise<ToolCallResult | undefined> {
  if (ctx.signal.aborted) return abortedBeforeDispatch()
  let answer: unknown
  try {
    const asked = ctx.hooks.waterfall(
      'tools/approve',
      { agent: ctx.agent, call, reason, signal: ctx.signal },
      () => ({ kind: 'deny' as const, reason: `${reason} (approval required, and no one can approve here)` }),
      ctx.agent.id,
    )
    answer = await untilAborted(asked, ctx.signal)
  } catch (error) {
    // A prompt that rejects because the turn is being cancelled is the usual case: not a policy decision.
    if (ctx.signal.aborted) return abortedBeforeDispatch()
    return errorResult(`${reason}, and the approval failed (${errorChain(error)}), so it was denied`, 'TOOL_DENIED', 'ToolDeniedError')
  }
  if (ctx.signal.aborted) return abortedBeforeDispatch()
  const kind = (answer as { kind?: unknown } | undefined)?.kind
  if (kind === 'allow') return undefined
  const denial = (answer as { reason?: unknown } | undefined)?.reason
  return errorResult(kind === 'deny' && typeof denial === 'string' ? denial : `${reason} (no valid approval answer, so it was denied)`, 'TOOL_DENIED', 'ToolDeniedError')
}

/**
 * Settles like `work`, or rejects with the signal's reason as soon as `signal` aborts, whichever comes first.
 * A late settlement of the abandoned `work` is ignored (a rejection included).
 */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

/**
 * Validates the arguments, makes the intent durable, runs the body and checks its output. Never rejects: a
 * throwing body is an error result, output that is not lossless JSON an `INVALID_TOOL_OUTPUT` result, and a
 * failed flush a `TOOL_NOT_STARTED` result with the log failure attached (the body is not run).
 */
export async function runToolBody(ctx: ToolStageContext, call: ToolCall, tool: DefinedTool): Promise<ToolOutcome> {
  const checked = tool.validate(call.arguments)
  if (!checked.ok) {
    return { result: errorResult(`invalid arguments for '${call.name}': ${checked.problems.join('; ')}`, 'INVALID_ARGS', 'ToolArgsError') }
  }
  try {
    // Intent before effect: the tool/call event is on disk before the body can change the world.
    await ctx.flush()
  } catch (error) {
    const result = errorResult(`the call could not be recorded durably before it ran, so it was not started (${errorChain(error)})`, 'TOOL_NOT_STARTED', 'ToolNotStartedError')
    return { result, logFailure: error }
  }
  if (ctx.signal.aborted) return { result: abortedBeforeDispatch() }
  let output: ReturnType<typeof normalizeToolOutput>
  try {
    // A body that answers synchronously (most do) is not awaited: one tick less per call, same result.
    const returned: unknown = tool.execute(checked.value, toolContext(ctx, call))
    output = normalizeToolOutput((isThenable(returned) ? await returned : returned) as Parameters<typeof normalizeToolOutput>[0])
  } catch (error) {
    if (ctx.signal.aborted) return { result: errorResult('tool call was cancelled while running', 'ABORTED', 'AbortError') }
    const code = error instanceof HarnessError ? error.code : 'TOOL_FAILED'
    const name = error instanceof Error ? error.name : 'Error'
    return { result: errorResult(error instanceof Error ? error.message : String(error), code, name) }
  }
  // A string is wrapped frozen, so the result check adopts it instead of copying it.
  const content: unknown = typeof output.content === 'string' ? Object.freeze([Object.freeze({ type: 'text', text: output.content })]) : output.content
  const failed = output.isError === true
  return {
    result: checkToolResult(`the output of '${call.name}'`, {
      content: content as readonly ContentBlock[],
      isError: failed,
      ...(failed ? { error: { name: 'ToolError', code: output.errorCode ?? 'TOOL_FAILED' } } : {}),
      ...(output.meta !== undefined ? { meta: output.meta } : {}),
      ...(output.additionalContexts !== undefined ? { additionalContexts: output.additionalContexts } : {}),
      ...(output.concludesTurn === true || (tool.concludesTurn === true && !failed) ? { concludesTurn: true } : {}),
    }),
  }
}

/** What the body of `call` receives besides its arguments. */
function toolContext(ctx: ToolStageContext, call: ToolCall): ToolContext {
  const { signal, agent, delegation } = ctx
  return new CallContext(signal, call.callId, agent, delegation)
}

/**
 * A body's context. The idempotency key is a SHA-256 digest: derived when a body first reads it (most never do),
 * not for every call on the loop's hot path.
 */
class CallContext implements ToolContext {
  #idempotencyKey: string | undefined
  readonly delegation?: ToolContext['delegation']
  constructor(
    readonly signal: AbortSignal,
    readonly callId: string,
    readonly agent: ToolContext['agent'],
    delegation: ToolContext['delegation'] | undefined,
  ) {
    if (delegation !== undefined) this.delegation = delegation
  }

  get idempotencyKey(): string {
    return (this.#idempotencyKey ??= idempotencyKeyOf(this.agent.id, this.callId))
  }
}

/**
 * `tools/post-execute` at commit time, in model order. A throwing listener, or one that
 * returns something that is not a result, turns the result into a `TOOL_HOOK_FAILED` error.
 */
export async function postExecuteToolCall(ctx: ToolStageContext, call: ToolCall, result: ToolCallResult): Promise<ToolCallResult> {
  if (!ctx.hooks.has('tools/post-execute')) return result
  let rewritten: unknown
  try {
    rewritten = await ctx.hooks.waterfall('tools/post-execute', { agent: ctx.agent, call, result, signal: ctx.signal }, () => result, ctx.agent.id)
  } catch (error) {
    return hookFailed('tools/post-execute', error)
  }
  if (rewritten === result) return result
  return checkToolResult('the result returned by tools/post-execute', rewritten)
}

/**
 * A result as the log can hold it: content blocks of a known shape, lossless JSON throughout (no bigint,
 * cycle or function), copied and frozen; anything else is an `INVALID_TOOL_OUTPUT` error result.
 */
export function checkToolResult(what: string, value: unknown): ToolCallResult {
  const problem = resultProblem(value)
  if (problem !== undefined) return errorResult(`${what} is invalid: ${problem}`, 'INVALID_TOOL_OUTPUT', 'ToolOutputError')
  const r = value as ToolCallResult
  try {
    const content = snapshotJsonFrozen(r.content, 'content') as unknown as readonly ContentBlock[]
    const meta = r.meta !== undefined ? snapshotJsonFrozen(r.meta, 'meta') : undefined
    const contexts = r.additionalContexts !== undefined ? (snapshotJsonFrozen(r.additionalContexts, 'additionalContexts') as unknown as readonly UserMessage[]) : undefined
    const error = r.error !== undefined ? (snapshotJsonFrozen(r.error, 'error') as unknown as ToolCallResult['error']) : undefined
    return {
      content,
      isError: r.isError === true,
      ...(error !== undefined ? { error } : {}),
      ...(meta !== undefined ? { meta: meta as JsonValue } : {}),
      ...(contexts !== undefined ? { additionalContexts: contexts } : {}),
      ...(r.concludesTurn === true ? { concludesTurn: true } : {}),
    }
  } catch (error) {
    return errorResult(`${what} is not lossless JSON: ${(error as Error).message}`, 'INVALID_TOOL_OUTPUT', 'ToolOutputError')
  }
}

function resultProblem(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null) return `expected a result object, got ${describe(value)}`
  const r = value as Partial<ToolCallResult>
  if (!Array.isArray(r.content)) return 'content must be an array of content blocks'
  for (const [i, block] of (r.content as unknown[]).entries()) {
    const b = block as { type?: unknown; text?: unknown; attachment?: unknown } | null
    if (typeof b !== 'object' || b === null) return `content[${i}] is not a content block`
    if (b.type === 'text' && typeof b.text !== 'string') return `content[${i}] is a text block without a string text`
    if (b.type === 'image' && (typeof b.attachment !== 'object' || b.attachment === null)) return `content[${i}] is an image block without an attachment`
    if (b.type !== 'text' && b.type !== 'image') return `content[${i}] has type ${describe(b.type)}; tool results hold text and image blocks`
  }
  if (r.additionalContexts !== undefined && !Array.isArray(r.additionalContexts)) return 'additionalContexts must be an array of user messages'
  return undefined
}

/** True for a promise or any object with a `then` method (what `await` would wait for). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function'
}

/** An error result the model reads as `Error: <message>`. */
export function errorResult(message: string, code: string, name: string): ToolCallResult {
  return { content: [{ type: 'text', text: `Error: ${message}` }], isError: true, error: { name, code } }
}

/** The result of a call that never reached its body because the turn was cancelled. */
export function abortedBeforeDispatch(): ToolCallResult {
  return errorResult('tool call aborted before dispatch', 'ABORTED_BEFORE_DISPATCH', 'AbortError')
}

function hookFailed(hook: string, error: unknown): ToolCallResult {
  return errorResult(`a ${hook} listener failed: ${errorChain(error)}`, 'TOOL_HOOK_FAILED', 'ToolHookError')
}

function describe(value: unknown): string {
  if (value === undefined) return 'undefined'
  if (typeof value === 'bigint' || typeof value === 'function' || typeof value === 'symbol') return typeof value
  try {
    return JSON.stringify(value) ?? typeof value
  } catch {
    return typeof value
  }
}

/**
 * The `ToolContext.idempotencyKey` of a call: a digest of the session id and the call id, so every process and
 * worker that runs the call (the first time, or again after a crash) derives the same key.
 */
export function idempotencyKeyOf(sessionId: string, callId: string): string {
  return `ll-${createHash('sha256').update(sessionId).update('\0').update(callId).digest('hex').slice(0, 32)}`
}
