import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { checkJsonSnapshot, deepFreeze, isJsonValue, snapshotJson, snapshotJsonValue } from '../../src/json/lossless.js'
import { HarnessError } from '../../src/errors/harness-error.js'

const finite = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => !Object.is(n, -0))
const jsonArb = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    finite,
    fc.string(),
    fc.array(tie('value')),
    fc.dictionary(fc.string(), tie('value')),
  ),
})).value

describe('lossless JSON snapshot', () => {
  it('round-trips every valid value: the copy is equal, detached and JSON-stable (property)', () => {
    fc.assert(
      fc.property(jsonArb, (value) => {
        const copy = snapshotJsonValue(value)
        // fast-check builds null-prototype dictionaries; the copy is a plain object with the same keys in order.
        expect(copy).toEqual(value)
        expect(JSON.stringify(copy)).toBe(JSON.stringify(value))
        expect(JSON.parse(JSON.stringify(copy))).toEqual(value)
        if (typeof value === 'object' && value !== null) expect(copy).not.toBe(value)
      }),
    )
  })

  it('rejects every value that hides one invalid leaf, naming its path (property)', () => {
    const invalid = fc.oneof(
      fc.constant(undefined),
      fc.constant(Number.NaN),
      fc.constant(Number.POSITIVE_INFINITY),
      fc.constant(Number.NEGATIVE_INFINITY),
      fc.constant(-0),
      fc.constant(() => 1),
      fc.constant(Symbol('s')),
      fc.constant(10n),
      fc.constant(new Date(0)),
      fc.constant(new Map()),
      fc.constant(new Set()),
    )
    fc.assert(
      fc.property(jsonArb, invalid, fc.string(), (host, bad, key) => {
        const wrapped = { ok: host, [key === 'ok' ? 'k' : key]: [bad] }
        const result = checkJsonSnapshot(wrapped)
        expect(result.ok).toBe(false)
        if (!result.ok) expect(result.issue.path.startsWith('$.')).toBe(true)
        expect(isJsonValue(wrapped)).toBe(false)
      }),
    )
  })

  it('rejects cycles and sparse arrays but accepts shared (acyclic) references', () => {
    const a: Record<string, unknown> = {}
    a.self = a
    expect(checkJsonSnapshot(a)).toMatchObject({ ok: false, issue: { reason: 'cycle' } })
    // eslint-disable-next-line no-sparse-arrays
    expect(isJsonValue([1, , 3])).toBe(false)
    const shared = { x: 1 }
    expect(snapshotJsonValue({ a: shared, b: shared })).toStrictEqual({ a: { x: 1 }, b: { x: 1 } })
  })

  it('rejects class instances and array extras', () => {
    class Point {
      x = 1
    }
    expect(isJsonValue(new Point())).toBe(false)
    const arr: unknown[] = [1]
    ;(arr as unknown as Record<string, unknown>).extra = 2
    expect(isJsonValue(arr)).toBe(false)
    expect(isJsonValue(Object.create(null))).toBe(true)
  })

  it('keeps key order and treats __proto__ as an ordinary key', () => {
    const parsed = JSON.parse('{"z":1,"__proto__":{"polluted":true},"a":2}') as Record<string, unknown>
    const copy = snapshotJsonValue(parsed) as Record<string, unknown>
    expect(Object.keys(copy)).toEqual(['z', '__proto__', 'a'])
    expect(Object.getPrototypeOf(copy)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(JSON.stringify(copy)).toBe('{"z":1,"__proto__":{"polluted":true},"a":2}')
  })

  it('reads each getter once, so check and copy cannot disagree', () => {
    let reads = 0
    const tricky = {
      get v() {
        reads++
        return reads === 1 ? 'first' : undefined
      },
    }
    expect(snapshotJsonValue(tricky)).toStrictEqual({ v: 'first' })
    expect(reads).toBe(1)
  })

  it('snapshotJson throws INVALID_JSON naming what and where', () => {
    try {
      snapshotJson({ a: [1, undefined] }, 'event data')
      expect.unreachable()
    } catch (e) {
      expect(e).toBeInstanceOf(HarnessError)
      expect((e as HarnessError).code).toBe('INVALID_JSON')
      expect((e as Error).message).toContain('event data')
      expect((e as Error).message).toContain('$.a[1]')
    }
  })

  it('deepFreeze freezes nested values but leaves AbortSignal usable', () => {
    const controller = new AbortController()
    const obj = deepFreeze({ a: { b: [1, { c: 2 }] }, signal: controller.signal })
    expect(Object.isFrozen(obj.a.b[1])).toBe(true)
    expect(Object.isFrozen(controller.signal)).toBe(false)
    controller.abort()
    expect(controller.signal.aborted).toBe(true)
  })
})
