import type { SessionEvent } from './events.js'

const EMPTY: Readonly<Record<string, unknown>> = Object.freeze({})

/**
 * Incremental checker of the log grammar (docs/architecture.md, "Invariant companions"): turns 1,2,3… never nested, steps 1,2,3… per turn
 * inside their turn, chunks/messages/tool calls inside the matching open step, every `tool/result` answering a
 * pending call of its step, headers and contexts inside a turn. `check` returns the problem with the next
 * event, or `undefined`; it then applies the event either way so later problems are still found.
 */
export class LogGrammar {
  #lastSeq = -1
  #openTurn: number | undefined
  #openStep: number | undefined
  #nextTurn = 1
  #nextStep = 1
  readonly #pending = new Set<string>()

  /**
   * @internal The grammar after `length` events that end at a turn boundary: turn `lastTurn` ended, none open
   * (where a resume checkpoint's tail starts).
   */
  static afterTurn(lastTurn: number, length: number): LogGrammar {
    const grammar = new LogGrammar()
    grammar.#lastSeq = length - 1
    grammar.#nextTurn = lastTurn + 1
    return grammar
  }

  /** Checks and applies one event. */
  check(event: SessionEvent): string | undefined {
    const problem = this.peek(event)
    this.#apply(event)
    return problem
  }

  /**
   * Checks one event without applying it: for a candidate that may still be refused, so a veto never moves
   * the grammar past an event the log does not hold.
   */
  peek(event: SessionEvent): string | undefined {
    const problem = this.#problem(event)
    return problem === undefined ? undefined : `seq ${event.seq} (${event.type}): ${problem}`
  }

  /** Problems with the log ending here (open turn or step). */
  end(options: { allowOpenTurn?: boolean } = {}): string | undefined {
    if (options.allowOpenTurn === true || this.#openTurn === undefined) return undefined
    return `log ends inside turn ${this.#openTurn}${this.#openStep !== undefined ? ` (step ${this.#openStep} open)` : ''}`
  }

  /** The turn open after the events seen so far. */
  get openTurn(): number | undefined {
    return this.#openTurn
  }

  #problem(e: SessionEvent): string | undefined {
    if (e.seq <= this.#lastSeq) return `seq does not increase (previous ${this.#lastSeq})`
    const d = (typeof e.data === 'object' && e.data !== null ? e.data : EMPTY) as Record<string, unknown>
    switch (e.type) {
      case 'turn/start':
        if (this.#openTurn !== undefined) return `turn ${this.#openTurn} is still open`
        if (d.turn !== this.#nextTurn) return `turn ${String(d.turn)} where ${this.#nextTurn} was expected`
        if (!Number.isSafeInteger(d.turn) || (d.turn as number) < 1) return 'turn must be a positive integer'
        return undefined
      case 'turn/end':
        if (this.#openTurn === undefined || d.turn !== this.#openTurn) return `ends turn ${String(d.turn)} which is not open`
        if (this.#openStep !== undefined) return `step ${this.#openStep} is still open`
        if (typeof d.reason !== 'object' || d.reason === null) return 'missing reason'
        return undefined
      case 'step/start':
        if (this.#openTurn === undefined || d.turn !== this.#openTurn) return `turn ${String(d.turn)} is not open`
        if (this.#openStep !== undefined) return `step ${this.#openStep} is still open`
        if (d.step !== this.#nextStep) return `step ${String(d.step)} where ${this.#nextStep} was expected`
        return undefined
      case 'step/end':
        if (this.#openStep === undefined || d.turn !== this.#openTurn || d.step !== this.#openStep) return `ends step ${String(d.step)} which is not open`
        return undefined
      case 'assistant/chunk':
      case 'assistant/message':
        return this.#inStep(d)
      case 'tool/call':
        return this.#inStep(d)
      case 'tool/result': {
        if (e.surfaceOp !== 'append') return this.#openTurn === undefined ? 'replace outside a turn' : undefined
        const outside = this.#inStep(d)
        if (outside !== undefined) return outside
        const callId = (d.message as { source?: { callId?: string } } | undefined)?.source?.callId
        const code = (d.error as { code?: string } | undefined)?.code
        if (callId === undefined) return 'no callId'
        if (!this.#pending.has(callId) && code !== 'TOOL_NOT_STARTED') return `answers call '${callId}' which has no pending tool/call`
        return undefined
      }
      case 'request/header':
      case 'request/context':
      case 'todo/write':
        return this.#openTurn === undefined ? 'outside a turn' : undefined
      default:
        return undefined
    }
  }

  // A method, not a closure per event: stores judge every record of a log on load with this grammar.
  #inStep(d: Record<string, unknown>): string | undefined {
    if (this.#openTurn === undefined || this.#openStep === undefined) return 'outside an open step'
    if (d.turn !== this.#openTurn || d.step !== this.#openStep) return `names turn ${String(d.turn)} step ${String(d.step)} but turn ${this.#openTurn} step ${this.#openStep} is open`
    return undefined
  }

  #apply(e: SessionEvent): void {
    this.#lastSeq = Math.max(this.#lastSeq, e.seq)
    const d = (typeof e.data === 'object' && e.data !== null ? e.data : EMPTY) as Record<string, unknown>
    switch (e.type) {
      case 'turn/start':
        this.#openTurn = d.turn as number
        this.#openStep = undefined
        this.#nextStep = 1
        this.#pending.clear()
        this.#nextTurn = (d.turn as number) + 1
        break
      case 'turn/end':
        this.#openTurn = undefined
        this.#openStep = undefined
        break
      case 'step/start':
        this.#openStep = d.step as number
        break
      case 'step/end':
        this.#openStep = undefined
        this.#nextStep = (d.step as number) + 1
        this.#pending.clear()
        break
      case 'tool/call':
        this.#pending.add(d.callId as string)
        break
      case 'tool/result': {
        const callId = (d.message as { source?: { callId?: string } } | undefined)?.source?.callId
        if (callId !== undefined && e.surfaceOp === 'append') this.#pending.delete(callId)
        break
      }
    }
  }
}
