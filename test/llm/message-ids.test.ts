import { describe, expect, it } from 'vitest'
import { createAssistantMessage, createToolResultMessage, createUserMessage } from '../../src/llm/messages.js'

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('message ids', () => {
  it('are version-4 UUIDs, unique across many messages and across pool refills', () => {
    const ids = new Set<string>()
    for (let i = 0; i < 5000; i++) {
      ids.add(createUserMessage('x').id)
      ids.add(createAssistantMessage([{ type: 'text', text: 'y' }], { kind: 'model', provider: 'p', model: 'm' }).id)
      ids.add(createToolResultMessage({ callId: 'c', content: [{ type: 'text', text: 'z' }] }).id)
    }
    expect(ids.size).toBe(15000)
    for (const id of ids) expect(id).toMatch(UUID_V4)
  })

  it('are independent strings (a later id never changes an earlier one)', () => {
    const first = createUserMessage('a').id
    const copy = `${first}`
    for (let i = 0; i < 200; i++) createUserMessage('b')
    expect(first).toBe(copy)
  })
})
