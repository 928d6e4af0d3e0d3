// Which sessions a worker claims, so that a poison session cannot take its bystanders down with it
// (docs/scaling.md, "Poison sessions and bystanders"). A worker that dies takes every session it runs with it,
// and each of them would count that crash as an interruption of its own work. So a session whose turn a crash cut
// off is continued *alone*: only a worker with no other turn running claims it, and until its continuation has
// ended that worker claims nothing else and moves no input that could start another turn. The continuation is
// marked `session/continued-alone` in the log, and only such continuations (and the original turn) count toward
// `quarantineAfter`: a bystander's first continuation runs alone and completes, so it is never quarantined.
import type { PostgresStore, SessionClaim } from '../store/postgres/postgres-store.js'

/** What the policy needs to know of a worker's running session. */
export interface ClaimedTask {
  /** Opening, or running a turn. */
  readonly busy: boolean
}

/** The claims a worker makes next, and the input its sessions may take meanwhile. */
export class ClaimPolicy {
  readonly #store: PostgresStore
  /** The session whose continuation runs alone in this worker now. */
  #alone: string | undefined
  /** A crash continuation waits: take no new work until no turn runs here, then claim it. */
  #draining = false

  /** @param store - the worker's store */
  constructor(store: PostgresStore) {
    this.#store = store
  }

  /** The session continuing alone in this worker, if any. */
  get alone(): string | undefined {
    return this.#alone
  }

  /**
   * Whether `sessionId` must leave new turns' input in the inbox now: another session of this worker continues
   * alone, or this worker is draining so that one can. Steering and cancels into a running turn still move.
   */
  holdsInput(sessionId: string): boolean {
    return this.#draining || (this.#alone !== undefined && this.#alone !== sessionId)
  }

  /**
   * The sessions to claim now, with up to `free` slots and `tasks` running: nothing while a continuation runs
   * alone here; one crash continuation, alone, when one waits and no turn runs here (else none: drain first);
   * otherwise up to `free` sessions that need no crash continuation. A claim with `continuation` set is this
   * worker's alone session until {@link continued} is called for it. With no slot free the database is asked
   * only when `polled` (a poll interval has passed since it last asked) or while draining: a full worker has nothing to claim,
   * and a continuation that starts to wait (a lease running out) sends no NOTIFY anyway, so the poll is what
   * finds it, not each NOTIFY for another worker's session.
   */
  async next(free: number, tasks: ReadonlyMap<string, { readonly task: ClaimedTask }>, exclude: readonly string[], polled = true): Promise<SessionClaim[]> {
    if (this.#alone !== undefined) return []
    if (free === 0 && !polled && !this.#draining) return []
    const skip = [...exclude, ...tasks.keys()]
    // One round trip in the usual case: the check for a waiting continuation and the claim of other work.
    const work = await this.#store.claimWork(this.#draining ? 0 : free, { exclude: skip })
    if (!work.continuationsWaiting) {
      this.#draining = false
      return work.claims
    }
    this.#draining = true
    if ([...tasks.values()].some((t) => t.task.busy)) return []
    const [claim] = await this.#store.claimSessions(1, { exclude: skip, kind: 'continuations' })
    this.#draining = false
    if (claim !== undefined) {
      this.#alone = claim.id
      return [claim]
    }
    // Another worker took it first.
    return free > 0 ? this.#store.claimSessions(free, { exclude: skip, kind: 'others' }) : []
  }

  /** The alone session's continuation has ended (or it did not open): this worker takes other work again. */
  continued(sessionId: string): void {
    if (this.#alone === sessionId) this.#alone = undefined
  }
}
