/**
 * A hook fired with `emit`: synchronous fan-out; return values are ignored and every listener's throw (or
 * rejected promise) is contained and reported, so one bad listener never breaks the emitter.
 */
export interface EmitHook<P> {
  /** Dispatch mode marker (type-level only). */
  readonly mode: 'emit'
  /** Payload type. */
  readonly payload: P
}

/**
 * A hook fired with `waterfall`: around-middleware. Each listener gets `(payload, next)`; the first registered
 * (or a `prepend`ed one) is outermost; not calling `next()` short-circuits; the outermost result wins.
 */
export interface WaterfallHook<P, R> {
  /** Dispatch mode marker (type-level only). */
  readonly mode: 'waterfall'
  /** Payload type. */
  readonly payload: P
  /** Result type. */
  readonly result: R
}

/** A hook fired with `serial`: listeners awaited one after another in registration order. */
export interface SerialHook<P> {
  /** Dispatch mode marker (type-level only). */
  readonly mode: 'serial'
  /** Payload type. */
  readonly payload: P
}

/**
 * A hook fired with `guard`: synchronous fan-out whose throws are **not** contained — a throw vetoes the
 * action being guarded (used by the invariant companions to refuse an append before it commits).
 */
export interface GuardHook<P> {
  /** Dispatch mode marker (type-level only). */
  readonly mode: 'guard'
  /** Payload type. */
  readonly payload: P
}

/** Any hook declaration. */
export type HookSpec = EmitHook<unknown> | WaterfallHook<unknown, unknown> | SerialHook<unknown> | GuardHook<unknown>

/** `next` of a waterfall listener: runs the inner listeners and the default; may pass a replaced payload. */
export type WaterfallNext<P, R> = (payload?: P) => Promise<R>

/** The listener signature a hook declaration asks for. */
export type ListenerOf<S> =
  S extends WaterfallHook<infer P, infer R>
    ? (payload: P, next: WaterfallNext<P, R>) => R | Promise<R>
    : S extends SerialHook<infer P>
      ? (payload: P) => void | Promise<void>
      : S extends EmitHook<infer P>
        ? (payload: P) => void | Promise<void>
        : S extends GuardHook<infer P>
          ? (payload: P) => void
          : never

/** Options for {@link HookRegistrar.on}. */
export interface OnOptions {
  /** Register as the outermost (first-called) listener instead of the innermost. */
  readonly prepend?: boolean
}

/** Registration side of a hook bus (what plugins and scoped views see). */
export interface HookRegistrar<M> {
  /**
   * Adds a listener; returns a disposer that removes it (idempotent).
   * @example
   * ```ts
   * const off = harness.hooks.on('session/event', ({ event }) => console.log(event.type))
   * off()
   * ```
   */
  on<K extends keyof M & string>(name: K, listener: ListenerOf<M[K]>, options?: OnOptions): () => void
}

/** Reports a contained listener failure (emit listeners, rejected promises). */
export type ListenerErrorReporter = (error: unknown, info: { hook: string }) => void
