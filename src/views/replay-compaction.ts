import type { StreamChunk } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import type { Session } from '../session/session.js'
import { Surface } from '../session/surface.js'
import { loggedRequests } from './request-reconstruction.js'

interface RecordedReplace {
  readonly event: SessionEvent
  /** Positions of the replaced range in the surface as it was right before the replace. */
  readonly startIndex: number
  readonly endIndex: number
  /** The step it happened inside (an overflow compaction between two attempts), if any. */
  readonly inStep?: string
}

const key = (turn: number, step: number): string => `${turn}/${step}`

/**
 * Re-enacts a recorded session's surface replaces (compaction summaries, pruned tool results) in a replay's
 * fresh log, so the requests after a compaction can be compared too. A replace is located by surface position,
 * not seq (the fresh log has its own seqs): one made between steps is applied before the next step is built; one
 * made inside a step (after a context overflow) is applied between a re-enacted failed attempt and its retry.
 */
export class CompactionReenactor {
  readonly #pending: RecordedReplace[] = []
  readonly #stepStarts = new Map<string, number>()
  /** Per step with an in-step replace: the finish chunk of the attempt that failed before it. */
  readonly #failures = new Map<string, StreamChunk>()

  constructor(events: readonly SessionEvent[]) {
    const surface = new Surface()
    let step: string | undefined
    for (const event of events) {
      const d = event.data as { turn?: number; step?: number }
      if (event.type === 'step/start') {
        step = key(d.turn as number, d.step as number)
        this.#stepStarts.set(step, event.seq)
      }
      if (event.type === 'step/end') step = undefined
      const op = event.surfaceOp
      if (typeof op === 'object') {
        const nodes = surface.nodes
        this.#pending.push({ event, startIndex: nodes.indexOf(op.start), endIndex: nodes.indexOf(op.end), ...(step !== undefined ? { inStep: step } : {}) })
      }
      surface.apply(event)
    }
    for (const request of loggedRequests(events)) {
      const k = key(request.turn, request.step)
      const failedBefore = this.#pending.some((r) => r.inStep === k && r.event.seq > request.lastSeq) && request.finish === 'error'
      if (failedBefore && !this.#failures.has(k)) this.#failures.set(k, (events[request.lastSeq]?.data as { chunk: StreamChunk }).chunk)
    }
  }

  /** Applies the replaces made before step `turn/step` opened; returns problems. */
  beforeStep(session: Session, turn: number, step: number): string[] {
    const start = this.#stepStarts.get(key(turn, step))
    if (start === undefined) return []
    return this.#apply(session, (r) => r.inStep === undefined && r.event.seq < start)
  }

  /** The failure to answer this step's first attempt with, when the original compacted inside the step. */
  takeFailure(turn: number, step: number): StreamChunk | undefined {
    const k = key(turn, step)
    const chunk = this.#failures.get(k)
    this.#failures.delete(k)
    return chunk
  }

  /** Applies the replaces made inside step `turn/step`; true when there were any (the step should be retried). */
  inStep(session: Session, turn: number, step: number, problems: string[]): boolean {
    const k = key(turn, step)
    if (!this.#pending.some((r) => r.inStep === k)) return false
    problems.push(...this.#apply(session, (r) => r.inStep === k))
    return true
  }

  #apply(session: Session, select: (r: RecordedReplace) => boolean): string[] {
    const problems: string[] = []
    for (let i = 0; i < this.#pending.length; ) {
      const r = this.#pending[i] as RecordedReplace
      if (!select(r)) {
        i++
        continue
      }
      this.#pending.splice(i, 1)
      const problem = reenact(session, r)
      if (problem !== undefined) problems.push(problem)
    }
    return problems
  }
}

function reenact(session: Session, r: RecordedReplace): string | undefined {
  const nodes = session.surfaceNodes()
  const start = nodes[r.startIndex]
  const end = nodes[r.endIndex]
  if (r.startIndex < 0 || start === undefined || end === undefined) {
    return `seq ${r.event.seq} (${r.event.type} replace): the fresh history has no nodes ${r.startIndex}..${r.endIndex} to replace`
  }
  const shadowed = nodes.slice(r.startIndex, r.endIndex + 1)
  let data: unknown = r.event.data
  if (r.event.type === 'tool/result') {
    // A result rewrite keeps the fresh result's own fields and takes only the recorded body.
    const fresh = session.at(start)?.data as { message: { content: { content: unknown }[] } }
    const recorded = (r.event.data as { message: { content: { content: unknown }[] } }).message.content[0].content
    data = { ...fresh, message: { ...fresh.message, content: [{ ...fresh.message.content[0], content: recorded }] } }
  }
  try {
    session.append(r.event.type, data, { surfaceOp: { op: 'replace', start, end }, sourceEventSeqs: shadowed })
    return undefined
  } catch (error) {
    return `seq ${r.event.seq} (${r.event.type} replace): could not be re-enacted: ${(error as Error).message}`
  }
}
