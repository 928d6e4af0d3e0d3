import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { HarnessError, Session, type SessionEvent } from '../../src/index.js'
import { POSTGRES_SCHEMA_VERSION } from '../../src/postgres.js'
import { usePostgresStores } from './postgres-store-kit.js'

const kit = usePostgresStores()
const { storeIn, freshSchema } = kit

function titles(session: Session, count: number): SessionEvent[] {
  const from = session.length
  for (let i = 0; i < count; i++) session.append('session/title', { title: `t${from + i}` })
  return session.events.slice(from)
}

async function rejection(promise: Promise<unknown>): Promise<HarnessError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(HarnessError)
  return error as HarnessError
}

describe('PostgresStore: leases and fencing', () => {
  it('a writer whose expired lease was taken over gets LEASE_LOST on its next flush and writes nothing more', async () => {
    const schema = freshSchema()
    const a = storeIn(schema)
    const b = storeIn(schema)
    const lost: string[] = []
    a.onLeaseLost((id, error, during) => lost.push(`${id} ${error.code} ${during}`))
    const session = new Session({ id: 'fenced' })
    const writer = await a.create(session.header)
    for (const e of titles(session, 2)) writer.append(e)
    await writer.flush()
    // A stalled owner: its lease runs out (database time), and B takes the session over.
    await kit.admin.query(`UPDATE "${schema}".sessions SET lease_until = now() - interval '1 second' WHERE id = 'fenced'`)
    const taken = await b.open('fenced')
    expect(taken.writer.epoch).toBe(writer.epoch + 1)
    for (const e of titles(session, 1)) writer.append(e)
    expect((await rejection(writer.flush())).code).toBe('LEASE_LOST')
    expect(lost).toEqual(['fenced LEASE_LOST flush'])
    expect(() => writer.append(titles(session, 1)[0] as SessionEvent)).toThrow(expect.objectContaining({ code: 'LEASE_LOST' }))
    await writer.close() // releases nothing: the lease is B's
    expect((await kit.admin.query(`SELECT owner FROM "${schema}".sessions WHERE id = 'fenced'`)).rows[0]?.owner).toBe(b.ownerId)
    // B continues the log from what was committed; A's late events are nowhere.
    const next = new Session({ id: 'fenced', header: taken.header, seed: taken.events })
    for (const e of titles(next, 1)) taken.writer.append(e)
    await taken.writer.close()
    expect((await b.read('fenced')).events.map((e) => (e.data as { title: string }).title)).toEqual(['t0', 't1', 't2'])
  })

  it('a renewal that finds the lease gone fences an idle writer at once (during: renewal)', async () => {
    const schema = freshSchema()
    const a = storeIn(schema, { leaseMs: 300 })
    const lost: string[] = []
    a.onLeaseLost((id, _error, during) => lost.push(`${id} ${during}`))
    const session = new Session({ id: 'renewed' })
    const writer = await a.create(session.header)
    await kit.admin.query(`UPDATE "${schema}".sessions SET epoch = epoch + 1, owner = 'elsewhere' WHERE id = 'renewed'`)
    for (let i = 0; i < 100 && lost.length === 0; i++) await new Promise((r) => setTimeout(r, 20))
    expect(lost).toEqual(['renewed renewal'])
    expect(writer.fenced?.code).toBe('LEASE_LOST')
    await writer.close()
  })

  it('the primary key is a second fence: a seq someone else wrote refuses the flush with LEASE_LOST', async () => {
    const schema = freshSchema()
    const a = storeIn(schema)
    const session = new Session({ id: 'pk' })
    const writer = await a.create(session.header)
    const [event] = titles(session, 1)
    await kit.admin.query(`INSERT INTO "${schema}".events (session_id, seq, type, data) VALUES ('pk', 0, 'session/title', '{}')`)
    writer.append(event as SessionEvent)
    expect((await rejection(writer.flush())).code).toBe('LEASE_LOST')
    await writer.close()
  })

  it('renewal keeps a lease alive past its length; a live owner refuses a second one with SESSION_LOCKED naming it', async () => {
    const schema = freshSchema()
    const a = storeIn(schema, { leaseMs: 400 })
    const writer = await a.create(new Session({ id: 'alive' }).header)
    await new Promise((r) => setTimeout(r, 1000))
    const error = await rejection(storeIn(schema).open('alive'))
    expect(error.code).toBe('SESSION_LOCKED')
    expect(error.message).toContain(a.ownerId)
    await writer.close()
  })
})

describe('PostgresStore: inbox', () => {
  it('rows move into the log in the flush that deletes them; a refused flush leaves them for the next owner', async () => {
    const schema = freshSchema()
    const a = storeIn(schema)
    const session = new Session({ id: 'inbox' })
    const writer = await a.create(session.header)
    await a.send('inbox', { kind: 'followup', message: 'one' })
    await a.send('inbox', { kind: 'steer', message: 'two' })
    const rows = await a.pendingInput('inbox')
    expect(rows.map((r) => r.input.kind)).toEqual(['followup', 'steer'])
    await writer.moveInboxRows([rows[0]?.id as string], () => {
      for (const e of titles(session, 1)) writer.append(e)
    })
    expect((await a.pendingInput('inbox')).map((r) => r.input.kind)).toEqual(['steer'])
    expect((await a.read('inbox')).events).toHaveLength(1)
    await kit.admin.query(`UPDATE "${schema}".sessions SET epoch = epoch + 1 WHERE id = 'inbox'`)
    const moving = writer.moveInboxRows([rows[1]?.id as string], () => {
      for (const e of titles(session, 1)) writer.append(e)
    })
    expect((await rejection(moving)).code).toBe('LEASE_LOST')
    expect((await a.pendingInput('inbox')).map((r) => r.input.kind)).toEqual(['steer'])
    expect((await a.read('inbox')).events).toHaveLength(1)
    await writer.close()
  })

  it('send: SESSION_NOT_FOUND for an unknown session, INVALID_INPUT for a bad kind', async () => {
    const a = storeIn(freshSchema())
    expect((await rejection(a.send('nobody', { kind: 'followup', message: 'hi' }))).code).toBe('SESSION_NOT_FOUND')
    await a.createDetached(new Session({ id: 'there' }).header)
    expect((await rejection(a.send('there', { kind: 'shout' } as never))).code).toBe('INVALID_INPUT')
  })

  it('send with a key: a key waiting in the inbox or already in the log queues nothing (undefined)', async () => {
    const a = storeIn(freshSchema())
    const session = new Session({ id: 'keyed' })
    const writer = await a.create(session.header)
    const first = await a.send('keyed', { kind: 'followup', message: 'pay the invoice', key: 'inv-9' })
    expect(first).toMatch(/^\d+$/)
    expect(await a.send('keyed', { kind: 'followup', message: 'pay the invoice', key: 'inv-9' })).toBeUndefined()
    expect(await a.send('keyed', { kind: 'steer', message: 'pay it now', key: 'inv-9' })).toBeUndefined() // one key, one input
    const rows = await a.pendingInput('keyed')
    expect(rows).toHaveLength(1)
    const row = rows[0] as (typeof rows)[number]
    expect(row.input).toMatchObject({ kind: 'followup', key: 'inv-9' })
    const message = (row.input as { message: { id: string } }).message
    expect(row.id).toBe(first)
    // The owner moves the row into its log with the key in the splice (as agent.followup(…, { key }) does).
    await writer.moveInboxRows([row.id], () => {
      const splice = session.append('agent/inbox/spliced', { target: 'next-turn', start: 0, inserted: [message as never], key: 'inv-9' })
      writer.append(splice)
    })
    expect(await a.pendingInput('keyed')).toEqual([])
    expect(await a.send('keyed', { kind: 'followup', message: 'pay the invoice', key: 'inv-9' })).toBeUndefined()
    expect(await a.pendingInput('keyed')).toEqual([])
    // Other keys, and sends without one, queue as always.
    expect(await a.send('keyed', { kind: 'followup', message: 'again', key: 'inv-10' })).toMatch(/^\d+$/)
    expect(await a.send('keyed', { kind: 'followup', message: 'again' })).toMatch(/^\d+$/)
    expect(await a.send('keyed', { kind: 'followup', message: 'again' })).toMatch(/^\d+$/)
    expect(await a.pendingInput('keyed')).toHaveLength(3)
    expect((await rejection(a.send('nobody', { kind: 'followup', message: 'hi', key: 'k' }))).code).toBe('SESSION_NOT_FOUND')
    expect((await rejection(a.send('keyed', { kind: 'inject', message: 'hi', key: 'k' } as never))).code).toBe('INVALID_INPUT')
    expect((await rejection(a.send('keyed', { kind: 'followup', message: 'hi', key: 'k'.repeat(201) }))).code).toBe('INVALID_INPUT')
    await writer.close()
  })

  it('follow yields committed events in seq order, live, and ends when its signal aborts', async () => {
    const a = storeIn(freshSchema())
    const follower = storeIn(a.tables.schema)
    const session = new Session({ id: 'followed' })
    const writer = await a.create(session.header)
    for (const e of titles(session, 2)) writer.append(e)
    await writer.flush()
    const stop = new AbortController()
    const seen: number[] = []
    const following = (async () => {
      for await (const event of follower.follow('followed', { signal: stop.signal, pollMs: 5000 })) {
        seen.push(event.seq)
        if (seen.length === 5) stop.abort()
      }
    })()
    for (let i = 0; i < 100 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 10))
    for (const e of titles(session, 3)) writer.append(e)
    await writer.flush()
    // Woken by NOTIFY, long before the 5 s poll.
    await following
    expect(seen).toEqual([0, 1, 2, 3, 4])
    await writer.close()
  })
})

describe('PostgresStore: schema', () => {
  it('creates its tables with a version row; workers starting together migrate once', async () => {
    const schema = freshSchema()
    await Promise.all([storeIn(schema).ready(), storeIn(schema).ready(), storeIn(schema).ready()])
    const versions = await kit.admin.query(`SELECT version FROM "${schema}".schema_version`)
    expect(versions.rows).toEqual([{ version: POSTGRES_SCHEMA_VERSION }])
  })

  it('refuses a database written by a newer version (SESSION_VERSION)', async () => {
    const schema = freshSchema()
    await storeIn(schema).ready()
    await kit.admin.query(`UPDATE "${schema}".schema_version SET version = 99`)
    expect((await rejection(storeIn(schema).ready())).code).toBe('SESSION_VERSION')
  })

  it('deleting a session deletes its events (a trigger since version 3, not a foreign key)', async () => {
    const schema = freshSchema()
    const a = storeIn(schema)
    const session = new Session({ id: 'gone' })
    const writer = await a.create(session.header)
    for (const e of titles(session, 3)) writer.append(e)
    await writer.close()
    await a.createDetached(new Session({ id: 'kept' }).header, titles(new Session({ id: 'kept' }), 2))
    const keys = await kit.admin.query(`SELECT 1 FROM pg_constraint WHERE conrelid = '"${schema}".events'::regclass AND contype = 'f'`)
    expect(keys.rows).toEqual([])
    await kit.admin.query(`DELETE FROM "${schema}".sessions WHERE id = 'gone'`)
    const left = await kit.admin.query(`SELECT session_id, count(*)::int AS n FROM "${schema}".events GROUP BY session_id`)
    expect(left.rows).toEqual([{ session_id: 'kept', n: 2 }])
  })

  it('migrates a version 2 database: its events foreign key goes, logs stay readable and writable', async () => {
    const schema = freshSchema()
    const session = new Session({ id: 'old' })
    const old = storeIn(schema)
    const writer = await old.create(session.header)
    for (const e of titles(session, 2)) writer.append(e)
    await writer.close()
    await old.close()
    // What version 2 had: the foreign key with ON DELETE CASCADE, no trigger, no checkpoint blobs (version 5).
    await kit.admin.query(`DROP TABLE "${schema}".checkpoint_blobs`)
    await kit.admin.query(`DROP TRIGGER sessions_delete_events ON "${schema}".sessions; DROP FUNCTION "${schema}".delete_session_events()`)
    await kit.admin.query(`ALTER TABLE "${schema}".events ADD FOREIGN KEY (session_id) REFERENCES "${schema}".sessions (id) ON DELETE CASCADE`)
    await kit.admin.query(`UPDATE "${schema}".schema_version SET version = 2`)
    const store = storeIn(schema)
    const loaded = await store.open('old')
    expect(loaded.events.map((e) => e.seq)).toEqual([0, 1])
    for (const e of titles(session, 2)) loaded.writer.append(e)
    await loaded.writer.close()
    expect((await store.read('old')).events.length).toBe(4)
    expect((await kit.admin.query(`SELECT version FROM "${schema}".schema_version`)).rows).toEqual([{ version: POSTGRES_SCHEMA_VERSION }])
    const keys = await kit.admin.query(`SELECT 1 FROM pg_constraint WHERE conrelid = '"${schema}".events'::regclass AND contype = 'f'`)
    expect(keys.rows).toEqual([])
    // Migration 4 made the blob table again: a checkpoint round trip works on the migrated schema.
    const blob = Buffer.from('before\n')
    const key = createHash('sha256').update(blob).digest('hex')
    await store.checkpointBlobs.put(new Map([[key, blob]]))
    expect((await store.checkpointBlobs.get(key))?.equals(blob)).toBe(true)
    await kit.admin.query(`DELETE FROM "${schema}".sessions WHERE id = 'old'`)
    expect((await kit.admin.query(`SELECT count(*)::int AS n FROM "${schema}".events`)).rows).toEqual([{ n: 0 }])
  })

  it('packs chunk runs into one row each and flushes a batch in one statement', async () => {
    const schema = freshSchema()
    const a = storeIn(schema)
    const session = new Session({ id: 'packed' })
    const writer = await a.create(session.header)
    const events: SessionEvent[] = Array.from({ length: 10 }, (_, i) => ({
      type: 'assistant/chunk',
      seq: i,
      time: 1000 + i,
      data: { turn: 1, step: 1, chunk: { type: 'text-delta', index: 0, text: `c${i}` } },
    })) as unknown as SessionEvent[]
    for (const e of events) writer.append(e)
    await writer.close()
    const rows = await kit.admin.query(`SELECT seq, type FROM "${schema}".events WHERE session_id = 'packed'`)
    expect(rows.rows).toEqual([{ seq: 0, type: 'text-chunks' }])
    expect((await a.readEvents('packed', { after: 4 })).map((e) => e.seq)).toEqual([5, 6, 7, 8, 9])
  })
})
