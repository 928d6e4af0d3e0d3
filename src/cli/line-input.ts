import type { Interface } from 'node:readline'

/**
 * Lines from a readline interface, handed out in order to whoever asks next: the REPL for the next message,
 * or a permission question. Lines typed while nobody asks are kept, so input piped ahead of time (or typed
 * ahead) reaches the right reader. `intercept` sees every line first and may consume it (`/cancel` while a
 * turn runs must act at once, not wait its turn in the queue).
 */
export class LineInput {
  readonly #queue: string[] = []
  readonly #waiters: ((line: string | undefined) => void)[] = []
  #closed = false

  constructor(rl: Interface, intercept: (line: string) => boolean = () => false) {
    rl.on('line', (line: string) => {
      if (intercept(line)) return
      const waiter = this.#waiters.shift()
      if (waiter !== undefined) waiter(line)
      else this.#queue.push(line)
    })
    rl.on('close', () => {
      this.#closed = true
      for (const waiter of this.#waiters.splice(0)) waiter(undefined)
    })
  }

  /** Whether input has ended (queued lines may remain). */
  get ended(): boolean {
    return this.#closed && this.#queue.length === 0
  }

  /** The next line; undefined once input has ended, or when `signal` aborts first. */
  next(signal?: AbortSignal): Promise<string | undefined> {
    const queued = this.#queue.shift()
    if (queued !== undefined) return Promise.resolve(queued)
    if (this.#closed || signal?.aborted === true) return Promise.resolve(undefined)
    return new Promise((resolve) => {
      const waiter = (line: string | undefined): void => {
        signal?.removeEventListener('abort', onAbort)
        resolve(line)
      }
      const onAbort = (): void => {
        const at = this.#waiters.indexOf(waiter)
        if (at >= 0) this.#waiters.splice(at, 1)
        resolve(undefined)
      }
      signal?.addEventListener('abort', onAbort, { once: true })
      this.#waiters.push(waiter)
    })
  }
}
