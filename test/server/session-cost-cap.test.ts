import { describe, expect, it } from 'vitest'
import { costBudgetPlugin, HarnessError, MemoryStore, recordedCostCap, scriptedAdapter, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { LocalSessionHost } from '../../src/server/index.js'

// Every reply bills 10k input tokens at $1 per million: $0.01 a request.
const PRICED = { pricing: { currency: 'USD' as const, inputPerMTok: 1, outputPerMTok: 1, asOf: '2026-12-01' } }

function host(plugins: ConstructorParameters<typeof LocalSessionHost>[0]['plugins'] = []): LocalSessionHost {
  return new LocalSessionHost({
    store: new MemoryStore(),
    adapters: [scriptedAdapter({ script: () => ({ text: 'ok', usage: { inputTokens: 10_000, outputTokens: 0 } }), models: { m: PRICED } })],
    plugins,
    defaults: { provider: 'scripted', model: 'm' },
    permissions: false,
    releaseIdleMs: 0,
  })
}

async function turns(h: LocalSessionHost, id: string, n: number): Promise<SessionEvent[]> {
  for (let i = 0; i < n; i++) {
    await h.followup(id, `turn ${i + 1}`)
    for (;;) {
      const { events } = await h.read(id)
      if (events.filter((e) => e.type === 'turn/end').length > i && h.status(id) === 'idle') break
      await new Promise((r) => setTimeout(r, 5))
    }
  }
  return [...(await h.read(id)).events]
}

const reasons = (events: readonly SessionEvent[]): string[] => events.filter((e) => e.type === 'turn/end').map((e) => (e.data as { reason: { kind: string } }).reason.kind)

describe('a session created with its own cost cap (serve: POST /api/sessions maxCostUsd)', () => {
  it("replaces the server's --max-cost for that session only, and is recorded in its log", async () => {
    const h = host([costBudgetPlugin({ maxUsd: 10 })])
    try {
      const capped = await h.create({ maxCostUsd: 0.02 })
      const free = await h.create({})
      // $0.01 a request: two requests reach $0.02, so the third turn is stopped before it asks.
      const cappedEvents = await turns(h, capped, 3)
      expect(reasons(cappedEvents)).toEqual(['completed', 'completed', 'aborted'])
      expect(recordedCostCap(cappedEvents)).toEqual({ maxUsd: 0.02, per: 'session', origin: 'session' })
      // Written before the first turn, the cap keeps the log valid (an ignorable log-only event).
      expect(cappedEvents.findIndex((e) => e.type === 'cost-budget/cap')).toBeLessThan(cappedEvents.findIndex((e) => e.type === 'turn/start'))
      expect(verifySessionLog(cappedEvents).problems).toEqual([])
      const freeEvents = await turns(h, free, 3)
      expect(reasons(freeEvents)).toEqual(['completed', 'completed', 'completed'])
      expect(recordedCostCap(freeEvents)).toEqual({ maxUsd: 10, per: 'session', origin: 'plugin' })
    } finally {
      await h.close()
    }
  })

  it('holds on a server without --max-cost (the host brings a cost budget), and refuses a cap that is not a positive number', async () => {
    const h = host()
    try {
      const capped = await h.create({ maxCostUsd: 0.01 })
      expect(reasons(await turns(h, capped, 2))).toEqual(['completed', 'aborted'])
      const free = await h.create({})
      const events = await turns(h, free, 2)
      expect(reasons(events)).toEqual(['completed', 'completed'])
      expect(events.filter((e) => e.type.startsWith('cost-budget/'))).toEqual([])
      for (const bad of [-1, 0, Number.NaN, Number.POSITIVE_INFINITY]) {
        await expect(h.create({ maxCostUsd: bad }), String(bad)).rejects.toSatisfy((e: unknown) => e instanceof HarnessError && e.code === 'INVALID_CONFIG')
      }
    } finally {
      await h.close()
    }
  })
})
