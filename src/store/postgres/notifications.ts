import type pg from 'pg'

/** Receives the payload of one NOTIFY. */
export type NotificationListener = (payload: string) => void

/**
 * One `LISTEN` connection per store, shared by every follower and the worker's wake-up. Notifications are a
 * shortcut, never the only path: whoever subscribes also polls with a bounded interval, so a dropped
 * connection (reconnected after `retryMs`) delays work but never loses it.
 */
export class NotificationHub {
  readonly #pool: pg.Pool
  readonly #channels: readonly string[]
  readonly #retryMs: number
  readonly #listeners = new Map<string, Set<NotificationListener>>()
  #client: pg.PoolClient | undefined
  #connecting: Promise<void> | undefined
  #retry: NodeJS.Timeout | undefined
  #closed = false

  /**
   * @param pool - where the listening connection comes from (it is held until {@link close})
   * @param channels - every channel to LISTEN on
   * @param retryMs - wait before reconnecting a dropped connection
   */
  constructor(pool: pg.Pool, channels: readonly string[], retryMs = 1000) {
    this.#pool = pool
    this.#channels = channels
    this.#retryMs = retryMs
  }

  /**
   * Calls `listener` for every NOTIFY on `channel` from now on (once the connection listens: await
   * {@link ready} when the first notification matters). Returns the unsubscriber.
   */
  subscribe(channel: string, listener: NotificationListener): () => void {
    let set = this.#listeners.get(channel)
    if (set === undefined) this.#listeners.set(channel, (set = new Set()))
    set.add(listener)
    void this.ready().catch(() => undefined)
    return () => {
      set.delete(listener)
    }
  }

  /** Resolves once the connection is listening (rejects when it cannot connect now; a retry is scheduled). */
  ready(): Promise<void> {
    if (this.#closed) return Promise.resolve()
    if (this.#client !== undefined) return Promise.resolve()
    this.#connecting ??= this.#connect().finally(() => {
      this.#connecting = undefined
    })
    return this.#connecting
  }

  /** Stops listening and returns the connection. */
  async close(): Promise<void> {
    this.#closed = true
    if (this.#retry !== undefined) clearTimeout(this.#retry)
    await this.#connecting?.catch(() => undefined)
    const client = this.#client
    this.#client = undefined
    if (client !== undefined) {
      client.removeAllListeners('notification')
      // A listening connection goes back destroyed: LISTEN state must not leak into the pool.
      client.release(true)
    }
  }

  async #connect(): Promise<void> {
    let client: pg.PoolClient | undefined
    try {
      client = await this.#pool.connect()
      client.on('notification', (message) => {
        const listeners = this.#listeners.get(message.channel)
        if (listeners === undefined) return
        for (const listener of [...listeners]) listener(message.payload ?? '')
      })
      client.on('error', () => this.#drop(client as pg.PoolClient))
      for (const channel of this.#channels) await client.query(`LISTEN "${channel}"`)
      if (this.#closed) {
        client.release(true)
        return
      }
      this.#client = client
    } catch (error) {
      if (client !== undefined) client.release(true)
      this.#scheduleRetry()
      throw error
    }
  }

  #drop(client: pg.PoolClient): void {
    if (this.#client !== client) return
    this.#client = undefined
    client.release(true)
    this.#scheduleRetry()
  }

  #scheduleRetry(): void {
    if (this.#closed || this.#retry !== undefined || this.#listeners.size === 0) return
    this.#retry = setTimeout(() => {
      this.#retry = undefined
      void this.ready().catch(() => undefined)
    }, this.#retryMs)
    this.#retry.unref()
  }
}
