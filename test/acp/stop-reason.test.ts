import { expect, it } from 'vitest'
import { promptOutcome } from '../../src/acp/stop-reason.js'

it('ACP-STOP: turn end reasons map to ACP stop reasons; failures carry their code', () => {
  expect(promptOutcome({ kind: 'completed' })).toEqual({ stopReason: 'end_turn' })
  expect(promptOutcome({ kind: 'max-tokens' })).toEqual({ stopReason: 'max_tokens' })
  expect(promptOutcome({ kind: 'blocked' })).toEqual({ stopReason: 'refusal' })
  expect(promptOutcome({ kind: 'aborted', reason: { kind: 'user' } })).toEqual({ stopReason: 'cancelled' })
  expect(promptOutcome({ kind: 'aborted', reason: { kind: 'disposed' } })).toEqual({ stopReason: 'cancelled' })
  expect(promptOutcome({ kind: 'aborted', reason: { kind: 'hook', reason: 'SIGTERM' } })).toEqual({ stopReason: 'cancelled' })
  expect(promptOutcome({ kind: 'aborted', reason: { kind: 'hook', reason: 'turn budget: more than 3 steps' } })).toEqual({ stopReason: 'max_turn_requests' })
  expect(promptOutcome({ kind: 'aborted', reason: { kind: 'hook', reason: 'cost budget: $1.2 spent of $1' } })).toEqual({ stopReason: 'max_turn_requests' })
  expect(promptOutcome({ kind: 'error', error: { code: 'RATE_LIMIT', message: 'slow down' } })).toEqual({ failure: { code: 'RATE_LIMIT', message: 'slow down' } })
  expect(promptOutcome({ kind: 'interrupted' })).toMatchObject({ failure: { code: 'INTERRUPTED' } })
})
