import { describe, expect, it } from 'vitest'
import { DEEPSEEK_MODELS } from '../../src/llm/adapters/deepseek.js'
import type { ModelPricing } from '../../src/llm/types.js'
import type { SessionEvent } from '../../src/session/events.js'
import { inPeak, sessionCost } from '../../src/index.js'
import { formatCost } from '../../src/views/cost.js'

// Tuesday 2026-12-01: 02:00 UTC is peak, 12:00 UTC is off-peak; Saturday 2026-12-05 02:00 UTC is off-peak.
const PEAK = Date.UTC(2026, 11, 1, 2, 0)
const OFF_PEAK = Date.UTC(2026, 11, 1, 12, 0)
const SATURDAY = Date.UTC(2026, 11, 5, 2, 0)

function message(seq: number, turn: number, time: number, usage: { inputTokens: number; outputTokens: number; cacheReadTokens?: number }, model = 'deepseek-flash'): SessionEvent {
  return {
    type: 'assistant/message',
    seq,
    time,
    data: { turn, step: 1, message: { id: `m${seq}`, role: 'assistant', content: [], source: { kind: 'model', provider: 'deepseek', model } }, usage },
    surfaceOp: 'append',
  } as unknown as SessionEvent
}

describe('sessionCost', () => {
  it('prices uncached input, cache hits and output at their own published prices (deepseek-flash, peak)', () => {
    const cost = sessionCost([message(0, 1, PEAK, { inputTokens: 1_000_000, cacheReadTokens: 1_000_000, outputTokens: 1_000_000 })], DEEPSEEK_MODELS)
    expect(cost.currency).toBe('USD')
    expect(cost.total).toBeCloseTo(0.3 + 0.006 + 1.2, 10)
    expect(cost.requests[0]?.offPeak).toBe(false)
    expect(cost.asOf).toBe('2026-11-15')
  })

  it('applies the off-peak half price outside the peak windows and all weekend', () => {
    const usage = { inputTokens: 2_000_000, outputTokens: 0 }
    expect(sessionCost([message(0, 1, OFF_PEAK, usage)], DEEPSEEK_MODELS).total).toBeCloseTo(0.3, 10)
    expect(sessionCost([message(0, 1, SATURDAY, usage)], DEEPSEEK_MODELS).total).toBeCloseTo(0.3, 10)
    expect(sessionCost([message(0, 1, PEAK, usage)], DEEPSEEK_MODELS).total).toBeCloseTo(0.6, 10)
  })

  it('sums per turn, counts what it cannot price, and takes a function catalogue (config overrides)', () => {
    const events = [
      message(0, 1, PEAK, { inputTokens: 1_000_000, outputTokens: 0 }),
      message(1, 2, PEAK, { inputTokens: 1_000_000, outputTokens: 0 }, 'deepseek-v4-pro'),
      message(2, 2, PEAK, { inputTokens: 5, outputTokens: 5 }, 'some-local-model'),
    ]
    const cost = sessionCost(events, DEEPSEEK_MODELS)
    expect(cost.turns).toEqual([
      { turn: 1, cost: expect.closeTo(0.3, 10) as unknown as number },
      { turn: 2, cost: expect.closeTo(1.32, 10) as unknown as number },
    ])
    expect(cost.unpriced).toBe(1)
    const flat: ModelPricing = { currency: 'CNY', inputPerMTok: 2, outputPerMTok: 8, asOf: '2026-12-01' }
    const overridden = sessionCost(events, (_provider, model) => (model === 'some-local-model' ? flat : undefined))
    expect(overridden.currency).toBe('CNY')
    expect(overridden.total).toBeCloseTo((5 * 2 + 5 * 8) / 1_000_000, 12)
    expect(formatCost(overridden.total, 'CNY')).toBe('¥0.000050')
  })

  it('peak windows are UTC, start inclusive, end exclusive, and may wrap midnight', () => {
    const rule = { share: 0.5, peakHoursUtc: ['22:00-02:00'] }
    expect(inPeak(rule, Date.UTC(2026, 11, 1, 22, 0))).toBe(true)
    expect(inPeak(rule, Date.UTC(2026, 11, 1, 1, 59))).toBe(true)
    expect(inPeak(rule, Date.UTC(2026, 11, 1, 2, 0))).toBe(false)
  })
})
