import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createHarness, scriptedAdapter, type SessionStore } from '../../src/index.js'
import { CompactRun, type EventLog } from '../../src/session/event-log.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { MemoryStore } from '../../src/store/memory-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'

let root: string
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'll-compact-'))
})
afterEach(() => {
  rmSync(root, { recursive: true, force: true })
})

const stores: [string, () => SessionStore][] = [
  ['JsonlStore', () => new JsonlStore({ dir: join(root, 'jsonl'), flushDelayMs: 0 })],
  ['SqliteStore', () => new SqliteStore({ path: join(root, 'sessions.db'), flushDelayMs: 0 })],
  ['MemoryStore', () => shared],
]
let shared: MemoryStore

const runs = (log: EventLog | undefined): CompactRun[] => (log?.records ?? []).filter((r): r is CompactRun => r instanceof CompactRun)
const words = Array.from({ length: 12 }, (_, i) => `w${i} `)

// Two turns of a scripted model that streams 12 text chunks and a tool call, then 12 chunks and stops.
async function record(store: SessionStore): Promise<{ id: string; json: string }> {
  const adapter = scriptedAdapter({ script: [{ text: words }, { text: words }] })
  const harness = createHarness({ store, adapters: [adapter] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
  agent.followup('one')
  await agent.whenIdle()
  agent.followup('two')
  await agent.whenIdle()
  const json = JSON.stringify(agent.session.events)
  await harness.close()
  return { id: agent.id, json }
}

describe.each(stores)('%s loads chunk runs compact', (_name, make) => {
  beforeEach(() => {
    shared = new MemoryStore()
  })

  it('read() keeps packed runs packed and builds events only when they are read', async () => {
    const { id, json } = await record(make())
    const stored = await make().read(id)
    const loaded = runs(stored.log)
    expect(loaded.length).toBeGreaterThanOrEqual(2)
    expect(loaded.every((r) => r.cache === undefined)).toBe(true)
    // `log` is extra: a stored session still has exactly the documented enumerable keys.
    expect(Object.keys(stored)).toEqual(['header', 'events'])
    expect(JSON.stringify(stored.events)).toBe(json)
    expect(stored.events).toBe(stored.events)
  })

  it('resumeAgent adopts the stored log without materialising its chunks, and the agent continues it', async () => {
    const { id, json } = await record(make())
    const store = make()
    const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: ['more'] }] })] })
    const agent = await harness.resumeAgent(id)
    const adopted = runs(agent.session.log)
    expect(adopted.length).toBeGreaterThanOrEqual(2)
    expect(adopted.every((r) => r.cache === undefined)).toBe(true)
    expect(JSON.stringify(agent.session.events.slice(0, JSON.parse(json).length))).toBe(json)
    agent.followup('three')
    await agent.whenIdle()
    const types = agent.session.events.map((e) => e.type)
    expect(types.filter((t) => t === 'turn/end')).toHaveLength(3)
    await agent.dispose()
    expect(JSON.stringify((await make().read(id)).events)).toBe(JSON.stringify(agent.session.events))
    await harness.close()
  })
})
