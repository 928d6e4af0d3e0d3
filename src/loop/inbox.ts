import { HarnessError } from '../errors/harness-error.js'
import type { UserMessage } from '../llm/types.js'
import type { CoreEventData } from '../session/events.js'
import type { Session } from '../session/session.js'

/** Which inbox list: queued prompts (one per turn) or steering/context for the next step. */
export type InboxTarget = 'next-turn' | 'next-step'

/** Inbox notifications (mapped to `agent/inbox/*` hooks). */
export interface InboxObserver {
  inserted?(message: UserMessage): void
  discarded?(message: UserMessage): void
  claimed?(message: UserMessage, turn: number): void
}

/**
 * The inbox: two ordered lists projected from durable `agent/inbox/spliced` events (seed §4; docs/events.md). Every
 * change is logged first and applied second, so a crash never loses queued input and resume rebuilds it.
 */
export class Inbox {
  readonly #session: Session
  readonly #observer: InboxObserver
  readonly #lists: Record<InboxTarget, UserMessage[]> = { 'next-turn': [], 'next-step': [] }
  /** Submission key → the id of the message first sent with it (from every splice of the session's own log). */
  readonly #keys = new Map<string, string>()

  /** Replays the session's own splices (a fork child does not inherit its parent's pending work). */
  constructor(session: Session, observer: InboxObserver = {}) {
    this.#session = session
    this.#observer = observer
    // Compact chunk runs are skipped without being materialised (a resumed log may hold millions of chunks).
    // A log resumed from a checkpoint starts from the inbox its unread prefix left (docs/stores.md).
    const prefix = session.log.lazyPrefix
    let from = session.header.seedLength ?? 0
    if (prefix !== undefined && prefix.length >= from) {
      this.#lists['next-turn'].push(...prefix.inbox.nextTurn)
      this.#lists['next-step'].push(...prefix.inbox.nextStep)
      for (const [key, id] of prefix.inbox.keys) this.#keys.set(key, id)
      from = prefix.length
    }
    session.log.forEachEvent(from, (event) => {
      if (event.type !== 'agent/inbox/spliced') return
      const d = event.data as unknown as CoreEventData['agent/inbox/spliced']
      const problem = this.#validate(d.target, d.start, d.removedCount ?? 0, d.inserted)
      if (problem !== undefined) throw new HarnessError(`invalid persisted inbox splice at seq ${event.seq}: ${problem}`, 'SESSION_CORRUPT')
      this.#lists[d.target].splice(d.start, d.removedCount ?? 0, ...d.inserted)
      if (d.key !== undefined && d.inserted[0] !== undefined && !this.#keys.has(d.key)) this.#keys.set(d.key, d.inserted[0].id)
    })
  }

  /** The id of the message first sent with submission `key`, or `undefined` when the key is new to this session. */
  sentWithKey(key: string): string | undefined {
    return this.#keys.get(key)
  }

  /** Queued prompts, one per future turn. */
  get nextTurn(): readonly UserMessage[] {
    return this.#lists['next-turn']
  }

  /** Steering and context for the next step. */
  get nextStep(): readonly UserMessage[] {
    return this.#lists['next-step']
  }

  /** True when either list holds work. */
  get hasPending(): boolean {
    return this.#lists['next-turn'].length > 0 || this.#lists['next-step'].length > 0
  }

  /** Adds a message at the end of a list (durably), with the submission `key` it was sent with, if any. */
  append(target: InboxTarget, message: UserMessage, key?: string): void {
    this.#mutate(target, this.#lists[target].length, 0, [message], true, key)
    if (key !== undefined) this.#keys.set(key, message.id)
  }

  /** Durably removes everything (a user-visible cancellation: `outcome:'canceled'`). */
  clear(): void {
    this.#mutate('next-step', 0, this.#lists['next-step'].length, [], true)
    this.#mutate('next-turn', 0, this.#lists['next-turn'].length, [], true)
  }

  /**
   * Claims the input of a step: all of next-step, plus the first next-turn item at a turn boundary. Pure
   * deletions (no `outcome`): the work is consumed, not cancelled. Returns next-step items first.
   */
  claim(target: InboxTarget, turn: number): UserMessage[] {
    const steps = this.#mutate('next-step', 0, this.#lists['next-step'].length, [], false)
    const turns = target === 'next-turn' ? this.#mutate('next-turn', 0, Math.min(1, this.#lists['next-turn'].length), [], false) : []
    const claimed = [...steps, ...turns]
    for (const m of claimed) this.#observer.claimed?.(m, turn)
    return claimed
  }

  #mutate(target: InboxTarget, start: number, deleteCount: number, inserted: readonly UserMessage[], discard: boolean, key?: string): UserMessage[] {
    if (deleteCount === 0 && inserted.length === 0) return []
    const problem = this.#validate(target, start, deleteCount, inserted)
    if (problem !== undefined) throw new HarnessError(`inbox change refused: ${problem}`, 'INVALID_INBOX')
    const data = {
      target,
      start,
      ...(deleteCount > 0 ? { removedCount: deleteCount } : {}),
      inserted,
      ...(discard && deleteCount > 0 ? { outcome: 'canceled' } : {}),
      ...(key !== undefined ? { key } : {}),
    }
    // Log first: if the append fails the projection is unchanged.
    const event = this.#session.append('agent/inbox/spliced', data)
    const logged = (event.data as unknown as CoreEventData['agent/inbox/spliced']).inserted
    const removed = this.#lists[target].splice(start, deleteCount, ...logged)
    if (discard) for (const m of removed) this.#observer.discarded?.(m)
    for (const m of logged) this.#observer.inserted?.(m)
    return removed
  }

  #validate(target: InboxTarget, start: number, deleteCount: number, inserted: readonly UserMessage[]): string | undefined {
    const list = this.#lists[target]
    if (list === undefined) return `unknown target '${String(target)}'`
    if (!Number.isSafeInteger(start) || start < 0 || start > list.length) return `start ${start} out of range`
    if (!Number.isSafeInteger(deleteCount) || deleteCount < 0 || start + deleteCount > list.length) return `delete count ${deleteCount} out of range`
    const ids = new Set<string>()
    for (const t of ['next-turn', 'next-step'] as const) {
      this.#lists[t].forEach((m, i) => {
        if (t !== target || i < start || i >= start + deleteCount) ids.add(m.id)
      })
    }
    for (const m of inserted) {
      if (typeof m !== 'object' || m === null || m.role !== 'user' || typeof m.id !== 'string') return 'inserted items must be user messages'
      if (ids.has(m.id)) return `message id ${m.id} is already in the inbox`
      ids.add(m.id)
    }
    return undefined
  }
}
