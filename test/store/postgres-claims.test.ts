import { expect, it } from 'vitest'
import { Session } from '../../src/index.js'
import { usePostgresStores } from './postgres-store-kit.js'

const kit = usePostgresStores()
const { storeIn, freshSchema } = kit

/** A schema with `ids` detached sessions, each with one followup waiting in its inbox. */
async function withWaitingInput(ids: readonly string[]): Promise<string> {
  const schema = freshSchema('c')
  const store = storeIn(schema)
  for (const id of ids) {
    await store.createDetached(new Session({ id }).header)
    await store.send(id, { kind: 'followup', message: `hello ${id}` })
  }
  return schema
}

it('claimWork claims sessions with input in one statement, never one a second worker already claimed; open reads what the claim found', async () => {
  const schema = await withWaitingInput(['a', 'b', 'c'])
  const first = storeIn(schema)
  const second = storeIn(schema)
  const one = await first.claimWork(2)
  expect(one.continuationsWaiting).toBe(false)
  expect(one.claims.map((c) => c.id).sort()).toEqual(['a', 'b'])
  const two = await second.claimWork(4)
  expect(two.claims.map((c) => c.id)).toEqual(['c'])
  expect(await second.claimWork(4)).toEqual({ claims: [], continuationsWaiting: false })
  // No forced resume was asked, and the claim says so without asking again.
  expect(await first.forcedResume('a', 'check')).toBe(false)
  const { writer, events, header } = await first.open('a')
  expect(header.id).toBe('a')
  expect(events).toEqual([])
  expect(writer.epoch).toBe(one.claims.find((c) => c.id === 'a')?.epoch)
  await writer.close()
})

it('claimWork claims nothing while a crash continuation waits, and says so; limit 0 only checks', async () => {
  const schema = await withWaitingInput(['plain', 'crashed'])
  // 'crashed': its owner went away mid-turn (status running, lease run out).
  await kit.admin.query(`UPDATE "${schema}".sessions SET owner = 'gone', epoch = 3, lease_until = now() - interval '1 second', status = 'running' WHERE id = 'crashed'`)
  const store = storeIn(schema)
  expect(await store.claimWork(0)).toEqual({ claims: [], continuationsWaiting: true })
  expect(await store.claimWork(4)).toEqual({ claims: [], continuationsWaiting: true })
  const [continuation] = await store.claimSessions(1, { kind: 'continuations' })
  expect(continuation).toMatchObject({ id: 'crashed', epoch: 4, continuation: true })
  const rest = await store.claimWork(4)
  expect(rest.continuationsWaiting).toBe(false)
  expect(rest.claims.map((c) => c.id)).toEqual(['plain'])
})

it('a claim that a renewal found taken over is claimed anew by open, and a stale claim cannot write', async () => {
  const schema = await withWaitingInput(['s'])
  const store = storeIn(schema)
  const [claim] = (await store.claimWork(1)).claims
  expect(claim?.id).toBe('s')
  // Someone took the session over behind this store's back (its lease ran out while it stalled).
  await kit.admin.query(`UPDATE "${schema}".sessions SET owner = 'other', epoch = epoch + 1, lease_until = now() + interval '1 minute' WHERE id = 's'`)
  const { writer } = await store.open('s')
  const session = new Session({ id: 's' })
  writer.append(session.append('session/title', { title: 'late' }))
  await expect(writer.flush()).rejects.toMatchObject({ code: 'LEASE_LOST' })
  await writer.close()
  const row = await kit.admin.query<{ owner: string; head_seq: number }>(`SELECT owner, head_seq FROM "${schema}".sessions WHERE id = 's'`)
  expect(row.rows[0]).toEqual({ owner: 'other', head_seq: 0 })
})
