import { describe, expect, it } from 'vitest'
import { createHarness, MemoryStore, scriptedAdapter } from '../../src/index.js'
import { CompactRun } from '../../src/session/event-log.js'

const words = Array.from({ length: 8 }, (_, i) => `w${i} `)
const json = (value: unknown): string => JSON.stringify(value)

// MemoryStore keeps an open session's own compact log instead of a second copy: what it hands out must stay
// exactly what it was given, before and after the writer closes.
describe('MemoryStore holding the open session log', () => {
  it('reads what was written while the agent runs, and after it is disposed', async () => {
    const store = new MemoryStore()
    const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: words }, { text: words }] })] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
    agent.followup('one')
    await agent.whenIdle()
    const mid = await store.read(agent.id)
    expect(json(mid.events)).toBe(json(agent.session.events))
    // A reader's runs are its own: reading them builds no event in the session's runs, and the other way round.
    const readerRuns = (mid.log?.records ?? []).filter((r): r is CompactRun => r instanceof CompactRun)
    expect(readerRuns.length).toBeGreaterThan(0)
    expect(agent.session.log.records.some((r) => readerRuns.includes(r as CompactRun))).toBe(false)
    agent.followup('two')
    await agent.whenIdle()
    expect(json((await store.read(agent.id)).events)).toBe(json(agent.session.events))
    expect(json(mid.events.length)).not.toBe(json(agent.session.length)) // an earlier read does not grow
    const final = json(agent.session.events)
    await agent.dispose()
    // The disposed session is no longer the store's: nothing it does afterwards reaches the store.
    agent.session.wire(undefined)
    agent.session.append('session/title', { title: 'after dispose' })
    const stored = await store.read(agent.id)
    // The store kept no event the session materialised (its `events` above built one per chunk).
    expect((stored.log?.records ?? []).every((r) => !(r instanceof CompactRun) || r.cache === undefined)).toBe(true)
    expect(json(stored.events)).toBe(final)
    await harness.close()
  })

  it('keeps to what its writer was given when the session appends without it', async () => {
    const store = new MemoryStore()
    const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: words }] })] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
    agent.followup('one')
    await agent.whenIdle()
    const written = json((await store.read(agent.id)).events)
    const listed = json(await store.list())
    agent.session.wire(undefined)
    agent.session.append('session/title', { title: 'never written' })
    expect(json((await store.read(agent.id)).events)).toBe(written)
    expect(json(await store.list())).toBe(listed)
    await harness.close()
  })

  it('a writer left open by a closed store no longer owns the log once the session is opened again', async () => {
    const store = new MemoryStore()
    const first = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: words }] })] })
    const agent = await first.createAgent({ provider: 'scripted', model: 'm' })
    agent.followup('one')
    await agent.whenIdle()
    await store.close() // the process "dies": the first agent still holds its writer
    const second = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: words }] })] })
    const resumed = await second.resumeAgent(agent.id)
    resumed.followup('two')
    await resumed.whenIdle()
    expect(json((await store.read(agent.id)).events)).toBe(json(resumed.session.events))
    await second.close()
    expect(json((await store.read(agent.id)).events)).toBe(json(resumed.session.events))
  })
})
