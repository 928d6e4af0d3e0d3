import type { HookRegistrar, ListenerErrorReporter, ListenerOf, OnOptions, WaterfallHook, SerialHook, EmitHook, GuardHook } from './types.js'

type PayloadOf<S> = S extends { readonly payload: infer P } ? P : never
type ResultOf<S> = S extends WaterfallHook<unknown, infer R> ? R : never
type KeysOfMode<M, Mode> = { [K in keyof M]: M[K] extends { readonly mode: Mode } ? K : never }[keyof M] & string

type AnyListener = (...args: never[]) => unknown
interface Registration {
  readonly listener: AnyListener
  /** `undefined` = global: sees every dispatch; otherwise only dispatches carrying this scope key. */
  readonly scope: string | undefined
}

/**
 * A typed hook bus with four dispatch modes (`emit`, `waterfall`, `serial`, `guard`), disposable
 * registrations and per-scope views. `M` maps hook names to their declarations.
 */
export interface HookBus<M> extends HookRegistrar<M> {
  /** Fire-and-forget fan-out; listener failures are reported, never thrown. */
  emit<K extends KeysOfMode<M, 'emit'>>(name: K, payload: PayloadOf<M[K]>, scope?: string): void
  /** Synchronous fan-out whose first throw propagates (a veto). */
  guard<K extends KeysOfMode<M, 'guard'>>(name: K, payload: PayloadOf<M[K]>, scope?: string): void
  /** Around-middleware; `terminal` is the innermost default. */
  waterfall<K extends KeysOfMode<M, 'waterfall'>>(
    name: K,
    payload: PayloadOf<M[K]>,
    terminal: (payload: PayloadOf<M[K]>) => ResultOf<M[K]> | Promise<ResultOf<M[K]>>,
    scope?: string,
  ): Promise<ResultOf<M[K]>>
  /** Listeners awaited one by one in registration order; the first failure propagates. */
  serial<K extends KeysOfMode<M, 'serial'>>(name: K, payload: PayloadOf<M[K]>, scope?: string): Promise<void>
  /** True when any listener could see a dispatch of `name` (cheap check for hot paths). */
  has(name: keyof M & string): boolean
  /** A view whose registrations only see dispatches carrying `scope`; `dispose()` removes them all. */
  scoped(scope: string): ScopedHooks<M>
}

/** Registrations limited to one scope (one agent); disposing the view removes every one of them. */
export interface ScopedHooks<M> extends HookRegistrar<M> {
  /** The scope key (the agent's id). */
  readonly scope: string
  /** Removes every listener registered through this view. */
  dispose(): void
}

/** Options for {@link createHookBus}. */
export interface HookBusOptions {
  /** Where contained listener failures go (default: a line on stderr). */
  readonly onListenerError?: ListenerErrorReporter
}

const defaultReporter: ListenerErrorReporter = (error, { hook }) => {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  process.stderr.write(`ledgerloop: a '${hook}' listener failed (contained): ${text}\n`)
}

/**
 * Creates a hook bus for the hook map `M`.
 * @example
 * ```ts
 * type Hooks = { 'greet': EmitHook<{ name: string }> }
 * const bus = createHookBus<Hooks>()
 * bus.on('greet', ({ name }) => console.log('hi', name))
 * bus.emit('greet', { name: 'ada' })
 * ```
 */
export function createHookBus<M>(options: HookBusOptions = {}): HookBus<M> {
  const report = options.onListenerError ?? defaultReporter
  const table = new Map<string, Registration[]>()

  const register = (name: string, listener: AnyListener, opts: OnOptions | undefined, scope: string | undefined): (() => void) => {
    if (typeof listener !== 'function') throw new TypeError(`listener for '${name}' must be a function`)
    const reg: Registration = { listener, scope }
    // Copy-on-write: a dispatch in progress keeps iterating the array it started with.
    const current = table.get(name) ?? []
    table.set(name, opts?.prepend === true ? [reg, ...current] : [...current, reg])
    let active = true
    return () => {
      if (!active) return
      active = false
      const list = table.get(name)
      if (list === undefined) return
      const next = list.filter((r) => r !== reg)
      if (next.length === 0) table.delete(name)
      else table.set(name, next)
    }
  }

  const visible = (name: string, scope: string | undefined): Registration[] => {
    const list = table.get(name)
    if (list === undefined) return []
    return list.filter((r) => r.scope === undefined || r.scope === scope)
  }

  // The middleware chain of a waterfall with listeners: each listener gets the payload and `next`.
  const chain = async <K extends KeysOfMode<M, 'waterfall'>>(
    name: K,
    payload: PayloadOf<M[K]>,
    terminal: (payload: PayloadOf<M[K]>) => ResultOf<M[K]> | Promise<ResultOf<M[K]>>,
    scope: string | undefined,
  ): Promise<ResultOf<M[K]>> => {
    const list = visible(name, scope)
    type P = typeof payload
    const run = async (index: number, current: P): Promise<ResultOf<M[K]>> => {
      const reg = list[index]
      if (reg === undefined) return await terminal(current)
      let called = false
      const next = (replaced?: P): Promise<ResultOf<M[K]>> => {
        if (called) return Promise.reject(new Error(`'${name}' listener called next() twice`))
        called = true
        return run(index + 1, replaced === undefined ? current : replaced)
      }
      const listener = reg.listener as (p: P, n: typeof next) => unknown
      return (await listener(current, next)) as ResultOf<M[K]>
    }
    return await run(0, payload)
  }

  const bus: HookBus<M> = {
    on(name, listener, opts) {
      return register(name, listener as AnyListener, opts, undefined)
    },
    has(name) {
      return table.has(name)
    },
    emit(name, payload, scope) {
      const list = table.get(name)
      if (list === undefined) return
      for (const reg of list) {
        if (reg.scope !== undefined && reg.scope !== scope) continue
        try {
          const out = (reg.listener as (p: unknown) => unknown)(payload)
          if (out instanceof Promise) out.catch((error: unknown) => report(error, { hook: name }))
        } catch (error) {
          report(error, { hook: name })
        }
      }
    },
    guard(name, payload, scope) {
      const list = table.get(name)
      if (list === undefined) return
      for (const reg of list) {
        if (reg.scope !== undefined && reg.scope !== scope) continue
        ;(reg.listener as (p: unknown) => unknown)(payload)
      }
    },
    waterfall(name, payload, terminal, scope) {
      // Fast path (runs several times per step): no listener, no chain to build, and no async frame of its own
      // (the caller's await is the only tick). A terminal that throws rejects, as it does inside the chain.
      if (!table.has(name)) {
        try {
          return Promise.resolve(terminal(payload))
        } catch (error) {
          return Promise.reject(error)
        }
      }
      return chain(name, payload, terminal, scope)
    },
    async serial(name, payload, scope) {
      for (const reg of visible(name, scope)) {
        await (reg.listener as (p: unknown) => unknown)(payload)
      }
    },
    scoped(scope) {
      const disposers = new Set<() => void>()
      return {
        scope,
        on(name, listener, opts) {
          const off = register(name, listener as AnyListener, opts, scope)
          const dispose = (): void => {
            disposers.delete(dispose)
            off()
          }
          disposers.add(dispose)
          return dispose
        },
        dispose() {
          for (const d of [...disposers]) d()
        },
      }
    },
  }
  return bus
}

/** A plugin: a named `setup` that registers on the hooks and returns a disposer (or nothing). */
export interface Plugin<H = unknown> {
  /** Unique, human-readable name (shown in errors and logs). */
  readonly name: string
  /** Registers listeners (synchronously); the returned function undoes everything `setup` did. */
  setup(host: H): void | (() => void)
}

export type { EmitHook, GuardHook, SerialHook, WaterfallHook, ListenerOf }
