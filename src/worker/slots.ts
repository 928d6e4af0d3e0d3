/** What the slot book needs of a served session: to be told to give its slot back. */
export interface SlotHolder {
  /** Release the session at its next idle moment (another session needs the slot). */
  evict(): void
}

interface Held {
  readonly holder: SlotHolder
  busy: boolean
  /** When it last went idle (for evicting the longest idle first). */
  idleSince: number
}

/**
 * Which sessions a worker holds and whether each is busy (opening, running a turn or moving input) or idle
 * (open, waiting out its grace for more input). Only busy sessions take a slot: an idle session's slot is free
 * for the next claim at once, and the session stays open (warm for a quick followup, its lease renewed) only
 * until a claim needs the slot, when the longest idle one is evicted. So at most `concurrency` sessions are busy
 * and at most `concurrency` are held, and a finished session never keeps queued work of another waiting for
 * its idle grace.
 */
export class SlotBook {
  readonly #concurrency: number
  readonly #held = new Map<string, Held>()
  readonly #onIdle: () => void

  /**
   * @param concurrency - sessions served at once
   * @param onIdle - called when a session goes idle (its slot is free for a claim)
   */
  constructor(concurrency: number, onIdle: () => void) {
    this.#concurrency = concurrency
    this.#onIdle = onIdle
  }

  /** Slots a claim may fill now: `concurrency` minus the busy sessions. */
  get free(): number {
    let busy = 0
    for (const h of this.#held.values()) if (h.busy) busy++
    return Math.max(0, this.#concurrency - busy)
  }

  /**
   * Takes claimed sessions into slots, busy. Returns how many of `count` fit (`free` may have shrunk while the
   * claim was in flight, when an idle session got input); the caller gives the rest back. Then evicts the
   * longest idle sessions until no more than `concurrency` are held.
   */
  admit(entries: readonly { readonly id: string; readonly holder: SlotHolder }[]): number {
    const fit = Math.min(entries.length, this.free)
    for (const { id, holder } of entries.slice(0, fit)) this.#held.set(id, { holder, busy: true, idleSince: 0 })
    const idle = [...this.#held.entries()].filter(([, h]) => !h.busy).sort(([, a], [, b]) => a.idleSince - b.idleSince)
    for (let over = this.#held.size - this.#concurrency; over > 0 && idle.length > 0; over--) {
      const [id, h] = idle.shift() as [string, Held]
      this.#held.delete(id)
      h.holder.evict()
    }
    return fit
  }

  /** A held session went idle (nothing queued, no turn running): its slot is free for a claim. */
  idle(id: string): void {
    const h = this.#held.get(id)
    if (h === undefined || !h.busy) return
    h.busy = false
    h.idleSince = Date.now()
    this.#onIdle()
  }

  /**
   * A held session has work again and takes its slot back. False once it was evicted: it must leave its input
   * in the inbox (for whoever claims it next) and close. A held idle session always finds its slot, since
   * {@link admit} never leaves more than `concurrency` sessions held.
   */
  busy(id: string): boolean {
    const h = this.#held.get(id)
    if (h === undefined) return false
    h.busy = true
    return true
  }

  /** The session is closed (released, lost or evicted): forget it. */
  closed(id: string): void {
    this.#held.delete(id)
  }
}
