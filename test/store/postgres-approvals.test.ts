import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Session } from '../../src/index.js'
import { PostgresStore } from '../../src/postgres.js'
import { createScratchDatabase, type ScratchDatabase } from './postgres-scratch.js'

let db: ScratchDatabase
beforeAll(async () => {
  db = await createScratchDatabase()
})
afterAll(async () => {
  await db.drop()
})

const question = { tool: 'bash', args: { command: 'make deploy' }, subject: 'make deploy', reason: 'bash make deploy needs approval' }

describe('PostgresStore approvals', () => {
  it('lists a question of the live owner to anyone, takes one answer, and hands it to the asker once', async () => {
    const owner = new PostgresStore({ connectionString: db.url, schema: 'ap1' })
    const other = new PostgresStore({ connectionString: db.url, schema: 'ap1' })
    const writer = await owner.create(new Session({ id: 's1' }).header)
    let off: () => void = () => undefined
    const notified = new Promise<string>((resolve) => (off = other.onApprovals(resolve)))
    await other.listening()
    await owner.askApproval('s1', 'call-1', question)
    const pending = await other.pendingApprovals('s1')
    expect(pending).toMatchObject([{ callId: 'call-1', ...question }])
    expect(Number.isNaN(Date.parse(pending[0]?.askedAt ?? ''))).toBe(false)
    expect(await owner.takeApprovalAnswer('s1', 'call-1')).toBeUndefined()
    expect(await other.answerApproval('s1', 'call-1', 'always')).toBe(true)
    expect(await other.answerApproval('s1', 'call-1', 'deny')).toBe(false)
    expect(await other.pendingApprovals('s1')).toEqual([])
    expect(await owner.takeApprovalAnswer('s1', 'call-1')).toBe('always')
    expect(await owner.takeApprovalAnswer('s1', 'call-1')).toBeUndefined()
    expect(await other.sessionStates(['s1'])).toEqual([{ id: 's1', status: 'idle', owned: true, asking: false, owner: owner.ownerId }])
    // Followers (serve's tails) and the asker are woken by a NOTIFY naming the session.
    expect(await notified).toBe('s1')
    off()
    await writer.close()
    await owner.close()
    await other.close()
  })

  it('a question whose asker lost its lease or released the session is void: never listed, never answerable', async () => {
    const owner = new PostgresStore({ connectionString: db.url, schema: 'ap2' })
    const other = new PostgresStore({ connectionString: db.url, schema: 'ap2' })
    const writer = await owner.create(new Session({ id: 's2' }).header)
    await owner.askApproval('s2', 'call-1', question)
    expect(await other.sessionStates(['s2'])).toEqual([{ id: 's2', status: 'idle', owned: true, asking: true, owner: owner.ownerId }])
    await writer.close()
    expect(await other.pendingApprovals('s2')).toEqual([])
    expect(await other.answerApproval('s2', 'call-1', 'allow')).toBe(false)
    expect(await other.sessionStates(['s2'])).toEqual([])
    // Asking needs an open writer of this store.
    await expect(other.askApproval('s2', 'call-2', question)).rejects.toMatchObject({ code: 'SESSION_CLOSED' })
    await owner.close()
    await other.close()
  })
})
