import { errorChain } from '../errors/harness-error.js'
import { snapshotJsonValue, type JsonValue } from '../json/lossless.js'
import { draftToolResultMessage } from '../llm/messages.js'
import type { ToolCallBlock, UserMessage } from '../llm/types.js'
import type { Session } from '../session/session.js'
import type { DefinedTool } from '../tools/define-tool.js'
import type { ToolCall, ToolCallResult } from './hook-table.js'
import { abortedBeforeDispatch, errorResult, postExecuteToolCall, prepareToolCall, runToolBody, type ToolOutcome, type ToolStageContext } from './tool-pipeline.js'

/** What the scheduler needs from the step that runs it. */
export interface ToolBatchContext extends ToolStageContext {
  readonly session: Session
  readonly turn: number
  readonly step: number
  /** Most bodies running at once (rolling pool). */
  readonly maxParallel: number
  /** Queues tool-produced context for the next step. */
  acceptContext(message: UserMessage): void
}

interface Slot {
  readonly call: ToolCall
  readonly callSeq: number
  /** Settles with the outcome; never rejects. */
  readonly outcome: Promise<ToolOutcome>
  settled: boolean
}

/**
 * Runs one step's tool calls (seed §5; docs/architecture.md, "Tool calls: every call answered"): `tool/call` logged and policy run strictly
 * in model order; concurrency-safe bodies in a rolling pool (a new body starts as soon as any running one
 * settles); post-execute and the `tool/result` append at commit, strictly in model order; never-started calls
 * paired with `ABORTED_BEFORE_DISPATCH` results on abort. Tool and listener failures are results the model
 * reads, never turn failures. Only a failing log (a refused append, a store that cannot write) throws: then no
 * new call starts, running bodies are waited for (never abandoned), and the error propagates — the turn's
 * closers answer every call left without a result. Returns true when a committed result concluded the turn.
 */
export async function executeToolCalls(ctx: ToolBatchContext, blocks: readonly ToolCallBlock[]): Promise<boolean> {
  const slots: Slot[] = []
  let committed = 0
  let concluded = false
  let failure: unknown

  // Commits the settled prefix in model order, and waits for slots before `through` (exclusive) to settle.
  const commitReady = async (through: number): Promise<void> => {
    while (committed < slots.length && failure === undefined) {
      const slot = slots[committed] as Slot
      if (committed >= through && !slot.settled) return
      const outcome = await slot.outcome
      try {
        concluded = (await commit(ctx, slot, outcome.result)) || concluded
      } catch (error) {
        failure = error
        return
      }
      committed++
      if (outcome.logFailure !== undefined) failure = outcome.logFailure
    }
  }

  let index = 0
  while (index < blocks.length && !ctx.signal.aborted && failure === undefined) {
    const block = blocks[index] as ToolCallBlock
    const call = planCall(ctx, block)
    const tool = ctx.tools.get(call.name)
    const parallel = tool !== undefined && isConcurrencySafe(tool, call.arguments)
    if (!parallel) {
      // An exclusive call is a barrier: everything before it commits first (nothing to wait for before the first).
      if (committed < slots.length) await commitReady(slots.length)
    } else {
      // Rolling pool: wait for ANY running body, not the oldest one.
      for (let running = runningBodies(slots); running.length >= ctx.maxParallel; running = runningBodies(slots)) {
        await Promise.race(running.map((s) => s.outcome))
        await commitReady(committed)
      }
    }
    if (failure !== undefined || ctx.signal.aborted) break
    let callSeq: number
    try {
      callSeq = appendCall(ctx, block)
    } catch (error) {
      failure = error
      break
    }
    index++
    slots.push(await startCall(ctx, call, callSeq, tool))
    await commitReady(parallel ? committed : slots.length)
  }
  if (failure === undefined) await commitReady(slots.length)
  if (failure !== undefined) {
    await Promise.all(slots.map((s) => s.outcome))
    throw failure
  }
  // Abort: pair every call that never started, so no call in the log lacks a result.
  for (; index < blocks.length; index++) {
    const block = blocks[index] as ToolCallBlock
    appendResult(ctx, block.id, appendCall(ctx, block), abortedBeforeDispatch())
  }
  return concluded
}

function runningBodies(slots: readonly Slot[]): Slot[] {
  return slots.filter((s) => !s.settled)
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

function appendCall(ctx: ToolBatchContext, block: ToolCallBlock): number {
  return ctx.session.append('tool/call', Object.freeze({ turn: ctx.turn, step: ctx.step, callId: block.id, name: block.name, arguments: block.arguments })).seq
}

/** Runs policy (awaited, so the next call's policy waits for this one), then starts the body without awaiting it. */
async function startCall(ctx: ToolBatchContext, call: ToolCall, callSeq: number, tool: DefinedTool | undefined): Promise<Slot> {
  const early = await prepareToolCall(ctx, call, tool)
  const outcome =
    early !== undefined
      ? Promise.resolve({ result: early })
      : runToolBody(ctx, call, tool as DefinedTool).catch((error: unknown) => ({ result: errorResult(`the tool pipeline failed: ${errorChain(error)}`, 'TOOL_FAILED', 'Error') }))
  const slot: Slot = { call, callSeq, outcome, settled: early !== undefined }
  if (!slot.settled) void outcome.then(() => (slot.settled = true))
  return slot
}

/** Post-execute, then the `tool/result` append citing its call, then the result's contexts. */
async function commit(ctx: ToolBatchContext, slot: Slot, outcome: ToolCallResult): Promise<boolean> {
  const result = ctx.hooks.has('tools/post-execute') ? await postExecuteToolCall(ctx, slot.call, outcome) : outcome
  appendResult(ctx, slot.call.callId, slot.callSeq, result)
  for (const m of result.additionalContexts ?? []) ctx.acceptContext(m)
  return result.concludesTurn === true && !result.isError
}

function appendResult(ctx: ToolBatchContext, callId: string, callSeq: number, result: ToolCallResult): void {
  const message = draftToolResultMessage(callId, result.content, result.isError)
  // Built frozen (the result's parts were frozen by the pipeline), so the log adopts it without a copy.
  ctx.session.append(
    'tool/result',
    Object.freeze({
      turn: ctx.turn,
      step: ctx.step,
      message,
      ...(result.error !== undefined ? { error: Object.freeze({ name: result.error.name, code: result.error.code }) } : {}),
      ...(result.meta !== undefined ? { meta: result.meta } : {}),
    }),
    { surfaceOp: 'append', sourceEventSeqs: Object.freeze([callSeq]) },
  )
}
