// Layer 2 of the seed's layer table (§1), "Turn": starts when the driver calls it; owns the durable accounting of
// one batch of work, from `turn/start` to its one `turn/end`; ends completed, max-tokens, blocked, aborted or
// error. The order of its parts is §3 (with the pre-step that may open each step, §4), its end reasons §7, what
// it contains §8. Read after driver.ts; each step is step.ts.
import { HarnessError } from '../errors/harness-error.js'
import type { JsonValue } from '../json/lossless.js'
import type { InterruptedWork } from '../session/continuation.js'
import type { TurnEndReason } from '../session/events.js'
import { interruptedTurnClosers, type CloserEvent } from '../session/repair.js'
import type { PreStepDecision } from './hook-table.js'
import type { InboxTarget } from './inbox.js'
import { reportError, type LoopContext, type StepContext } from './loop-context.js'
import { joinContextSections, type PromptAssembly } from './prompt.js'
import { rerunInterruptedCalls } from './rerun.js'
import { COMPLETED, CONTINUE, runStep, type EnteredStep, type StepOutcome } from './step.js'
import { cancelCauseOf, failureOf, flushFailure } from './turn-failure.js'

/** What a turn reads and updates of the driver activity that runs it (driver.ts owns it). */
export interface TurnActivity {
  /** The last turn's number; the turn sets it to its own once its `turn/start` is logged. */
  turn: number
  /** The last step opened in the current turn (0 before its first). */
  step: number
  /** Set once the driver reads the inbox no more: a waking send must then start a new activity. */
  stopping: boolean
}

/**
 * How a turn left its activity: `next` (it ended durably: the driver may go on with queued work) or `stop`
 * (blocked, nothing to do, not opened, or its end not durable: the activity ends here).
 */
export type TurnExit = 'next' | 'stop'

const BLOCKED: TurnEndReason = Object.freeze({ kind: 'blocked' })

/**
 * One turn (§3): log `turn/start` before any input is claimed; propose the first step (`next-turn`: all of
 * next-step and one next-turn item); open a step only when pre-step lets a non-empty batch in; write every
 * opened step's `step/end`; offer `agent/turn-stopping` once the turn has its outcome and no steering waits;
 * write the one `turn/end` whatever happened. A failure is reported on `agent/error`, recorded in `turn/end`
 * and rethrown (the driver swallows it); a cancel ends the turn `aborted` with its cause.
 *
 * With `continuation` the turn carries on work a crash interrupted (docs/scaling.md, "Continuation after a
 * crash"): its `turn/start` names that turn in `continues`; it claims only steering when the interrupted turn
 * had committed its prompt; it opens its first step even with an empty batch — the request is rebuilt from the
 * log — unless the model's answer is already there; and that step first re-runs the calls the crash cut off
 * whose tools allow it.
 */
export async function runTurn(loop: LoopContext, activity: TurnActivity, signal: AbortSignal, continuation?: InterruptedWork): Promise<TurnExit> {
  const { session } = loop
  signal.throwIfAborted()
  const turn = activity.turn + 1
  // A turn whose closers could not be written (the store failed) is still open in memory: close it as crash
  // repair would before anything new is written, or stop here with the failure reported.
  if (!closeStaleTurn(loop, turn)) return stop(activity)
  try {
    session.append('turn/start', Object.freeze(continuation === undefined ? { turn } : { turn, continues: continuation.turn }))
  } catch (error) {
    reportError(loop, error, turn, 0)
    return stop(activity)
  }
  activity.turn = turn
  const turnStartSeq = session.length - 1
  // What the turn ends with so far: `continue` while its last step asks for another one.
  let ending: StepOutcome | TurnEndReason = CONTINUE
  let target: InboxTarget = continuation?.inputCommitted === true ? 'next-step' : 'next-turn'
  let durable = true
  // True while every opened step is closed and every tool call answered, as they are whenever the body below
  // finishes without a throw: the turn's end is then its only closer, and the turn is not scanned for more.
  let balanced = continuation === undefined
  try {
    for (;;) {
      signal.throwIfAborted()
      const at: StepContext = { turn, step: activity.step + 1, signal }
      const decision = await preStep(loop, target, at)
      if (decision.kind === 'reject') {
        ending = BLOCKED
        return stop(activity)
      }
      // A turn that already has its outcome does not open an extra step for an emptied batch.
      if (ending.kind !== 'continue' && decision.messages.length === 0) break
      if (activity.step === 0 && decision.messages.length === 0) {
        if (continuation === undefined) {
          ending = COMPLETED
          return stop(activity)
        }
        // Only the interrupted turn's end was missing: done, and queued work may follow.
        if (continuation.reruns.length === 0 && answered(loop)) {
          ending = COMPLETED
          break
        }
      }
      signal.throwIfAborted()
      session.append('step/start', Object.freeze({ turn, step: at.step }))
      activity.step = at.step
      for (const m of decision.messages) session.append('user/message', m, { surfaceOp: 'append' })
      if (continuation !== undefined && at.step === 1) await rerunInterruptedCalls(loop, at, continuation.reruns)
      const outcome = await runStep(loop, at, decision)
      // On a throw the step stays open here: the turn's closers answer its open tool calls first, then end it.
      session.append('step/end', Object.freeze({ turn, step: at.step }))
      // max-tokens is sticky for the rest of the turn (§7).
      if (ending.kind !== 'max-tokens') ending = outcome
      signal.throwIfAborted()
      if (ending.kind !== 'continue' && loop.inbox.nextStep.length === 0) {
        await loop.hooks.serial('agent/turn-stopping', { agent: loop.agent, turn, signal }, loop.agent.id)
        signal.throwIfAborted()
      }
      if (ending.kind !== 'continue' && loop.inbox.nextStep.length === 0) break
      target = 'next-step'
    }
  } catch (error) {
    balanced = false
    stop(activity)
    if (signal.aborted) {
      ending = { kind: 'aborted', reason: cancelCauseOf(signal.reason) }
    } else {
      ending = { kind: 'error', error: failureOf(error) }
      reportError(loop, error, turn, activity.step)
    }
    throw error
  } finally {
    closeTurn(loop, turnStartSeq, ending.kind === 'continue' ? COMPLETED : ending, turn, activity.step, balanced)
    durable = await flushTurnEnd(loop, turn, activity.step)
  }
  return durable ? 'next' : 'stop'
}

/** True when the history ends with the model's answer: an assistant message that calls no tool. */
function answered(loop: LoopContext): boolean {
  const messages = loop.session.historyView().messages
  const last = messages[messages.length - 1]
  return last?.role === 'assistant' && !last.content.some((b) => b.type === 'tool-call')
}

/**
 * Pre-step (§4), in this order: claim the input (the exclusive boundary: what arrives later waits), assemble
 * the system prompt and tool schemas, render the runtime context and let its projection decide whether a new
 * snapshot message joins the batch, then `agent/pre-step` decides: reject the step, or enter it with a batch.
 */
async function preStep(loop: LoopContext, target: InboxTarget, at: StepContext): Promise<{ readonly kind: 'reject' } | EnteredStep> {
  const { signal } = at
  const claimed = loop.inbox.claim(target, at.turn)
  const assembly = assemble(loop, signal)
  const tools = loop.tools.schemas()
  const context = loop.runtimeContext.project(joinContextSections(assembly.contexts), assembly.contexts)
  // The snapshot is added only by the default: a listener that answers itself drops it for this step.
  const enter = (): PreStepDecision => ({ kind: 'enter', messages: context !== undefined ? [...claimed, context] : claimed })
  // Without a listener the default decides at once: no payload, no tick.
  const decision: PreStepDecision = !loop.hooks.has('agent/pre-step')
    ? enter()
    : await loop.hooks.waterfall('agent/pre-step', { agent: loop.agent, messages: claimed, turn: at.turn, step: at.step, signal }, enter, loop.agent.id)
  signal.throwIfAborted()
  if (decision?.kind === 'reject') return { kind: 'reject' }
  if (decision?.kind !== 'enter' || !Array.isArray(decision.messages)) {
    throw new HarnessError(`agent/pre-step returned ${JSON.stringify(decision)}; expected {kind:'reject'} or {kind:'enter', messages}`, 'INVALID_DECISION')
  }
  return { kind: 'enter', messages: decision.messages, system: assembly.system, tools }
}

function assemble(loop: LoopContext, signal: AbortSignal): PromptAssembly {
  const { options } = loop
  const builtins = { cwd: options.cwd ?? process.cwd(), provider: options.provider, model: options.model }
  return loop.prompts.assemble(loop.promptLayers, { agent: loop.agent, signal }, builtins)
}

/**
 * Marks the activity as stopping and returns `stop`: from here on the driver reads the inbox no more, so a
 * waking send must request a new activity (driver.ts, `wake`) or it would sit queued with the agent idle.
 */
function stop(activity: TurnActivity): 'stop' {
  activity.stopping = true
  return 'stop'
}

/**
 * Ends the turn with exactly one `turn/end`: whatever is still open (tool calls without a result, the step)
 * is closed first by the crash-repair closers, with this turn's reason. A closer a guard refuses is reported
 * and committed anyway, because a turn left open would refuse every later turn; one the store refuses twice
 * leaves the turn open in memory for {@link closeStaleTurn} to close before the next turn.
 */
function closeTurn(loop: LoopContext, turnStartSeq: number, reason: TurnEndReason, turn: number, step: number, balanced: boolean): void {
  // A balanced turn needs exactly the closer the scan would find: its `turn/end` with this reason.
  const closers = balanced ? [{ type: 'turn/end', data: { turn, reason } as unknown as JsonValue }] : closersFrom(loop, turnStartSeq, reason)
  for (const closer of closers) if (!writeCloser(loop, closer, turn, step)) return
}

/** One closer, through the guards first; over a veto, unguarded; a store that failed once gets one more try. */
function writeCloser(loop: LoopContext, closer: CloserEvent, turn: number, step: number): boolean {
  try {
    appendClosing(loop, closer, true, true)
    return true
  } catch (refused) {
    reportError(loop, refused, turn, step)
  }
  for (let attempt = 1; ; attempt++) {
    try {
      appendClosing(loop, closer, false, true)
      return true
    } catch (failed) {
      reportError(loop, failed, turn, step)
      if (attempt === 2) return false
    }
  }
}

/** Closes a turn left open in memory by a failed close; false (reported) when even that cannot be written. */
function closeStaleTurn(loop: LoopContext, turn: number): boolean {
  const { session } = loop
  if (session.openTurn === undefined) return true
  let start = session.length - 1
  while (start > 0 && session.typeAt(start) !== 'turn/start') start--
  try {
    for (const closer of closersFrom(loop, start, { kind: 'interrupted' })) appendClosing(loop, closer, false)
    return true
  } catch (error) {
    reportError(loop, error, turn, 0)
    return false
  }
}

/** The closers of the turn that starts at `turnStartSeq` (O(that turn's events); chunks stay compact: closers ignore them). */
function closersFrom(loop: LoopContext, turnStartSeq: number, reason: TurnEndReason): CloserEvent[] {
  return interruptedTurnClosers(loop.session.log.eventsWithoutChunks(turnStartSeq), { reason })
}

function appendClosing(loop: LoopContext, closer: CloserEvent, guarded: boolean, provisional = false): void {
  const { session } = loop
  // The turn's own end is provisional until its flush settles (flushTurnEnd): listeners hear only a durable one.
  if (provisional && closer.type === 'turn/end') return void session.appendTurnEnd(closer.data as { turn: number; reason: TurnEndReason }, guarded)
  const options =
    closer.surfaceOp === undefined ? undefined : { surfaceOp: closer.surfaceOp, ...(closer.sourceEventSeqs !== undefined ? { sourceEventSeqs: closer.sourceEventSeqs } : {}) }
  if (guarded) session.append(closer.type, closer.data, options)
  else session.appendCloser(closer.type, closer.data, options)
}

/** Flushes at turn end (a failure is reported), then settles the provisional turn/end (docs/stores.md, "When a write fails"). */
async function flushTurnEnd(loop: LoopContext, turn: number, step: number): Promise<boolean> {
  const failure = await flushFailure(loop.writer)
  if (failure !== undefined) reportError(loop, failure, turn, step)
  loop.session.settleTurnEnd(failure)
  return failure === undefined
}
