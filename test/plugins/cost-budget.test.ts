import { describe, expect, it } from 'vitest'
import { COST_CAP_EVENT, costBudgetPlugin, costCapOf, createHarness, recordedCostCap, retryPlugin, type ModelInfo, type SessionEvent, type StreamChunk } from '../../src/index.js'
import type { GenerateOptions, LlmAdapter } from '../../src/llm/types.js'

// $1 per million tokens in and out, no peak windows: a request of 100k input tokens costs exactly $0.10.
const PRICED: ModelInfo = { pricing: { currency: 'USD', inputPerMTok: 1, outputPerMTok: 1, asOf: '2026-12-01' } }
const TENTH = { inputTokens: 100_000, outputTokens: 0 }

type Reply = { readonly kind: 'tool' } | { readonly kind: 'text' } | { readonly kind: 'fail-after-usage' }

/** A model that bills every attempt 100k input tokens; `fail-after-usage` streams its usage, then a retryable failure. */
function billingModel(replies: readonly Reply[], models: Readonly<Record<string, ModelInfo>> = { priced: PRICED }): LlmAdapter & { requests: GenerateOptions[] } {
  const requests: GenerateOptions[] = []
  return {
    provider: 'billing',
    requests,
    resolveModel: (model) => models[model],
    retryPolicy: { maxRetries: 5, retryableCodes: ['SERVER'], initialDelayMs: 0, maxDelayMs: 0, jitterRatio: 0 },
    async *stream(request): AsyncIterable<StreamChunk> {
      const reply = replies[requests.length] ?? { kind: 'text' }
      requests.push(request)
      const usage: StreamChunk = { type: 'usage', usage: TENTH }
      if (reply.kind === 'fail-after-usage') {
        yield usage
        yield { type: 'finish', reason: { kind: 'error', failure: { code: 'SERVER', message: 'upstream 500', status: 500 } } }
        return
      }
      if (reply.kind === 'tool') {
        const block = { type: 'tool-call' as const, id: `c${requests.length}`, name: 'noop', arguments: '{}' }
        yield { type: 'block-start', index: 0, blockType: 'tool-call' }
        yield { type: 'tool-call-delta', index: 0, id: block.id, name: 'noop', argumentsDelta: '{}' }
        yield { type: 'block-end', index: 0, block }
        yield usage
        yield { type: 'finish', reason: { kind: 'tool-calls' } }
        return
      }
      yield { type: 'block-start', index: 0, blockType: 'text' }
      yield { type: 'text-delta', index: 0, text: 'done' }
      yield { type: 'block-end', index: 0, block: { type: 'text', text: 'done' } }
      yield usage
      yield { type: 'finish', reason: { kind: 'stop' } }
    },
  }
}

async function fixture(replies: readonly Reply[], options: Parameters<typeof costBudgetPlugin>[0], model = 'priced', models?: Readonly<Record<string, ModelInfo>>) {
  const adapter = billingModel(replies, models)
  const harness = createHarness({
    adapters: [adapter],
    tools: [{ name: 'noop', description: 'does nothing', parameters: { type: 'object' }, execute: () => 'ok' }],
    plugins: [retryPlugin({ baseDelayMs: 0, maxDelayMs: 0, jitterRatio: 0 }), costBudgetPlugin(options)],
  })
  const agent = await harness.createAgent({ provider: 'billing', model })
  const turn = async (text: string): Promise<SessionEvent | undefined> => {
    agent.followup(text)
    await agent.whenIdle()
    return agent.session.events.filter((e) => e.type === 'turn/end').at(-1)
  }
  const ofType = (type: string): SessionEvent[] => agent.session.events.filter((e) => e.type === type)
  return { adapter, agent, turn, ofType }
}

describe('costBudgetPlugin', () => {
  it('a cap reached mid-turn ends the turn aborted before the next request, naming the cost budget', async () => {
    // Each request costs $0.10: after two requests $0.20 ≥ $0.15, so the third request is never sent.
    const f = await fixture([{ kind: 'tool' }, { kind: 'tool' }, { kind: 'tool' }, { kind: 'text' }], { maxUsd: 0.15 })
    const end = await f.turn('go')
    expect(f.adapter.requests).toHaveLength(2)
    expect(end?.data).toMatchObject({ turn: 1, reason: { kind: 'aborted', reason: { kind: 'hook', reason: expect.stringMatching(/^cost budget: \$0\.2 spent of \$0\.15/) as unknown as string } } })
    expect(f.ofType('budget/exceeded').map((e) => e.data)).toEqual([{ turn: 1, budget: 'cost', per: 'session', limit: 0.15, used: 0.2 }])
    expect(f.ofType('cost-budget/unpriced')).toEqual([])
  })

  it('failed and retried attempts count: their usage is billed even though no message carries it', async () => {
    // Two failed attempts ($0.20) already reach the cap: the retry's third request is not sent.
    const f = await fixture([{ kind: 'fail-after-usage' }, { kind: 'fail-after-usage' }, { kind: 'text' }], { maxUsd: 0.2 })
    const end = await f.turn('go')
    expect(f.adapter.requests).toHaveLength(2)
    expect(f.ofType('assistant/message')).toEqual([])
    expect(end?.data).toMatchObject({ reason: { kind: 'aborted', reason: { kind: 'hook' } } })
    expect(f.ofType('budget/exceeded').map((e) => e.data)).toMatchObject([{ used: 0.2 }])
  })

  it("per 'session' carries the spend across turns; per 'turn' starts each turn at zero", async () => {
    const session = await fixture([{ kind: 'text' }, { kind: 'text' }, { kind: 'text' }], { maxUsd: 0.2 })
    expect((await session.turn('one'))?.data).toMatchObject({ reason: { kind: 'completed' } })
    expect((await session.turn('two'))?.data).toMatchObject({ reason: { kind: 'completed' } })
    expect((await session.turn('three'))?.data).toMatchObject({ reason: { kind: 'aborted', reason: { kind: 'hook' } } })
    expect(session.adapter.requests).toHaveLength(2)

    const perTurn = await fixture([{ kind: 'tool' }, { kind: 'text' }, { kind: 'tool' }, { kind: 'tool' }, { kind: 'text' }], { maxUsd: 0.2, per: 'turn' })
    expect((await perTurn.turn('one'))?.data).toMatchObject({ reason: { kind: 'completed' } })
    expect((await perTurn.turn('two'))?.data).toMatchObject({ reason: { kind: 'aborted', reason: { kind: 'hook', reason: expect.stringContaining('this turn') as unknown as string } } })
    // Turn 1 used two requests ($0.20) and still completed; turn 2 got its own two before the cap.
    expect(perTurn.adapter.requests).toHaveLength(4)
  })

  it('a model without a price is warned about once, in the log, and never passes silently', async () => {
    const f = await fixture([{ kind: 'tool' }, { kind: 'text' }, { kind: 'text' }], { maxUsd: 0.01 }, 'local-model')
    await f.turn('one')
    await f.turn('two')
    expect(f.ofType('cost-budget/unpriced').map((e) => e.data)).toEqual([{ turn: 1, provider: 'billing', model: 'local-model', reason: 'no-price' }])
    expect(f.ofType('cost-budget/unpriced')[0]?.ignorable).toBe(true)
  })

  it('the pricing option comes first; a price in another currency is warned about too', async () => {
    const yuan: ModelInfo = { pricing: { currency: 'CNY', inputPerMTok: 1, outputPerMTok: 1, asOf: '2026-12-01' } }
    const f = await fixture([{ kind: 'text' }, { kind: 'text' }], { maxUsd: 0.1, pricing: { priced: yuan } })
    await f.turn('one')
    expect(f.ofType('cost-budget/unpriced').map((e) => (e.data as { reason: string }).reason)).toEqual(['currency'])
  })

  it('records its cap in the log once, before the first request, so a reader of the stored log knows it', async () => {
    const f = await fixture([{ kind: 'text' }, { kind: 'text' }, { kind: 'text' }], { maxUsd: 0.25 })
    await f.turn('one')
    await f.turn('two')
    const caps = f.ofType(COST_CAP_EVENT)
    expect(caps.map((e) => e.data)).toEqual([{ maxUsd: 0.25, per: 'session', origin: 'plugin' }])
    expect(caps[0]?.ignorable).toBe(true)
    expect(caps[0]?.seq).toBeLessThan(f.ofType('request/header')[0]?.seq as number)
    // Two requests of $0.10 against the recorded cap, as inspect, the page and the footer read it.
    expect(costCapOf(f.agent.session.events, { priced: PRICED })).toMatchObject({ maxUsd: 0.25, spentUsd: 0.2, stoppedTurns: [], summary: 'spent $0.2000 of $0.2500 cap' })
  })

  it("a session's own cap in its log wins over the budget's default, and a budget without a default caps only such sessions", async () => {
    const own = { maxUsd: 0.15, per: 'session', origin: 'session' } as const
    const f = await fixture([{ kind: 'tool' }, { kind: 'tool' }, { kind: 'tool' }, { kind: 'text' }], { maxUsd: 10 })
    f.agent.session.append(COST_CAP_EVENT, own, { ignorable: true })
    const end = await f.turn('go')
    expect(f.adapter.requests).toHaveLength(2)
    expect(end?.data).toMatchObject({ reason: { kind: 'aborted', reason: { kind: 'hook', reason: 'cost budget: $0.2 spent of $0.15' } } })
    // The default is not recorded over the session's own cap: the log's last cap is the one that held.
    expect(recordedCostCap(f.agent.session.events)).toEqual(own)
    expect(costCapOf(f.agent.session.events, { priced: PRICED })).toMatchObject({ origin: 'session', spentUsd: 0.2, stoppedTurns: [1] })

    const capped = await fixture([{ kind: 'tool' }, { kind: 'tool' }, { kind: 'text' }], {})
    capped.agent.session.append(COST_CAP_EVENT, { maxUsd: 0.1, per: 'session', origin: 'session' }, { ignorable: true })
    await capped.turn('go')
    expect(capped.adapter.requests).toHaveLength(1)

    const free = await fixture([{ kind: 'tool' }, { kind: 'tool' }, { kind: 'text' }], {}, 'local-model')
    expect((await free.turn('go'))?.data).toMatchObject({ reason: { kind: 'completed' } })
    expect(free.adapter.requests).toHaveLength(3)
    // No cap, nothing to warn about: an unpriced model of an uncapped session is not a budget matter.
    expect(free.agent.session.events.filter((e) => e.type.startsWith('cost-budget/'))).toEqual([])
  })

  it('refuses a negative or non-numeric cap', () => {
    expect(() => costBudgetPlugin({ maxUsd: -1 })).toThrow(/maxUsd/)
    expect(() => costBudgetPlugin({ maxUsd: Number.NaN })).toThrow(/maxUsd/)
  })
})
