import type { TokenUsage, ToolResultBlock } from '../llm/types.js'
import type { RequestHeader, SessionEvent, TurnEndReason } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import { loggedRequests } from './request-reconstruction.js'
import { addUsage, emptyUsage, type UsageTotals } from '../llm/token-usage.js'

/** One model request in `inspect`'s tree. */
export interface RequestNode {
  readonly firstSeq: number
  readonly lastSeq: number
  readonly provider: string | undefined
  readonly model: string | undefined
  /** The attempt's own time: from when it was sent to its last chunk (a retry wait before it is not included). */
  readonly durationMs: number
  /** The retry wait before this attempt (logged by `llm/retry`), when it is a retry. */
  readonly retryWaitMs?: number
  /** The finish kind, if the stream finished (`stop`, `tool-calls`, `max-tokens`, `error`, …). */
  readonly finish: string | undefined
  /** The failure code of an `error` finish. */
  readonly failure?: string
  readonly usage?: TokenUsage
}

/** One tool call in `inspect`'s tree. */
export interface ToolNode {
  readonly callId: string
  readonly name: string
  readonly arguments: string
  readonly callSeq: number
  readonly resultSeq?: number
  readonly durationMs?: number
  readonly isError?: boolean
  /** Failure code (`TOOL_DENIED`, `INVALID_ARGS`, …). */
  readonly code?: string
  /** The permission decision, when one was logged. */
  readonly permission?: string
}

/** One step. */
export interface StepNode {
  readonly step: number
  readonly startSeq: number
  endSeq?: number
  durationMs?: number
  readonly requests: RequestNode[]
  readonly tools: ToolNode[]
}

/** One compaction run (`compaction/start` … `compaction/end`), with its summary call's usage when it made one. */
export interface CompactionNode {
  readonly startSeq: number
  endSeq?: number
  /** The turn it ran in; `null` for a compaction by hand between turns. */
  readonly turn: number | null
  readonly trigger: string
  outcome?: string
  tokensBefore?: number
  tokensAfter?: number
  /** Failure code of a failed run. */
  error?: string
  /** Route and usage of the summary call (not part of any turn's usage). */
  provider?: string
  model?: string
  usage?: TokenUsage
}

/** One turn. */
export interface TurnNode {
  readonly turn: number
  readonly startSeq: number
  endSeq?: number
  durationMs?: number
  reason?: TurnEndReason
  readonly usage: UsageTotals
  readonly steps: StepNode[]
}

/** `inspect --json`: the session and its turn → step → request/tool tree. */
export interface SessionTree {
  readonly id: string
  readonly createdAt: string
  readonly parentSession?: string
  /** Set on a rerun: the recorded session it reran. */
  readonly forkedFrom?: string
  readonly seedLength?: number
  readonly events: number
  readonly turns: TurnNode[]
  /** Every compaction run, in log order. */
  readonly compactions: CompactionNode[]
}

/** Builds the turn → step → request/tool tree of a log in one pass (plus one pass over its chunk runs). */
export function buildSessionTree(header: SessionHeader, events: readonly SessionEvent[]): SessionTree {
  const turns: TurnNode[] = []
  const compactions: CompactionNode[] = []
  const requestsByFirst = new Map(loggedRequests(events).map((r) => [r.firstSeq, r]))
  const usageByFirstChunk = new Map<number, TokenUsage>()
  const tools = new Map<string, { node: ToolNode; time: number }>()
  let header$: RequestHeader | undefined
  let turn: TurnNode | undefined
  let step: StepNode | undefined
  let turnStart = 0
  let stepStart = 0
  for (const e of events) {
    if (e.type === 'assistant/message' && e.sourceEventSeqs !== undefined && e.sourceEventSeqs.length > 0) {
      const usage = (e.data as { usage?: TokenUsage }).usage
      if (usage !== undefined) usageByFirstChunk.set(e.sourceEventSeqs[0] as number, usage)
    }
  }
  for (const e of events) {
    const d = e.data as Record<string, unknown>
    switch (e.type) {
      case 'request/header':
        header$ = (d as unknown as { header: RequestHeader }).header
        break
      case 'turn/start':
        turn = { turn: d.turn as number, startSeq: e.seq, usage: emptyUsage(), steps: [] }
        turnStart = e.time
        turns.push(turn)
        break
      case 'turn/end':
        if (turn !== undefined) {
          turn.endSeq = e.seq
          turn.durationMs = e.time - turnStart
          turn.reason = d.reason as TurnEndReason
        }
        turn = undefined
        break
      case 'step/start':
        step = { step: d.step as number, startSeq: e.seq, requests: [], tools: [] }
        stepStart = e.time
        turn?.steps.push(step)
        break
      case 'step/end':
        if (step !== undefined) {
          step.endSeq = e.seq
          step.durationMs = e.time - stepStart
        }
        step = undefined
        break
      case 'assistant/message':
        if (turn !== undefined) addUsage(turn.usage, d.usage as TokenUsage | undefined)
        break
      case 'assistant/chunk': {
        const request = requestsByFirst.get(e.seq)
        if (request === undefined || step === undefined) break
        const before = events[e.seq - 1]
        const finishChunk = events[request.lastSeq]?.data as { chunk?: { type: string; reason?: { failure?: { code?: string } } } } | undefined
        const failure = finishChunk?.chunk?.type === 'finish' ? finishChunk.chunk.reason?.failure?.code : undefined
        const usage = usageByFirstChunk.get(e.seq)
        // A retry's `llm/retry` is logged before its wait: the attempt itself starts when the wait is over.
        const retryWaitMs = before?.type === 'llm/retry' ? ((before.data as { delayMs?: number }).delayMs ?? 0) : undefined
        const sentAt = (before?.time ?? e.time) + (retryWaitMs ?? 0)
        step.requests.push({
          firstSeq: request.firstSeq,
          lastSeq: request.lastSeq,
          provider: header$?.config.provider,
          model: header$?.config.model,
          durationMs: Math.max(0, (events[request.lastSeq]?.time ?? e.time) - sentAt),
          ...(retryWaitMs !== undefined ? { retryWaitMs } : {}),
          finish: request.finish,
          ...(failure !== undefined ? { failure } : {}),
          ...(usage !== undefined ? { usage } : {}),
        })
        break
      }
      case 'compaction/start':
        compactions.push({ startSeq: e.seq, turn: (d.turn as number | null) ?? null, trigger: String(d.trigger) })
        break
      case 'compaction/summary': {
        const node = compactions[compactions.length - 1]
        if (node === undefined) break
        if (typeof d.provider === 'string') node.provider = d.provider
        if (typeof d.model === 'string') node.model = d.model
        if (d.usage !== undefined) node.usage = d.usage as TokenUsage
        break
      }
      case 'compaction/end': {
        const node = compactions[compactions.length - 1]
        if (node === undefined || node.endSeq !== undefined) break
        node.endSeq = e.seq
        node.outcome = String(d.outcome)
        node.tokensBefore = d.tokensBefore as number
        node.tokensAfter = d.tokensAfter as number
        const code = (d.error as { code?: string } | undefined)?.code
        if (code !== undefined) node.error = code
        break
      }
      case 'tool/call': {
        const node: ToolNode = { callId: d.callId as string, name: d.name as string, arguments: d.arguments as string, callSeq: e.seq }
        tools.set(node.callId, { node, time: e.time })
        step?.tools.push(node)
        break
      }
      case 'permission/decision': {
        const entry = tools.get(d.callId as string)
        if (entry !== undefined) replace(step, entry.node, { ...entry.node, permission: `${String(d.decision)} by ${String(d.by)}` }, tools)
        break
      }
      case 'tool/result': {
        const block = (d.message as { content: ToolResultBlock[] }).content[0]
        const entry = tools.get(block?.toolCallId ?? '')
        if (entry === undefined) break
        const code = (d.error as { code?: string } | undefined)?.code
        replace(step, entry.node, { ...entry.node, resultSeq: e.seq, durationMs: e.time - entry.time, isError: block?.isError === true, ...(code !== undefined ? { code } : {}) }, tools)
        break
      }
    }
  }
  return {
    id: header.id,
    createdAt: new Date(header.createdAt).toISOString(),
    ...(header.parentSession !== undefined ? { parentSession: header.parentSession } : {}),
    ...(header.forkedFrom !== undefined ? { forkedFrom: header.forkedFrom } : {}),
    ...(header.seedLength !== undefined ? { seedLength: header.seedLength } : {}),
    events: events.length,
    turns,
    compactions,
  }
}

// Tool nodes are immutable snapshots: a later event replaces the node in its step.
function replace(step: StepNode | undefined, old: ToolNode, next: ToolNode, index: Map<string, { node: ToolNode; time: number }>): void {
  const entry = index.get(old.callId)
  if (entry !== undefined) entry.node = next
  if (step === undefined) return
  const at = step.tools.indexOf(old)
  if (at >= 0) step.tools[at] = next
}
