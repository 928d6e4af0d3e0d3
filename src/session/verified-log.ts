import { EventLog } from './event-log.js'
import type { RequestHeader } from './events.js'
import type { Surface } from './surface.js'

/** What a session folds from its log as it adopts it: everything the Session keeps besides the log itself. */
export interface LogFold {
  /** The session's own log: the adopted records (packed chunk runs shared, not copied). */
  readonly log: EventLog
  readonly surface: Surface
  readonly header: RequestHeader | undefined
  readonly context: { provider: string; model: string; contextWindow?: number } | undefined
  readonly lastTurn: number
  readonly openTurn: number | undefined
}

/**
 * A stored log a store has checked exactly as a Session adopts it: the same records as the log checked, and the
 * fold that check built. It is an {@link EventLog} (a store returns it as `StoredSession.log`), so a Session given
 * it (`new Session({ log })`, `resumeAgent`) takes the fold over instead of walking the log a second time —
 * once: the fold becomes that session's own state, so a second Session from the same log walks it, as it also
 * does when the log changed since the check or the new session does not accept every type the check did.
 * @internal
 */
export class VerifiedLog extends EventLog {
  /** The event types the check accepted without `ignorable`. */
  readonly known: ReadonlySet<string>
  readonly #length: number
  readonly #revision: number
  #fold: LogFold | undefined

  /**
   * @param checked - the log that was checked (this log holds its records; `checked` stays as it was)
   * @param fold - what adopting `checked` ended with (its own log, not `checked`)
   */
  constructor(checked: EventLog, known: ReadonlySet<string>, fold: LogFold) {
    super()
    this.copyRecordsOf(checked)
    this.known = known
    this.#length = this.length
    this.#revision = this.revision
    this.#fold = fold
  }

  /**
   * The fold, for the one session that takes it over, or undefined when it cannot be used: taken already, the
   * stored log changed since the check, or the check accepted a type that `known` (the new session's) lacks.
   */
  takeFold(known: ReadonlySet<string>): LogFold | undefined {
    const fold = this.#fold
    this.#fold = undefined
    if (fold === undefined || this.#length !== this.length || this.#revision !== this.revision) return undefined
    if (this.known !== known) for (const type of this.known) if (!known.has(type)) return undefined
    return fold
  }
}
