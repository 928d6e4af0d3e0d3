import { describe, expect, it } from 'vitest'
import { createHarness, MemoryStore, scriptedAdapter } from '../../src/index.js'

describe('MemoryStore.delete', () => {
  it('forgets a disposed session, refuses one a writer holds, and answers false for an unknown id', async () => {
    const store = new MemoryStore()
    const harness = createHarness({ store, adapters: [scriptedAdapter({ script: [{ text: 'hi' }] })] })
    const agent = await harness.createAgent({ provider: 'scripted', model: 'm' })
    agent.followup('hello')
    await agent.whenIdle()
    expect(() => store.delete(agent.id)).toThrow(expect.objectContaining({ code: 'SESSION_LOCKED' }))
    await agent.dispose()
    expect(store.delete(agent.id)).toBe(true)
    expect(await store.has(agent.id)).toBe(false)
    await expect(store.read(agent.id)).rejects.toMatchObject({ code: 'SESSION_NOT_FOUND' })
    expect(store.delete('nobody')).toBe(false)
    await harness.close()
  })
})
