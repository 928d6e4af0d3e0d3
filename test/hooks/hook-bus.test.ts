import { describe, expect, it } from 'vitest'
import { createHookBus } from '../../src/hooks/hook-bus.js'
import type { EmitHook, GuardHook, SerialHook, WaterfallHook } from '../../src/hooks/types.js'

type Hooks = {
  ping: EmitHook<{ n: number }>
  check: GuardHook<{ n: number }>
  wrap: WaterfallHook<{ n: number }, string>
  seq: SerialHook<{ n: number }>
}

function busWithReports() {
  const reports: { error: unknown; hook: string }[] = []
  const bus = createHookBus<Hooks>({ onListenerError: (error, { hook }) => reports.push({ error, hook }) })
  return { bus, reports }
}

describe('emit', () => {
  it('contains a synchronous throw, reports it with the hook name, and still runs later listeners', () => {
    const { bus, reports } = busWithReports()
    const seen: string[] = []
    bus.on('ping', () => {
      seen.push('a')
      throw new Error('boom')
    })
    bus.on('ping', ({ n }) => {
      seen.push(`b${n}`)
    })
    expect(() => bus.emit('ping', { n: 1 })).not.toThrow()
    expect(seen).toEqual(['a', 'b1'])
    expect(reports).toHaveLength(1)
    expect(reports[0]?.hook).toBe('ping')
    expect((reports[0]?.error as Error).message).toBe('boom')
  })

  it('contains a rejected promise and reports it without breaking the emitter', async () => {
    const { bus, reports } = busWithReports()
    let later = 0
    bus.on('ping', async () => {
      throw new Error('async boom')
    })
    bus.on('ping', () => {
      later++
    })
    bus.emit('ping', { n: 1 })
    expect(later).toBe(1)
    await new Promise((r) => setTimeout(r, 0))
    expect(reports.map((r) => (r.error as Error).message)).toEqual(['async boom'])
    // The bus keeps working afterwards.
    bus.emit('ping', { n: 2 })
    expect(later).toBe(2)
  })

  it('reports a thrown non-Error value as-is', () => {
    const { bus, reports } = busWithReports()
    bus.on('ping', () => {
      throw 'plain string'
    })
    bus.emit('ping', { n: 1 })
    expect(reports[0]?.error).toBe('plain string')
  })

  it('a listener added during a dispatch does not run in that dispatch', () => {
    const { bus } = busWithReports()
    const seen: string[] = []
    bus.on('ping', () => {
      seen.push('first')
      bus.on('ping', () => {
        seen.push('added')
      })
    })
    bus.emit('ping', { n: 1 })
    expect(seen).toEqual(['first'])
    bus.emit('ping', { n: 2 })
    expect(seen).toEqual(['first', 'first', 'added'])
  })

  it('a listener removed during a dispatch still completes that dispatch and is gone afterwards', () => {
    const { bus } = busWithReports()
    const seen: string[] = []
    let offSecond: () => void = () => {}
    bus.on('ping', () => {
      seen.push('first')
      offSecond()
    })
    offSecond = bus.on('ping', () => {
      seen.push('second')
    })
    bus.emit('ping', { n: 1 })
    bus.emit('ping', { n: 2 })
    expect(seen).toEqual(['first', 'second', 'first'])
  })
})

describe('waterfall', () => {
  it('runs the first registered listener outermost and the terminal innermost', async () => {
    const { bus } = busWithReports()
    bus.on('wrap', async (p, next) => `A(${await next()})`)
    bus.on('wrap', async (p, next) => `B(${await next()})`)
    const result = await bus.waterfall('wrap', { n: 1 }, ({ n }) => `T${n}`)
    expect(result).toBe('A(B(T1))')
  })

  it('a prepended listener becomes the outermost', async () => {
    const { bus } = busWithReports()
    bus.on('wrap', async (p, next) => `A(${await next()})`)
    bus.on('wrap', async (p, next) => `P(${await next()})`, { prepend: true })
    expect(await bus.waterfall('wrap', { n: 1 }, () => 'T')).toBe('P(A(T))')
  })

  it('a listener that does not call next() short-circuits the inner listeners and the terminal', async () => {
    const { bus } = busWithReports()
    let innerRan = false
    let terminalRan = false
    bus.on('wrap', () => 'short')
    bus.on('wrap', async (p, next) => {
      innerRan = true
      return next()
    })
    const result = await bus.waterfall('wrap', { n: 1 }, () => {
      terminalRan = true
      return 'T'
    })
    expect(result).toBe('short')
    expect(innerRan).toBe(false)
    expect(terminalRan).toBe(false)
  })

  it('next(replaced) hands the replaced payload to inner listeners and the terminal', async () => {
    const { bus } = busWithReports()
    const innerSaw: number[] = []
    bus.on('wrap', (p, next) => next({ n: p.n * 10 }))
    bus.on('wrap', (p, next) => {
      innerSaw.push(p.n)
      return next()
    })
    expect(await bus.waterfall('wrap', { n: 4 }, ({ n }) => `T${n}`)).toBe('T40')
    expect(innerSaw).toEqual([40])
  })

  it('rejects a second next() call from the same listener', async () => {
    const { bus } = busWithReports()
    let terminalRuns = 0
    bus.on('wrap', async (p, next) => {
      await next()
      return next()
    })
    await expect(
      bus.waterfall('wrap', { n: 1 }, () => {
        terminalRuns++
        return 'T'
      }),
    ).rejects.toThrow(/'wrap' listener called next\(\) twice/)
    expect(terminalRuns).toBe(1)
  })

  it('propagates a listener throw to the caller', async () => {
    const { bus, reports } = busWithReports()
    bus.on('wrap', () => {
      throw new Error('mw failed')
    })
    await expect(bus.waterfall('wrap', { n: 1 }, () => 'T')).rejects.toThrow('mw failed')
    expect(reports).toEqual([])
  })

  it('with no listeners returns the terminal result', async () => {
    const { bus } = busWithReports()
    expect(await bus.waterfall('wrap', { n: 7 }, ({ n }) => `T${n}`)).toBe('T7')
  })

  it('a listener added during a dispatch does not run in that dispatch', async () => {
    const { bus } = busWithReports()
    bus.on('wrap', async (p, next) => {
      bus.on('wrap', async (q, n2) => `late(${await n2()})`)
      return `A(${await next()})`
    })
    expect(await bus.waterfall('wrap', { n: 1 }, () => 'T')).toBe('A(T)')
  })
})

describe('serial', () => {
  it('awaits listeners one after another in registration order', async () => {
    const { bus } = busWithReports()
    const log: string[] = []
    bus.on('seq', async () => {
      log.push('a:start')
      await new Promise((r) => setTimeout(r, 5))
      log.push('a:end')
    })
    bus.on('seq', () => {
      log.push('b')
    })
    await bus.serial('seq', { n: 1 })
    expect(log).toEqual(['a:start', 'a:end', 'b'])
  })

  it('the first failure propagates and later listeners do not run', async () => {
    const { bus, reports } = busWithReports()
    let laterRan = false
    bus.on('seq', async () => {
      throw new Error('serial failed')
    })
    bus.on('seq', () => {
      laterRan = true
    })
    await expect(bus.serial('seq', { n: 1 })).rejects.toThrow('serial failed')
    expect(laterRan).toBe(false)
    expect(reports).toEqual([])
  })
})

describe('guard', () => {
  it('a throwing listener vetoes: the throw propagates synchronously and later listeners do not run', () => {
    const { bus, reports } = busWithReports()
    let laterRan = false
    bus.on('check', ({ n }) => {
      if (n < 0) throw new RangeError(`negative ${n}`)
    })
    bus.on('check', () => {
      laterRan = true
    })
    expect(() => bus.guard('check', { n: -1 })).toThrow(RangeError)
    expect(laterRan).toBe(false)
    expect(reports).toEqual([])
    expect(() => bus.guard('check', { n: 1 })).not.toThrow()
    expect(laterRan).toBe(true)
  })
})

describe('scopes', () => {
  it('a scoped listener sees only its scope while a global listener sees every dispatch', () => {
    const { bus } = busWithReports()
    const global: string[] = []
    const a: string[] = []
    const b: string[] = []
    bus.on('ping', ({ n }) => {
      global.push(`g${n}`)
    })
    bus.scoped('agent-a').on('ping', ({ n }) => {
      a.push(`a${n}`)
    })
    bus.scoped('agent-b').on('ping', ({ n }) => {
      b.push(`b${n}`)
    })
    bus.emit('ping', { n: 1 }, 'agent-a')
    bus.emit('ping', { n: 2 }, 'agent-b')
    bus.emit('ping', { n: 3 })
    expect(global).toEqual(['g1', 'g2', 'g3'])
    expect(a).toEqual(['a1'])
    expect(b).toEqual(['b2'])
  })

  it('scopes apply to waterfall, serial and guard dispatches too', async () => {
    const { bus } = busWithReports()
    const scoped = bus.scoped('x')
    scoped.on('wrap', async (p, next) => `X(${await next()})`)
    let serialRuns = 0
    scoped.on('seq', () => {
      serialRuns++
    })
    scoped.on('check', () => {
      throw new Error('x vetoes')
    })
    expect(await bus.waterfall('wrap', { n: 1 }, () => 'T', 'x')).toBe('X(T)')
    expect(await bus.waterfall('wrap', { n: 1 }, () => 'T', 'y')).toBe('T')
    await bus.serial('seq', { n: 1 }, 'y')
    expect(serialRuns).toBe(0)
    await bus.serial('seq', { n: 1 }, 'x')
    expect(serialRuns).toBe(1)
    expect(() => bus.guard('check', { n: 1 }, 'y')).not.toThrow()
    expect(() => bus.guard('check', { n: 1 }, 'x')).toThrow('x vetoes')
  })

  it('scoped().dispose() removes every listener registered through that view, and only those', () => {
    const { bus } = busWithReports()
    const seen: string[] = []
    const view = bus.scoped('s')
    expect(view.scope).toBe('s')
    view.on('ping', () => {
      seen.push('s1')
    })
    view.on('ping', () => {
      seen.push('s2')
    })
    bus.scoped('s').on('ping', () => {
      seen.push('other-view')
    })
    bus.on('ping', () => {
      seen.push('global')
    })
    view.dispose()
    bus.emit('ping', { n: 1 }, 's')
    expect(seen).toEqual(['other-view', 'global'])
    view.dispose() // idempotent
  })
})

describe('disposers', () => {
  it('remove the listener and are idempotent (a second call does not remove another registration)', () => {
    const { bus } = busWithReports()
    const seen: string[] = []
    const listener = (): void => {
      seen.push('x')
    }
    const off1 = bus.on('ping', listener)
    bus.on('ping', listener) // the same function registered twice is two registrations
    off1()
    off1()
    bus.emit('ping', { n: 1 })
    expect(seen).toEqual(['x'])
  })

  it('a scoped disposer called before view.dispose() is not run twice', () => {
    const { bus } = busWithReports()
    const view = bus.scoped('s')
    const seen: number[] = []
    const off = view.on('ping', ({ n }) => {
      seen.push(n)
    })
    off()
    view.dispose()
    off()
    bus.emit('ping', { n: 1 }, 's')
    expect(seen).toEqual([])
  })

  it('has() reflects registrations and disposals', () => {
    const { bus } = busWithReports()
    expect(bus.has('ping')).toBe(false)
    const off = bus.on('ping', () => {})
    expect(bus.has('ping')).toBe(true)
    off()
    expect(bus.has('ping')).toBe(false)
  })

  it('refuses a listener that is not a function', () => {
    const { bus } = busWithReports()
    expect(() => bus.on('ping', 42 as unknown as () => void)).toThrow(/listener for 'ping' must be a function/)
  })
})
