import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'
import { startFleet, until } from './fleet-fixture.js'

// Rewind on `serve --store postgres://…` with a worker fleet: the sessions' files are in the workers'
// workspaces, not on the server's host, so a rewind that restores files is refused with UNSUPPORTED_OPTION
// (and nothing is forked), while a conversation-only rewind is the fork it is on any store.
let db: ScratchDatabase
beforeAll(async () => {
  db = await createScratchDatabase()
})
afterAll(async () => {
  await db?.drop()
})

describe('REWIND-FLEET: rewind on a PostgreSQL fleet', () => {
  it('refuses to restore files (400 UNSUPPORTED_OPTION) and forks the conversation only; file changes are read from the database', async () => {
    const f = await startFleet(db.url)
    try {
      const { id } = (await (await f.post('/api/sessions', {})).json()) as { id: string }
      for (const [n, text] of ['echo one', 'hello'].entries()) {
        expect((await f.post(`/api/sessions/${id}/followup`, { text })).status).toBe(202)
        await until(async () => (await f.serverStore.read(id)).events.filter((e) => e.type === 'turn/end').length > n)
      }
      const sessionsBefore = (await f.serverStore.list()).length
      const refused = await f.post(`/api/sessions/${id}/rewind`, { toTurn: 1 })
      expect(refused.status).toBe(400)
      const error = ((await refused.json()) as { error: { code: string; message: string } }).error
      expect(error.code).toBe('UNSUPPORTED_OPTION')
      expect(error.message).toMatch(/files: false/)
      expect((await f.serverStore.list()).length).toBe(sessionsBefore)

      const forked = await f.post(`/api/sessions/${id}/rewind`, { toTurn: 1, files: false })
      expect(forked.status).toBe(200)
      const result = (await forked.json()) as { sessionId: string; forked: boolean; restored: string[] }
      expect(result).toMatchObject({ forked: true, restored: [], deleted: [], conflicts: [] })
      const fork = await f.serverStore.read(result.sessionId)
      expect(fork.header.parentSession).toBe(id)
      expect(fork.events.filter((e) => e.type === 'turn/end')).toHaveLength(1)
      expect((await f.post(`/api/sessions/${id}/rewind`, { toTurn: 3, files: false })).status).toBe(400)

      const changes = await f.api(`/api/sessions/${id}/file-changes`)
      expect(changes.status).toBe(200)
      expect(await changes.json()).toEqual({ turns: [], restores: [] })
    } finally {
      await f.close()
    }
  })
})
