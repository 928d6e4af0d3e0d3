// The tool side of a cassette: tools with the recorded names and schemas whose bodies answer from the log, so a
// regression test that replays a session touches no file, runs no command and calls no service.
import { HarnessError } from '../errors/harness-error.js'
import type { ToolSchema } from '../llm/types.js'
import type { RequestHeader, SessionEvent } from '../session/events.js'
import { defineTool } from '../tools/define-tool.js'
import type { JsonSchema, ToolDefinition, ToolOutput } from '../tools/types.js'
import { canonicalArguments } from '../views/canonical-arguments.js'
import { recordedResults, type RecordedToolResult } from '../views/replay-recording.js'

interface RecordedCall {
  readonly callId: string
  readonly name: string
  /** Canonical arguments ({@link canonicalArguments}). */
  readonly args: string
  readonly result: RecordedToolResult | undefined
  used: boolean
}

/**
 * Tool definitions with the same names, descriptions and parameter schemas as the recorded session's (every tool
 * any of its request headers offered, first definition of a name kept), whose bodies answer each call with the
 * recorded `tool/result` of the matching call: the call with the same id (however often the set is used), or else
 * the first recorded call of the same tool with the same arguments (key order aside) not yet answered that way, so a
 * session that went live after a divergence still finds its results. A call that was never recorded fails with `REPLAY_DIVERGED`; nothing else ever runs.
 * @example
 * ```ts
 * const harness = createHarness({ adapters: [replayAdapter({ events })], tools: recordedTools(events) })
 * ```
 */
export function recordedTools(events: readonly SessionEvent[]): ToolDefinition[] {
  const results = recordedResults(events)
  const calls: RecordedCall[] = []
  const byId = new Map<string, RecordedCall>()
  const schemas = new Map<string, ToolSchema>()
  for (const e of events) {
    if (e.type === 'request/header') {
      for (const tool of (e.data as unknown as { header: RequestHeader }).header.tools ?? []) if (!schemas.has(tool.name)) schemas.set(tool.name, tool)
    }
    if (e.type === 'tool/call') {
      const d = e.data as { callId: string; name: string; arguments: string }
      const call: RecordedCall = { callId: d.callId, name: d.name, args: canonicalArguments(d.arguments), result: results.get(d.callId), used: false }
      // A re-run of a call after a crash (`of`) logs the same id again: the later one holds the result that counted.
      const earlier = byId.get(d.callId)
      if (earlier !== undefined) calls.splice(calls.indexOf(earlier), 1)
      calls.push(call)
      byId.set(d.callId, call)
    }
  }

  const answer = (name: string, callId: string, args: unknown): ToolOutput => {
    const canonical = canonicalArguments(args)
    const same = (c: RecordedCall): boolean => c.name === name && c.args === canonical
    // The same id is the same call, however often the tools are used (one set shared by several replays); a
    // call matched only by its arguments takes each recorded call once, so repeated calls get their own results.
    const byCallId = byId.get(callId)
    const call = byCallId !== undefined && same(byCallId) ? byCallId : calls.find((c) => !c.used && same(c))
    if (call === undefined) {
      throw new HarnessError(`replay diverged: ${name} was called (call ${callId}) with ${clip(canonical)}, which the recording has no call for`, 'REPLAY_DIVERGED')
    }
    call.used = true
    if (call.result === undefined) {
      throw new HarnessError(`replay diverged: the recorded call ${call.callId} of ${name} has no recorded result`, 'REPLAY_DIVERGED')
    }
    return {
      content: call.result.content,
      ...(call.result.isError ? { isError: true, errorCode: call.result.error?.code ?? 'TOOL_FAILED' } : {}),
    }
  }

  // Defined here, once: a harness given plain definitions compiles each schema's validator again, and one set is
  // typically shared by many replays (each a harness of its own).
  return [...schemas.values()].map((schema) =>
    defineTool<unknown>({
      name: schema.name,
      description: schema.description,
      parameters: schema.parameters as JsonSchema,
      execute: (args: unknown, ctx: { readonly callId: string }) => answer(schema.name, ctx.callId, args),
    }),
  )
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 119)}…` : text
}
