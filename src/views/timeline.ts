import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'
import { buildSessionTree, type RequestNode, type ToolNode } from './session-tree.js'
import { emptyUsage, shownUsage, type UsageTotals } from '../llm/token-usage.js'
import { describeReason, toolSubject } from './turn-outcome.js'

/** What a waterfall row stands for. */
export type TimelineRowKind = 'turn' | 'step' | 'request' | 'tool'

/**
 * One row of a session's waterfall: a turn, a step, a model request attempt or a tool call, with its place on
 * the shared time axis. Rows come in display order (a turn, then its steps, each followed by its requests and
 * tool calls in log order), so a list of rows can be drawn (and virtualised) without re-sorting.
 */
export interface TimelineRow {
  readonly kind: TimelineRowKind
  /** 0 turn, 1 step, 2 request or tool call. */
  readonly depth: number
  /** `turn 2`, `step 1`, `request deepseek/deepseek-chat`, `tool bash ls -la`. */
  readonly label: string
  /** ms since epoch. */
  readonly start: number
  /** ms since epoch; absent while the row is still open. */
  readonly end?: number
  /**
   * One word to colour by: a turn's end reason (`completed`, `aborted`, `error`, …), a request's finish
   * (`stop`, `tool-calls`, `error`, …), a tool's `ok` / `failed`, or `open` while running.
   */
  readonly status: string
  /** The readable explanation (`aborted (cancelled by you)`, `RATE_LIMIT`, `allow by user`, …). */
  readonly detail: string
  readonly turn: number
  readonly step?: number
  readonly firstSeq: number
  readonly lastSeq?: number
  /** For request rows: the 1-based request number (`GET /api/sessions/:id/requests/:n`). */
  readonly request?: number
  /** For tool rows. */
  readonly callId?: string
  /** Token figures of a turn or a request. */
  readonly usage?: UsageTotals
  /** For a continuation turn: the turn a crash interrupted, whose work it carries on (`turn/start` `continues`). */
  readonly continues?: number
  // Cost: `sessionCost(events, catalogue)` (views/cost.ts) fills a `cost` figure per turn/request here once the
  // model catalogue carries prices.
}

/** A session as a waterfall: rows plus the time axis and totals. */
export interface Timeline {
  readonly id: string
  readonly createdAt: string
  readonly parentSession?: string
  readonly events: number
  /** Time axis: the first event's time and the last event's (or `Date.now()` while a row is open). */
  readonly start: number
  readonly end: number
  readonly usage: UsageTotals
  readonly turns: number
  readonly requests: number
  readonly rows: readonly TimelineRow[]
}

/**
 * Lays out a session's turn → step → request/tool tree ({@link buildSessionTree}) as waterfall rows with times
 * taken from the events themselves, so every viewer draws the same bars.
 * @example
 * ```ts
 * const { rows } = buildTimeline(stored.header, stored.events)
 * for (const row of rows) console.log(' '.repeat(row.depth * 2) + row.label, row.status)
 * ```
 */
export function buildTimeline(header: SessionHeader, events: readonly SessionEvent[], now: number = Date.now()): Timeline {
  const tree = buildSessionTree(header, events)
  const timeOf = (seq: number | undefined): number | undefined => (seq === undefined ? undefined : events[seq]?.time)
  const rows: TimelineRow[] = []
  const usage = emptyUsage()
  let requestNumber = 0
  let open = false
  for (const turn of tree.turns) {
    const turnEnd = timeOf(turn.endSeq)
    if (turnEnd === undefined) open = true
    usage.input += turn.usage.input
    usage.output += turn.usage.output
    usage.cacheRead += turn.usage.cacheRead
    rows.push({
      kind: 'turn',
      depth: 0,
      label: `turn ${turn.turn}`,
      start: timeOf(turn.startSeq) ?? now,
      ...(turnEnd !== undefined ? { end: turnEnd } : {}),
      status: turn.reason?.kind ?? 'open',
      detail: turn.reason !== undefined ? describeReason(turn.reason) : 'running',
      turn: turn.turn,
      firstSeq: turn.startSeq,
      ...(turn.endSeq !== undefined ? { lastSeq: turn.endSeq } : {}),
      usage: turn.usage,
      ...continuesOf(events[turn.startSeq]),
    })
    for (const step of turn.steps) {
      const stepEnd = timeOf(step.endSeq)
      rows.push({
        kind: 'step',
        depth: 1,
        label: `step ${step.step}`,
        start: timeOf(step.startSeq) ?? now,
        ...(stepEnd !== undefined ? { end: stepEnd } : {}),
        status: stepEnd === undefined ? 'open' : 'done',
        detail: `${step.requests.length} request${step.requests.length === 1 ? '' : 's'}, ${step.tools.length} tool call${step.tools.length === 1 ? '' : 's'}`,
        turn: turn.turn,
        step: step.step,
        firstSeq: step.startSeq,
        ...(step.endSeq !== undefined ? { lastSeq: step.endSeq } : {}),
      })
      const children: TimelineRow[] = [
        ...step.requests.map((r) => requestRow(r, ++requestNumber, turn.turn, step.step, timeOf, stepEnd === undefined)),
        ...step.tools.map((t) => toolRow(t, turn.turn, step.step, timeOf, now)),
      ]
      children.sort((x, y) => x.firstSeq - y.firstSeq)
      rows.push(...children)
    }
  }
  const first = events[0]?.time ?? now
  const last = events[events.length - 1]?.time ?? first
  return {
    id: tree.id,
    createdAt: tree.createdAt,
    ...(tree.parentSession !== undefined ? { parentSession: tree.parentSession } : {}),
    events: events.length,
    start: first,
    end: open ? Math.max(now, last) : last,
    usage,
    turns: tree.turns.length,
    requests: requestNumber,
    rows,
  }
}

function requestRow(r: RequestNode, n: number, turn: number, step: number, timeOf: (seq: number) => number | undefined, stepOpen: boolean): TimelineRow {
  const end = timeOf(r.lastSeq) ?? timeOf(r.firstSeq) ?? 0
  const status = r.finish ?? (stepOpen ? 'open' : 'cancelled')
  return {
    kind: 'request',
    depth: 2,
    label: `request ${String(r.provider)}/${String(r.model)}`,
    start: end - r.durationMs,
    ...(r.finish !== undefined || !stepOpen ? { end } : {}),
    status,
    detail: r.failure !== undefined ? `${String(r.finish)} ${r.failure}` : status === 'open' ? 'streaming' : status,
    turn,
    step,
    firstSeq: r.firstSeq,
    lastSeq: r.lastSeq,
    request: n,
    ...(r.usage !== undefined ? { usage: shownUsage(r.usage) } : {}),
  }
}

function toolRow(t: ToolNode, turn: number, step: number, timeOf: (seq: number) => number | undefined, now: number): TimelineRow {
  const subject = toolSubject(t.arguments)
  const start = timeOf(t.callSeq) ?? now
  const status = t.resultSeq === undefined ? 'open' : t.isError === true ? 'failed' : 'ok'
  const detail = [t.code, t.permission].filter((s): s is string => s !== undefined).join(' · ')
  return {
    kind: 'tool',
    depth: 2,
    label: `tool ${t.name}${subject !== '' ? ` ${subject}` : ''}`,
    start,
    ...(t.resultSeq !== undefined ? { end: timeOf(t.resultSeq) ?? start } : {}),
    status,
    detail: detail !== '' ? detail : status === 'open' ? 'waiting for its result' : status,
    turn,
    step,
    firstSeq: t.callSeq,
    ...(t.resultSeq !== undefined ? { lastSeq: t.resultSeq } : {}),
    callId: t.callId,
  }
}

// A continuation turn's `turn/start` names the interrupted turn it carries on.
function continuesOf(start: SessionEvent | undefined): { continues?: number } {
  const continues = start?.type === 'turn/start' ? (start.data as { continues?: unknown }).continues : undefined
  return typeof continues === 'number' ? { continues } : {}
}
