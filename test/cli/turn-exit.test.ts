import { describe, expect, it } from 'vitest'
import { EXIT } from '../../src/cli/cli-error.js'
import { exitCodeFor, failureHint } from '../../src/cli/turn-exit.js'
import type { TurnEndReason } from '../../src/session/events.js'

const error = (code: string, status?: number): TurnEndReason => ({ kind: 'error', error: { code, message: 'x', ...(status !== undefined ? { status } : {}) } })

describe('turn ends as the CLI reports them (views say how a turn ended, cli/turn-exit.ts what that means here)', () => {
  it('exits 0 on completed and max-tokens, 130 when you cancelled, 1 otherwise', () => {
    expect(exitCodeFor({ kind: 'completed' })).toBe(EXIT.ok)
    expect(exitCodeFor({ kind: 'max-tokens' })).toBe(EXIT.ok)
    expect(exitCodeFor({ kind: 'aborted', reason: { kind: 'user' } })).toBe(EXIT.interrupted)
    expect(exitCodeFor({ kind: 'aborted', reason: { kind: 'hook', reason: 'budget' } })).toBe(EXIT.failed)
    expect(exitCodeFor({ kind: 'blocked' })).toBe(EXIT.failed)
    expect(exitCodeFor(error('AUTH'))).toBe(EXIT.failed)
  })

  it('hints in terms of the CLI flags, only where the failure tells', () => {
    expect(failureHint(error('BAD_REQUEST', 404), { baseURL: 'http://localhost:8080' })).toBe('--base-url probably lacks /v1 (try http://localhost:8080/v1)')
    expect(failureHint(error('NOT_STREAMING'), { baseURL: 'http://h/v1' })).toMatch(/^check --base-url/)
    expect(failureHint(error('TIMEOUT'), {})).toMatch(/--idle-timeout/)
    expect(failureHint(error('RATE_LIMIT'), {})).toBeUndefined()
    expect(failureHint({ kind: 'completed' }, {})).toBeUndefined()
  })
})
