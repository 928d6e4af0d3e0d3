import { HarnessError } from '../errors/harness-error.js'
import type { HookBus } from '../hooks/hook-bus.js'
import type { JsonValue } from '../json/lossless.js'
import { snapshotJsonValue } from '../json/lossless.js'
import { draftToolResultMessage } from '../llm/messages.js'
import type { ContentBlock, ToolCallBlock, UserMessage } from '../llm/types.js'
import type { Session } from '../session/session.js'
import { normalizeToolOutput, type DefinedTool } from '../tools/define-tool.js'
import type { ToolRegistry } from '../tools/tool-registry.js'
import type { Agent } from './agent.js'
import type { LedgerHooks, ToolCall, ToolCallResult } from './hook-types.js'

/** What the scheduler needs from the step that runs it. */
export interface ToolBatchContext {
  readonly agent: Agent
  readonly session: Session
  readonly hooks: HookBus<LedgerHooks>
  readonly tools: ToolRegistry
  readonly turn: number
  readonly step: number
  readonly signal: AbortSignal
  /** Most bodies running at once (rolling pool). */
  readonly maxParallel: number
  /** Makes the log durable up to now: awaited before a body runs (intent before effect). */
  flush(): Promise<void>
  /** Queues tool-produced context for the next step. */
  acceptContext(message: UserMessage): void
}

interface Slot {
  readonly call: ToolCall
  readonly callSeq: number
  /** Settles with the result; never rejects for tool failures (only for pipeline/log failures). */
  readonly result: Promise<ToolCallResult>
}

/**
 * Runs one step's tool calls (reference §6.7): `tool/call` logged when a call starts, policy in order,
 * concurrency-safe bodies in a rolling pool, results committed strictly in model order citing their call,
 * never-started calls paired with `ABORTED_BEFORE_DISPATCH` results on abort. Tool failures are results the
 * model reads, never turn failures. Returns true when a committed result concluded the turn.
 */
export async function executeToolCalls(ctx: ToolBatchContext, blocks: readonly ToolCallBlock[]): Promise<boolean> {
  const slots: Slot[] = []
  let committed = 0
  let concluded = false
  let failure: unknown

  // Commits strictly in model order: waits for each slot up to `count`, committing as it goes.
  const drainThrough = async (count: number): Promise<void> => {
    while (committed < count) {
      const slot = slots[committed] as Slot
      const result = await slot.result
      committed++
      concluded = commit(ctx, slot, result) || concluded
    }
  }

  let index = 0
  try {
    while (index < blocks.length && !ctx.signal.aborted) {
      const block = blocks[index] as ToolCallBlock
      const call = planCall(ctx, block)
      const tool = ctx.tools.get(call.name)
      const parallel = tool !== undefined && isConcurrencySafe(tool, call.arguments)
      const inFlight = slots.length - committed
      // An exclusive call is a barrier: everything before it commits first. A full pool waits for its oldest.
      if (!parallel) await drainThrough(slots.length)
      else if (inFlight >= ctx.maxParallel) await drainThrough(committed + 1)
      if (failure !== undefined) break
      if (ctx.signal.aborted) break
      slots.push(await startCall(ctx, call, tool))
      index++
      if (!parallel) await drainThrough(slots.length)
    }
    await drainThrough(slots.length)
  } catch (error) {
    failure ??= error
    await Promise.allSettled(slots.map((s) => s.result))
  }
  if (failure !== undefined) throw failure
  // Abort: pair every call that never started, so no call in the log lacks a result.
  for (; index < blocks.length; index++) {
    const block = blocks[index] as ToolCallBlock
    const callSeq = ctx.session.append('tool/call', { turn: ctx.turn, step: ctx.step, callId: block.id, name: block.name, arguments: block.arguments }).seq
    appendResult(ctx, block.id, callSeq, errorResult('tool call aborted before dispatch', 'ABORTED_BEFORE_DISPATCH', 'AbortError'))
  }
  return concluded
}

function planCall(ctx: ToolBatchContext, block: ToolCallBlock): ToolCall {
  return Object.freeze({
    turn: ctx.turn,
    step: ctx.step,
    callId: block.id,
    name: block.name,
    arguments: parseArguments(block.arguments),
    rawArguments: block.arguments,
  })
}

/** `''` → `{}`; parseable JSON → its value; anything else stays the raw string (and fails validation). */
export function parseArguments(raw: string): JsonValue {
  if (raw.trim() === '') return {}
  try {
    return (snapshotJsonValue(JSON.parse(raw)) ?? raw) as JsonValue
  } catch {
    return raw
  }
}

function isConcurrencySafe(tool: DefinedTool, args: JsonValue): boolean {
  const flag = tool.concurrencySafe
  if (typeof flag !== 'function') return flag === true
  try {
    return flag(args) === true
  } catch {
    return false
  }
}

/** Logs the call, runs policy (awaited, in order), then starts the body without awaiting it. */
async function startCall(ctx: ToolBatchContext, call: ToolCall, tool: DefinedTool | undefined): Promise<Slot> {
  const callSeq = ctx.session.append('tool/call', { turn: call.turn, step: call.step, callId: call.callId, name: call.name, arguments: call.rawArguments }).seq
  const early = await prepareCall(ctx, call, tool)
  const body = early !== undefined ? Promise.resolve(early) : runBody(ctx, call, tool as DefinedTool)
  const result = body.then((r) => postExecute(ctx, call, r))
  // Observed later by drainThrough; this only keeps an early rejection from being reported as unhandled.
  result.catch(() => undefined)
  return { call, callSeq, result }
}

/** Unknown tool, bad arguments, policy: an early result, or `undefined` to run the body. */
async function prepareCall(ctx: ToolBatchContext, call: ToolCall, tool: DefinedTool | undefined): Promise<ToolCallResult | undefined> {
  if (tool === undefined) {
    const known = ctx.tools.names()
    return errorResult(`unknown tool '${call.name}'${known.length > 0 ? `; available tools: ${known.join(', ')}` : ''}`, 'UNKNOWN_TOOL', 'ToolNotFoundError')
  }
  if (typeof call.arguments === 'string') {
    return errorResult(`the arguments of '${call.name}' are not valid JSON; send a JSON object matching the tool's parameters`, 'INVALID_ARGS', 'ToolArgsError')
  }
  const decision = await ctx.hooks.waterfall('tools/pre-execute', { agent: ctx.agent, call, signal: ctx.signal }, () => ({ kind: 'allow' as const }), ctx.agent.id)
  if (decision.kind === 'deny') return errorResult(decision.reason, 'TOOL_DENIED', 'ToolDeniedError')
  if (decision.kind === 'ask') {
    const answer = await ctx.hooks.waterfall(
      'tools/approve',
      { agent: ctx.agent, call, reason: decision.reason, signal: ctx.signal },
      () => ({ kind: 'deny' as const, reason: `${decision.reason} (approval required, and no one can approve here)` }),
      ctx.agent.id,
    )
    if (answer.kind !== 'allow') return errorResult(answer.reason, 'TOOL_DENIED', 'ToolDeniedError')
  }
  if (ctx.signal.aborted) return errorResult('tool call aborted before dispatch', 'ABORTED_BEFORE_DISPATCH', 'AbortError')
  return undefined
}

async function runBody(ctx: ToolBatchContext, call: ToolCall, tool: DefinedTool): Promise<ToolCallResult> {
  const checked = tool.validate(call.arguments)
  if (!checked.ok) {
    return errorResult(`invalid arguments for '${call.name}': ${checked.problems.join('; ')}`, 'INVALID_ARGS', 'ToolArgsError')
  }
  // Intent before effect: the tool/call event is on disk before the body can change the world.
  await ctx.flush()
  if (ctx.signal.aborted) return errorResult('tool call aborted before dispatch', 'ABORTED_BEFORE_DISPATCH', 'AbortError')
  try {
    const output = normalizeToolOutput(await tool.execute(checked.value, { signal: ctx.signal, callId: call.callId, agent: ctx.agent }))
    const content: readonly ContentBlock[] = typeof output.content === 'string' ? [{ type: 'text', text: output.content }] : output.content
    return {
      content,
      isError: output.isError === true,
      ...(output.isError === true ? { error: { name: 'ToolError', code: output.errorCode ?? 'TOOL_FAILED' } } : {}),
      ...(output.meta !== undefined ? { meta: output.meta } : {}),
      ...(output.additionalContexts !== undefined ? { additionalContexts: output.additionalContexts } : {}),
      ...(output.concludesTurn === true || (tool.concludesTurn === true && output.isError !== true) ? { concludesTurn: true } : {}),
    }
  } catch (error) {
    if (ctx.signal.aborted) return errorResult('tool call was cancelled while running', 'ABORTED', 'AbortError')
    const code = error instanceof HarnessError ? error.code : 'TOOL_FAILED'
    const name = error instanceof Error ? error.name : 'Error'
    return errorResult(error instanceof Error ? error.message : String(error), code, name)
  }
}

async function postExecute(ctx: ToolBatchContext, call: ToolCall, result: ToolCallResult): Promise<ToolCallResult> {
  if (!ctx.hooks.has('tools/post-execute')) return result
  return await ctx.hooks.waterfall('tools/post-execute', { agent: ctx.agent, call, result, signal: ctx.signal }, () => result, ctx.agent.id)
}

function commit(ctx: ToolBatchContext, slot: Slot, result: ToolCallResult): boolean {
  appendResult(ctx, slot.call.callId, slot.callSeq, result)
  for (const m of result.additionalContexts ?? []) ctx.acceptContext(m)
  return result.concludesTurn === true && !result.isError
}

function appendResult(ctx: ToolBatchContext, callId: string, callSeq: number, result: ToolCallResult): void {
  const message = draftToolResultMessage(callId, result.content, result.isError)
  ctx.session.append(
    'tool/result',
    {
      turn: ctx.turn,
      step: ctx.step,
      message,
      ...(result.error !== undefined ? { error: { name: result.error.name, code: result.error.code } } : {}),
      ...(result.meta !== undefined ? { meta: result.meta } : {}),
    },
    { surfaceOp: 'append', sourceEventSeqs: [callSeq] },
  )
}

/** An error result the model reads as `Error: <message>`. */
export function errorResult(message: string, code: string, name: string): ToolCallResult {
  return { content: [{ type: 'text', text: `Error: ${message}` }], isError: true, error: { name, code } }
}
