// What a crash left undone, read off a repaired log (docs/scaling.md, "Continuation after a crash"): the turn a
// continuation carries on, the interruptions in a row (for quarantine), the input a crashed turn claimed but
// never committed (restored to the inbox by repair), and the calls whose bodies may run again. Pure functions
// of the log: every process and every worker that repairs the same log reaches the same answer.
import type { JsonValue } from '../json/lossless.js'
import type { UserMessage } from '../llm/types.js'
import type { EventLog } from './event-log.js'
import type { CoreEventData, SessionEvent, TurnEndReason } from './events.js'
import type { CloserEvent } from './repair.js'

/** A call a crash left `TOOL_OUTCOME_UNKNOWN` whose tool may run again (replay policy `safe` or `keyed`). */
export interface RerunCall {
  readonly callId: string
  readonly name: string
  /** The raw arguments the model gave. */
  readonly arguments: string
  /** Seq of the original `tool/call` (what the re-run's `tool/call` names in `of`). */
  readonly of: number
  /** Seq of repair's `TOOL_OUTCOME_UNKNOWN` result: the surface node the re-run's result replaces. */
  readonly resultSeq: number
}

/** The work a crash interrupted, as a continuation turn needs it. */
export interface InterruptedWork {
  /** The interrupted turn the continuation carries on (the last of {@link interruptions}). */
  readonly turn: number
  /**
   * The same work's crash interruptions in a row that count toward quarantine, oldest first (since the last
   * lifted quarantine): the original turn, and every continuation of it that ran alone in its process
   * ({@link CONTINUED_ALONE}) and was interrupted again. A clean shutdown (the agent disposed mid-turn: a
   * deploy, SIGTERM past its grace) is carried on too, but is no sign of poison: it is not counted.
   */
  readonly interruptions: readonly number[]
  /**
   * Continuations of the same work that a crash interrupted while other sessions ran in the same process, oldest
   * first: not counted, since any of those sessions may have killed the process (a bystander of a poison
   * session must never reach the quarantine by sharing its dying processes).
   */
  readonly uncounted: readonly number[]
  /** How the turn carried on ended: `interrupted` (crash repair) or `shutdown` (aborted `{kind:'disposed'}`). */
  readonly endedBy: 'interrupted' | 'shutdown'
  /**
   * True when a turn of the chain committed the prompt it claimed: the continuation then claims only steering
   * (`next-step`), else it takes the head of `next-turn` as a fresh turn would (a restored prompt is there).
   */
  readonly inputCommitted: boolean
  /** Calls to run again before the continuation's first request, in log order. */
  readonly reruns: readonly RerunCall[]
}

/** Marks a session that workers must not claim and `resumeAgent` refuses without `force` (durable). */
export const QUARANTINED = 'session/quarantined'
/** Lifts the last quarantine (`resumeAgent(id, { force: true })`); interruptions are counted afresh after it. */
export const QUARANTINE_LIFTED = 'session/quarantine-lifted'
/**
 * Written (ignorable, data `{ continues: N }`) just before a continuation turn that runs alone in its process:
 * nothing else runs there until it ends, so a crash that interrupts it was caused by its own work and counts
 * toward quarantine. A continuation without it shared its process, and its crash is not counted.
 */
export const CONTINUED_ALONE = 'session/continued-alone'

const TURN_STARTS: ReadonlySet<string> = new Set(['turn/start'])
const TURN_ENDS: ReadonlySet<string> = new Set(['turn/end'])
const QUARANTINE_MARKS: ReadonlySet<string> = new Set([QUARANTINED, QUARANTINE_LIFTED])
const LIFTS: ReadonlySet<string> = new Set([QUARANTINE_LIFTED])
const ALONE_MARKS: ReadonlySet<string> = new Set([CONTINUED_ALONE])

/** Whether the session's last quarantine is still in force: the reason logged with it, else `undefined`. */
export function activeQuarantine(log: EventLog): string | undefined {
  const last = log.lastOfTypes(QUARANTINE_MARKS)
  if (last < 0 || log.typeAt(last) !== QUARANTINED) return undefined
  const data = log.at(last)?.data as { reason?: unknown } | undefined
  return typeof data?.reason === 'string' ? data.reason : 'quarantined'
}

/**
 * The interrupted work at the end of a balanced (repaired) log: `undefined` unless its last turn ended
 * `interrupted` (crash repair) or `aborted {kind:'disposed'}` (the agent was shut down mid-turn: a clean shutdown
 * loses no more than a crash does) and nothing after it started a turn. `mayRerun` tells which tools' calls may
 * run again.
 */
export function interruptedWork(log: EventLog, options: { readonly mayRerun: (tool: string) => boolean; readonly seedLength?: number }): InterruptedWork | undefined {
  const lastStart = log.lastOfTypes(TURN_STARTS)
  if (lastStart < 0) return undefined
  const lastEnd = log.lastOfTypes(TURN_ENDS, lastStart)
  const endedBy = lastEnd < 0 ? undefined : stoppedBy(log.at(lastEnd))
  if (endedBy === undefined) return undefined
  const lifted = log.lastOfTypes(LIFTS)
  // Walk back through `continues` links: the chain of turns that carried the same work on.
  // The last turn is always in it (it is what the continuation carries on); a lifted quarantine ends the walk, and
  // only turns after the lift count as interruptions.
  const chain: Link[] = []
  for (let start = lastStart, crashed = endedBy === 'interrupted'; ; ) {
    const data = log.at(start)?.data as CoreEventData['turn/start']
    if (data.continues === undefined) {
      chain.unshift({ start, turn: data.turn, crashed: crashed && start > lifted, alone: true })
      break
    }
    const previous = turnStartOf(log, data.continues, start)
    const previousEnd = previous < 0 ? -1 : log.lastOfTypes(TURN_ENDS, previous, start)
    chain.unshift({ start, turn: data.turn, crashed: crashed && start > lifted, alone: ranAlone(log, data.continues, Math.max(0, previousEnd), start) })
    if (previous < 0 || previous < lifted) break
    crashed = stoppedBy(log.at(previousEnd)) === 'interrupted'
    start = previous
  }
  const first = chain[0] as { start: number; turn: number }
  const events = log.eventsWithoutChunks(first.start)
  return {
    turn: (chain[chain.length - 1] as { turn: number }).turn,
    interruptions: chain.filter((c) => c.crashed && c.alone).map((c) => c.turn),
    uncounted: chain.filter((c) => c.crashed && !c.alone).map((c) => c.turn),
    endedBy,
    inputCommitted: committedTurnInput(log, first.start, options.seedLength ?? 0),
    reruns: rerunCalls(events, log, options.mayRerun),
  }
}

/** `interrupted` (crash repair), `shutdown` (aborted because the agent was disposed), or `undefined` for any other end. */
function stoppedBy(event: SessionEvent | undefined): 'interrupted' | 'shutdown' | undefined {
  const reason = (event?.data as { reason?: TurnEndReason } | undefined)?.reason
  if (reason?.kind === 'interrupted') return 'interrupted'
  if (reason?.kind === 'aborted' && reason.reason.kind === 'disposed') return 'shutdown'
  return undefined
}

/** One turn of a chain of continuations. `alone`: the original turn, or a continuation that ran alone. */
interface Link {
  readonly start: number
  readonly turn: number
  readonly crashed: boolean
  readonly alone: boolean
}

/** Whether a {@link CONTINUED_ALONE} mark for turn `continues` lies in [from, before). */
function ranAlone(log: EventLog, continues: number, from: number, before: number): boolean {
  for (let at = log.lastOfTypes(ALONE_MARKS, from, before); at >= 0; at = log.lastOfTypes(ALONE_MARKS, from, at)) {
    if ((log.at(at)?.data as { continues?: unknown } | undefined)?.continues === continues) return true
  }
  return false
}

/**
 * Why resume quarantines `work` (logged with `session/quarantined`, shown by `sessions`, `inspect` and the page):
 * the counted interruptions, and the crashes left uncounted because other sessions shared the process.
 */
export function quarantineReason(work: InterruptedWork): string {
  const uncounted = work.uncounted.length === 0 ? '' : `; not counted: turns ${work.uncounted.join(', ')}, interrupted while other sessions shared the process`
  return `the same work was interrupted ${work.interruptions.length} times in a row (turns ${work.interruptions.join(', ')}): only the original turn and continuations that ran alone in their process count${uncounted}`
}

function turnStartOf(log: EventLog, turn: number, before: number): number {
  for (let at = log.lastOfTypes(TURN_STARTS, 0, before); at >= 0; at = log.lastOfTypes(TURN_STARTS, 0, at)) {
    if ((log.at(at)?.data as { turn?: number }).turn === turn) return at
  }
  return -1
}

/** Repair's `TOOL_OUTCOME_UNKNOWN` results in the chain, minus those a re-run already replaced. */
function rerunCalls(events: readonly SessionEvent[], log: EventLog, mayRerun: (tool: string) => boolean): RerunCall[] {
  const open = new Map<number, RerunCall>()
  for (const e of events) {
    if (e.type !== 'tool/result') continue
    const op = e.surfaceOp
    if (typeof op === 'object') {
      open.delete(op.start)
      continue
    }
    const d = e.data as unknown as CoreEventData['tool/result']
    if (d.error?.code !== 'TOOL_OUTCOME_UNKNOWN' || !d.message.id.startsWith('interrupted-tool-result-')) continue
    const callSeq = e.sourceEventSeqs?.[0]
    const call = callSeq === undefined ? undefined : log.at(callSeq)
    if (call?.type !== 'tool/call') continue
    const c = call.data as unknown as CoreEventData['tool/call']
    if (!mayRerun(c.name)) continue
    open.set(e.seq, { callId: c.callId, name: c.name, arguments: c.arguments, of: c.of ?? call.seq, resultSeq: e.seq })
  }
  return [...open.values()]
}

/** A claim: a splice that removed queued input without cancelling it (the loop's `Inbox.claim`). */
function isClaim(d: CoreEventData['agent/inbox/spliced']): boolean {
  return (d.removedCount ?? 0) > 0 && d.inserted.length === 0 && d.outcome === undefined && d.restores === undefined
}

interface Claim {
  readonly seq: number
  readonly target: 'next-turn' | 'next-step'
  readonly messages: readonly UserMessage[]
}

/**
 * Replays the inbox's splices from `seedLength` (as the loop's Inbox does: a fork does not inherit its parent's
 * pending work), collecting the claims made at or after `from`.
 */
// What the inbox splices from `fromSeq` on do to `lists` (the queues as they stood there): each claim made at or
// after `lastStart`, each restore, and the ids still queued at the end; user messages from `lastStart` on are
// added to `committed`.
// The replay state at the first event after the seed: empty queues, nothing claimed, restored or committed.
function fromEmptyQueues(): { lists: Record<'next-turn' | 'next-step', UserMessage[]>; claims: Claim[]; restored: Set<number>; committed: Set<string> } {
  return { lists: { 'next-turn': [], 'next-step': [] }, claims: [], restored: new Set(), committed: new Set() }
}

function replaySplices(
  log: EventLog,
  fromSeq: number,
  lastStart: number,
  seedLength: number,
  state: { lists: Record<'next-turn' | 'next-step', UserMessage[]>; claims: Claim[]; restored: Set<number>; committed: Set<string> },
): { claims: Claim[]; restored: Set<number>; queued: Set<string>; committed: Set<string> } {
  const { lists, claims, restored, committed } = state
  log.forEachEvent(fromSeq, (event) => {
    if (event.type === 'user/message' && event.seq >= lastStart) committed.add((event.data as unknown as UserMessage).id)
    if (event.type !== 'agent/inbox/spliced' || event.seq < seedLength) return
    const d = event.data as unknown as CoreEventData['agent/inbox/spliced']
    const list = lists[d.target]
    if (list === undefined) return
    const removed = list.splice(d.start, d.removedCount ?? 0, ...d.inserted)
    if (d.restores !== undefined) restored.add(d.restores)
    if (event.seq >= lastStart && isClaim(d)) claims.push({ seq: event.seq, target: d.target, messages: removed })
  })
  const queued = new Set([...lists['next-turn'], ...lists['next-step']].map((m) => m.id))
  return { claims, restored, queued, committed }
}

/**
 * The claims, restores, queue and committed ids since the last turn start. When that turn started in a resume
 * checkpoint's unread prefix, the checkpoint's record of it is taken and only the tail is read.
 */
function claimsOfLastTurn(log: EventLog, lastStart: number, seedLength: number): { claims: Claim[]; restored: Set<number>; queued: Set<string>; committed: Set<string> } {
  const prefix = log.lazyPrefix
  // The turn started in the tail, or the checkpoint recorded the turn it started in.
  const input = prefix === undefined ? undefined : lastStart >= prefix.length ? { claims: [], restored: [], committed: [] } : prefix.turnInput?.start === lastStart ? prefix.turnInput : undefined
  if (prefix === undefined || input === undefined || prefix.length < seedLength) {
    return replaySplices(log, seedLength, lastStart, seedLength, fromEmptyQueues())
  }
  return replaySplices(log, prefix.length, lastStart, seedLength, {
    lists: { 'next-turn': [...prefix.inbox.nextTurn], 'next-step': [...prefix.inbox.nextStep] },
    claims: input.claims.map((c) => ({ seq: c.seq, target: c.target, messages: c.messages })),
    restored: new Set(input.restored),
    committed: new Set(input.committed),
  })
}

/** True when a next-turn claim made since `from` reached its `user/message`. */
function committedTurnInput(log: EventLog, from: number, seedLength: number): boolean {
  const { claims, committed } = replaySplices(log, seedLength, from, seedLength, fromEmptyQueues())
  return claims.some((c) => c.target === 'next-turn' && c.messages.some((m) => committed.has(m.id)))
}

/**
 * Repair's restores (docs/stores.md, "Loading and repair"): input that the log's last turn claimed from the
 * inbox but never committed as a `user/message` goes back to the head of its list, one durable splice per
 * claim whose `restores` names the claiming splice. Exactly once: a claim already restored, or input that
 * reached its `user/message`, is left alone. Empty when the last turn lost nothing.
 */
export function lostInputRestores(log: EventLog, seedLength = 0): CloserEvent[] {
  const lastStart = log.lastOfTypes(TURN_STARTS)
  if (lastStart < 0) return []
  const { claims, restored, queued, committed } = claimsOfLastTurn(log, lastStart, seedLength)
  const restores: CloserEvent[] = []
  // Newest claim first, each inserted at the head: older claims end up ahead, as they were queued.
  for (const claim of claims.reverse()) {
    if (restored.has(claim.seq)) continue
    const lost = claim.messages.filter((m) => !committed.has(m.id) && !queued.has(m.id))
    if (lost.length === 0) continue
    const data = { target: claim.target, start: 0, inserted: lost, restores: claim.seq }
    restores.push({ type: 'agent/inbox/spliced', data: data as unknown as JsonValue })
  }
  return restores
}

/**
 * Whether a stored log's last turn was cut off by a crash: it is still open (repair will close it `interrupted`),
 * or repair closed it so and nothing carried it on yet. A host resuming such a session starts a crash continuation.
 */
export function endsCutOff(events: readonly SessionEvent[]): boolean {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type === 'turn/start') return true
    if (event.type === 'turn/end') return stoppedBy(event) === 'interrupted'
  }
  return false
}
