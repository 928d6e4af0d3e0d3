// Re-running, in a continuation turn's first step, the calls a crash cut off whose tools allow it (replay policy
// `safe` or `keyed`; docs/scaling.md, "Continuation after a crash"). Each re-run is logged as its own `tool/call`
// naming the original in `of`, goes through the same policy and body stages as any call, and its result
// replaces repair's `TOOL_OUTCOME_UNKNOWN` on the surface, so the model reads the call's real outcome in place.
import { errorChain } from '../errors/harness-error.js'
import { draftToolResultMessage } from '../llm/messages.js'
import type { RerunCall } from '../session/continuation.js'
import type { ToolCall } from './hook-table.js'
import type { LoopContext, StepContext } from './loop-context.js'
import { parseArguments } from './tool-calls.js'
import { errorResult, postExecuteToolCall, prepareToolCall, runToolBody, type ToolStageContext } from './tool-pipeline.js'

/**
 * Runs `reruns` one after another inside the open step `at`. A call whose tool is gone or no longer allows a
 * re-run, or whose repair result is no longer on the surface (compacted away), is left as repair answered it.
 * Throws only when the log fails (as a step's tool batch does).
 */
export async function rerunInterruptedCalls(loop: LoopContext, at: StepContext, reruns: readonly RerunCall[]): Promise<void> {
  const ctx: ToolStageContext = {
    agent: loop.agent,
    hooks: loop.hooks,
    tools: loop.tools,
    delegation: loop.delegation,
    signal: at.signal,
    flush: () => loop.writer.flush(),
  }
  for (const rerun of reruns) {
    at.signal.throwIfAborted()
    const tool = loop.tools.get(rerun.name)
    if (tool === undefined || (tool.replay !== 'safe' && tool.replay !== 'keyed')) continue
    if (!loop.session.surfaceNodes().includes(rerun.resultSeq)) continue
    const call: ToolCall = Object.freeze({
      turn: at.turn,
      step: at.step,
      callId: rerun.callId,
      name: rerun.name,
      arguments: parseArguments(rerun.arguments),
      rawArguments: rerun.arguments,
    })
    const callSeq = loop.session.append(
      'tool/call',
      Object.freeze({ turn: at.turn, step: at.step, callId: rerun.callId, name: rerun.name, arguments: rerun.arguments, of: rerun.of }),
    ).seq
    const early = await prepareToolCall(ctx, call, tool)
    const outcome =
      early !== undefined
        ? { result: early }
        : await runToolBody(ctx, call, tool).catch((error: unknown) => ({ result: errorResult(`the tool pipeline failed: ${errorChain(error)}`, 'TOOL_FAILED', 'Error') }))
    const result = await postExecuteToolCall(ctx, call, outcome.result)
    loop.session.append(
      'tool/result',
      Object.freeze({
        turn: at.turn,
        step: at.step,
        message: draftToolResultMessage(rerun.callId, result.content, result.isError),
        ...(result.error !== undefined ? { error: Object.freeze({ name: result.error.name, code: result.error.code }) } : {}),
        ...(result.meta !== undefined ? { meta: result.meta } : {}),
      }),
      { surfaceOp: { op: 'replace', start: rerun.resultSeq, end: rerun.resultSeq }, sourceEventSeqs: Object.freeze([rerun.resultSeq, callSeq]) },
    )
    for (const m of result.additionalContexts ?? []) loop.inbox.append('next-step', m)
    if ('logFailure' in outcome && outcome.logFailure !== undefined) throw outcome.logFailure
  }
}
