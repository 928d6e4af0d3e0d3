import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scriptedAdapter, Session } from '../../src/index.js'
import { PostgresStore, runWorker, turnScript, type WorkerEvent } from '../../src/postgres.js'
import { SlotBook } from '../../src/worker/slots.js'
import { createScratchDatabase, type ScratchDatabase } from '../store/postgres-scratch.js'

function holder(evicted: string[], id: string) {
  return { id, holder: { evict: () => void evicted.push(id) } }
}

describe('SlotBook', () => {
  it('an idle session frees its slot at once, and the longest idle one is evicted when a claim fills the slots', () => {
    const evicted: string[] = []
    let wakes = 0
    const book = new SlotBook(2, () => wakes++)
    expect(book.admit([holder(evicted, 'a'), holder(evicted, 'b')])).toBe(2)
    expect(book.free).toBe(0)
    book.idle('a')
    book.idle('b')
    expect(wakes).toBe(2)
    expect(book.free).toBe(2)
    // Two idle, one claimed: only one must go (held never exceeds concurrency), the one idle the longest.
    expect(book.admit([holder(evicted, 'c')])).toBe(1)
    expect(evicted).toEqual(['a'])
    expect(book.busy('a')).toBe(false)
    expect(book.busy('b')).toBe(true)
    expect(book.free).toBe(0)
  })

  it('claims beyond the free slots are refused (an idle session took its slot back while the claim was in flight)', () => {
    const evicted: string[] = []
    const book = new SlotBook(2, () => undefined)
    book.admit([holder(evicted, 'a'), holder(evicted, 'b')])
    book.idle('a')
    expect(book.free).toBe(1)
    expect(book.busy('a')).toBe(true)
    expect(book.admit([holder(evicted, 'c')])).toBe(0)
    expect(evicted).toEqual([])
  })
})

let db: ScratchDatabase
beforeAll(async () => {
  db = await createScratchDatabase()
})
afterAll(async () => {
  await db.drop()
})

const completed = (events: readonly { type: string }[]): number => events.filter((e) => e.type === 'turn/end').length

describe('runWorker slots', () => {
  it('a session waiting out its idle grace gives its slot to a session with queued input, and is claimed again for new input', async () => {
    const sender = new PostgresStore({ connectionString: db.url, schema: 'slots1' })
    const store = new PostgresStore({ connectionString: db.url, schema: 'slots1', leaseMs: 5000 })
    for (const id of ['first', 'second']) await sender.createDetached(new Session({ id }).header)
    await sender.send('first', { kind: 'followup', message: 'one' })
    const events: WorkerEvent[] = []
    const stop = new AbortController()
    // One slot and an idle grace far beyond the test's timeout: 'second' is served only if 'first' gives way.
    const worker = runWorker({
      store,
      adapters: [scriptedAdapter({ script: turnScript([{ text: 'ok' }]) })],
      provider: 'scripted',
      model: 'm',
      concurrency: 1,
      idleGraceMs: 600_000,
      pollMs: 100,
      signal: stop.signal,
      onEvent: (e) => events.push(e),
    })
    const until = async (check: () => Promise<boolean>): Promise<void> => {
      while (!(await check())) await new Promise((r) => setTimeout(r, 50))
    }
    await until(async () => completed((await sender.read('first')).events) === 1)
    await sender.send('second', { kind: 'followup', message: 'two' })
    await until(async () => completed((await sender.read('second')).events) === 1)
    // 'first' was released (evicted) to make room; input for it now makes it claimable again, and 'second' gives way.
    await sender.send('first', { kind: 'followup', message: 'three' })
    await until(async () => completed((await sender.read('first')).events) === 2)
    stop.abort()
    const summary = await worker
    expect(summary.errors).toBe(0)
    expect(events.filter((e) => e.type === 'claimed').map((e) => (e as { sessionId: string }).sessionId)).toEqual(['first', 'second', 'first'])
    expect(events.filter((e) => e.type === 'released').slice(0, 2)).toEqual([
      { type: 'released', sessionId: 'first', status: 'idle' },
      { type: 'released', sessionId: 'second', status: 'idle' },
    ])
    expect(await sender.pendingInput('first')).toEqual([])
    await store.close()
    await sender.close()
  }, 30_000)
})
