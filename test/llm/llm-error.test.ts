import { describe, expect, it } from 'vitest'
import { HarnessError, InvariantError, errorChain } from '../../src/errors/harness-error.js'
import { LlmError, isLlmFailure, normalizeLlmFailure, sanitizeLlmFailure } from '../../src/llm/llm-error.js'

function thrownBy(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

describe('LlmError', () => {
  it('carries code, message, name and a frozen failure with exactly the given fields', () => {
    const cause = new Error('socket reset')
    const e = new LlmError({ message: 'rate limited', code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 1500, requestId: 'req-1' }, { cause })
    expect(e).toBeInstanceOf(HarnessError)
    expect(e).toBeInstanceOf(Error)
    expect(e.name).toBe('LlmError')
    expect(e.code).toBe('RATE_LIMIT')
    expect(e.message).toBe('rate limited')
    expect(e.cause).toBe(cause)
    expect(e.failure).toEqual({ message: 'rate limited', code: 'RATE_LIMIT', status: 429, providerRetryAfterMs: 1500, requestId: 'req-1' })
    expect(Object.isFrozen(e.failure)).toBe(true)
    expect(JSON.parse(JSON.stringify(e.failure))).toEqual(e.failure)
  })

  it('copies the init: later mutation of the input does not reach the failure', () => {
    const init = { message: 'm', code: 'SERVER', status: 503 }
    const e = new LlmError(init)
    init.status = 500
    expect(e.failure.status).toBe(503)
    expect(Object.keys(new LlmError({ message: 'm', code: 'C' }).failure)).toEqual(['message', 'code'])
  })

  it.each([
    ['an empty message', { message: '', code: 'X' }, /message must be a non-empty string/],
    ['an empty code', { message: 'm', code: '' }, /code must be a non-empty string/],
    ['a status below 100', { message: 'm', code: 'X', status: 99 }, /status 99 must be an integer from 100 to 599/],
    ['a status above 599', { message: 'm', code: 'X', status: 600 }, /status 600 must be an integer/],
    ['a fractional status', { message: 'm', code: 'X', status: 429.5 }, /status 429.5/],
    ['a zero retry-after', { message: 'm', code: 'X', providerRetryAfterMs: 0 }, /providerRetryAfterMs 0 must be a positive finite number/],
    ['a negative retry-after', { message: 'm', code: 'X', providerRetryAfterMs: -1 }, /providerRetryAfterMs -1/],
    ['an infinite retry-after', { message: 'm', code: 'X', providerRetryAfterMs: Number.POSITIVE_INFINITY }, /providerRetryAfterMs Infinity/],
    ['an empty requestId', { message: 'm', code: 'X', requestId: '' }, /requestId must be a non-empty string/],
  ])('rejects %s with INVALID_LLM_FAILURE', (_, init, pattern) => {
    const error = thrownBy(() => new LlmError(init))
    expect(error).toBeInstanceOf(HarnessError)
    expect((error as HarnessError).code).toBe('INVALID_LLM_FAILURE')
    expect((error as Error).message).toMatch(pattern)
  })

  it('accepts the boundary statuses 100 and 599', () => {
    expect(new LlmError({ message: 'm', code: 'X', status: 100 }).failure.status).toBe(100)
    expect(new LlmError({ message: 'm', code: 'X', status: 599 }).failure.status).toBe(599)
  })
})

describe('isLlmFailure', () => {
  it('agrees with the constructor rules', () => {
    expect(isLlmFailure({ message: 'm', code: 'C', status: 500 })).toBe(true)
    expect(isLlmFailure({ message: 'm', code: 'C', status: 42 })).toBe(false)
    expect(isLlmFailure({ message: 'm' })).toBe(false)
    expect(isLlmFailure(null)).toBe(false)
    expect(isLlmFailure('m')).toBe(false)
  })
})

describe('normalizeLlmFailure', () => {
  it('keeps an LlmError failure verbatim (frozen)', () => {
    const e = new LlmError({ message: 'slow', code: 'TIMEOUT', status: 504 })
    const f = normalizeLlmFailure(e)
    expect(f).toEqual(e.failure)
    expect(Object.isFrozen(f)).toBe(true)
  })

  it('uses the HarnessError code and message for a HarnessError without failure', () => {
    expect(normalizeLlmFailure(new HarnessError('nope', 'NO_ADAPTER'))).toEqual({ message: 'nope', code: 'NO_ADAPTER' })
  })

  it('turns third-party errors into UNKNOWN, with a fallback message when theirs is empty', () => {
    expect(normalizeLlmFailure(new TypeError('bad thing'))).toEqual({ message: 'bad thing', code: 'UNKNOWN' })
    expect(normalizeLlmFailure(new Error(''))).toEqual({ message: 'LLM adapter failed', code: 'UNKNOWN' })
    // A foreign `code` on a plain Error (e.g. Node's ECONNRESET) is not a failure code.
    expect(normalizeLlmFailure(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toEqual({ message: 'reset', code: 'UNKNOWN' })
  })

  it('wraps non-Error values as UNKNOWN using String()', () => {
    expect(normalizeLlmFailure('plain text')).toEqual({ message: 'plain text', code: 'UNKNOWN' })
    expect(normalizeLlmFailure(42)).toEqual({ message: '42', code: 'UNKNOWN' })
    expect(normalizeLlmFailure(undefined)).toEqual({ message: 'undefined', code: 'UNKNOWN' })
    expect(normalizeLlmFailure('')).toEqual({ message: 'LLM adapter failed', code: 'UNKNOWN' })
  })

  it('survives a hostile toString and a hostile Symbol.toPrimitive', () => {
    const hostile = {
      toString() {
        throw new Error('no strings for you')
      },
    }
    expect(normalizeLlmFailure(hostile)).toEqual({ message: 'LLM adapter failed', code: 'UNKNOWN' })
    const primitive = {
      [Symbol.toPrimitive]() {
        throw new Error('nope')
      },
    }
    expect(normalizeLlmFailure(primitive)).toEqual({ message: 'LLM adapter failed', code: 'UNKNOWN' })
    expect(normalizeLlmFailure(Object.create(null))).toEqual({ message: 'LLM adapter failed', code: 'UNKNOWN' })
  })

  it('survives an Error whose message getter throws', () => {
    const e = new Error('x')
    Object.defineProperty(e, 'message', {
      get() {
        throw new Error('hostile')
      },
    })
    const f = normalizeLlmFailure(e)
    expect(f.code).toBe('UNKNOWN')
    expect(f.message).toBe('LLM adapter failed')
  })

  describe('foreign-realm-like copies (an error carrying its own failure and code)', () => {
    const foreign = (failure: unknown, code: unknown, message = 'outer message'): Error => Object.assign(new Error(message), { failure, code })

    it('trusts an own valid failure whose code equals the error code', () => {
      const failure = { message: 'quota gone', code: 'QUOTA', status: 402, requestId: 'r9' }
      const f = normalizeLlmFailure(foreign(failure, 'QUOTA'))
      expect(f).toEqual(failure)
      expect(f).not.toBe(failure)
      expect(Object.isFrozen(f)).toBe(true)
    })

    it('does not trust a failure whose code disagrees with the error code', () => {
      expect(normalizeLlmFailure(foreign({ message: 'm', code: 'QUOTA' }, 'RATE_LIMIT'))).toEqual({ message: 'outer message', code: 'UNKNOWN' })
    })

    it('does not trust an invalid failure (status out of range, empty message)', () => {
      expect(normalizeLlmFailure(foreign({ message: 'm', code: 'SERVER', status: 42 }, 'SERVER'))).toEqual({ message: 'outer message', code: 'UNKNOWN' })
      expect(normalizeLlmFailure(foreign({ message: '', code: 'SERVER' }, 'SERVER'))).toEqual({ message: 'outer message', code: 'UNKNOWN' })
    })

    it('never runs a failure getter (only own data properties are read)', () => {
      const e = new Error('outer')
      let ran = false
      Object.defineProperty(e, 'failure', {
        get() {
          ran = true
          return { message: 'm', code: 'X' }
        },
      })
      Object.defineProperty(e, 'code', { value: 'X' })
      expect(normalizeLlmFailure(e)).toEqual({ message: 'outer', code: 'UNKNOWN' })
      expect(ran).toBe(false)
    })

    it('does not trust an inherited failure', () => {
      class Carrier extends Error {}
      Object.defineProperty(Carrier.prototype, 'failure', { value: { message: 'm', code: 'X' } })
      const e = Object.assign(new Carrier('outer'), { code: 'X' })
      expect(normalizeLlmFailure(e)).toEqual({ message: 'outer', code: 'UNKNOWN' })
    })
  })
})

describe('sanitizeLlmFailure (what the registry applies to in-band adapter failures)', () => {
  it('keeps valid fields and drops invalid optional ones', () => {
    expect(sanitizeLlmFailure({ message: 'm', code: 'C', status: 42, providerRetryAfterMs: 10, requestId: '' })).toEqual({
      message: 'm',
      code: 'C',
      providerRetryAfterMs: 10,
    })
    expect(sanitizeLlmFailure(undefined)).toEqual({ message: 'LLM adapter failed', code: 'UNKNOWN' })
  })
})

describe('HarnessError', () => {
  it('names the subclass, keeps the cause and defaults an empty code to UNKNOWN', () => {
    const cause = new Error('inner')
    const e = new HarnessError('outer', 'SESSION_LOCKED', { cause })
    expect(e.name).toBe('HarnessError')
    expect(e.code).toBe('SESSION_LOCKED')
    expect(e.cause).toBe(cause)
    expect(new HarnessError('x', '').code).toBe('UNKNOWN')
    expect('cause' in new HarnessError('x', 'C')).toBe(false)
    class StoreError extends HarnessError {}
    expect(new StoreError('x', 'C').name).toBe('StoreError')
  })

  it('InvariantError is a HarnessError with code INVARIANT', () => {
    const e = new InvariantError('seq 4 broke the grammar')
    expect(e).toBeInstanceOf(HarnessError)
    expect(e.name).toBe('InvariantError')
    expect(e.code).toBe('INVARIANT')
    expect(e.message).toBe('seq 4 broke the grammar')
  })
})

describe('errorChain', () => {
  it('renders the cause chain with names and codes', () => {
    const root = new TypeError('root cause')
    const mid = new HarnessError('store failed', 'STORE', { cause: root })
    const top = new LlmError({ message: 'request failed', code: 'SERVER' }, { cause: mid })
    expect(errorChain(top)).toBe('LlmError [SERVER]: request failed <- caused by: HarnessError [STORE]: store failed <- caused by: TypeError: root cause')
  })

  it('lists AggregateError members and renders non-Error causes', () => {
    const agg = new AggregateError([new Error('a'), 'b'], 'several', { cause: 'string cause' })
    expect(errorChain(agg)).toBe('AggregateError: several <- caused by: [Error: a; b] <- caused by: string cause')
  })

  it('stops on cycles and survives hostile values', () => {
    const a = new Error('a')
    const b = new Error('b', { cause: a })
    ;(a as { cause?: unknown }).cause = b
    expect(errorChain(a)).toBe('Error: a <- caused by: Error: b')
    const hostile = {
      toString() {
        throw new Error('x')
      },
    }
    expect(errorChain(hostile)).toBe('[unprintable value]')
    expect(errorChain(new Error('top', { cause: hostile }))).toBe('Error: top <- caused by: [unprintable value]')
  })
})
