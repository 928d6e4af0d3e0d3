import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { SessionEvent } from '../../src/index.js'
import { decodeRecord, packChunkRuns } from '../../src/store/chunk-runs.js'
import { GroupCommit } from '../../src/store/group-commit.js'
import { encodeRecordLines } from '../../src/store/session-file.js'
import { arbitraryStoredLog } from './chunk-arbitraries.js'

const event = (seq: number): SessionEvent => ({ type: 'session/title', seq, time: seq, data: { title: String(seq) } })

/** A sink that records batches and lets the test decide when each write finishes. */
function manualSink() {
  const batches: number[][] = []
  const pending: { resolve: () => void; reject: (e: unknown) => void }[] = []
  const sink = (batch: readonly SessionEvent[]): Promise<void> => {
    batches.push(batch.map((e) => e.seq))
    return new Promise((resolve, reject) => pending.push({ resolve, reject }))
  }
  return { sink, batches, pending }
}

const tick = () => new Promise((r) => setTimeout(r, 0))

describe('group commit', () => {
  it('append only buffers; a flush hands everything buffered to ONE sink call and resolves after it', async () => {
    const { sink, batches, pending } = manualSink()
    const commit = new GroupCommit(sink, 50)
    for (let i = 0; i < 100; i++) commit.append(event(i))
    expect(batches).toEqual([])
    let done = false
    const flushed = commit.flush().then(() => (done = true))
    await tick()
    expect(batches).toHaveLength(1)
    expect(batches[0]).toHaveLength(100)
    expect(done).toBe(false) // not before the write (and fsync) finished
    pending[0]?.resolve()
    await flushed
    expect(done).toBe(true)
    await commit.flush() // nothing buffered: resolves at once, no write
    expect(batches).toHaveLength(1)
  })

  it('flushes requested while a write is in flight coalesce into the next write', async () => {
    const { sink, batches, pending } = manualSink()
    const commit = new GroupCommit(sink, 50)
    commit.append(event(0))
    const first = commit.flush()
    await tick()
    commit.append(event(1))
    const a = commit.flush()
    commit.append(event(2))
    const b = commit.flush()
    const c = commit.flush()
    await tick()
    expect(batches).toEqual([[0]]) // one batch in flight at a time
    pending[0]?.resolve()
    await first
    await tick()
    expect(batches).toEqual([[0], [1, 2]])
    pending[1]?.resolve()
    await Promise.all([a, b, c])
  })

  it('a flush with nothing buffered waits for the batch in flight', async () => {
    const { sink, pending } = manualSink()
    const commit = new GroupCommit(sink, 50)
    commit.append(event(0))
    void commit.flush()
    await tick()
    let done = false
    const waiting = commit.flush().then(() => (done = true))
    await tick()
    expect(done).toBe(false)
    pending[0]?.resolve()
    await waiting
  })

  it('the timer flushes within the delay after the first buffered append', async () => {
    const written: number[][] = []
    const commit = new GroupCommit(async (batch) => void written.push(batch.map((e) => e.seq)), 10)
    commit.append(event(0))
    commit.append(event(1))
    await new Promise((r) => setTimeout(r, 60))
    expect(written).toEqual([[0, 1]])
  })

  it('a failed write rejects its flushes, keeps the batch in order, and the next flush retries it', async () => {
    const { sink, batches, pending } = manualSink()
    const commit = new GroupCommit(sink, 50)
    commit.append(event(0))
    const failed = commit.flush()
    await tick()
    commit.append(event(1))
    pending[0]?.reject(new Error('disk full'))
    await expect(failed).rejects.toThrow('disk full')
    const retry = commit.flush()
    await tick()
    expect(batches).toEqual([[0], [0, 1]])
    pending[1]?.resolve()
    await retry
  })

  it('a failed timer write is remembered (failed) until a write succeeds: interval mode then makes flush() wait', async () => {
    const { sink, batches, pending } = manualSink()
    const commit = new GroupCommit(sink, 1000, 10_000)
    commit.append(event(0))
    expect(commit.failed).toBe(false)
    void commit.flush().catch(() => {})
    await tick()
    pending[0]?.reject(new Error('disk full'))
    await tick()
    expect(commit.failed).toBe(true)
    const retry = commit.flush()
    await tick()
    expect(batches).toEqual([[0], [0]])
    pending[1]?.resolve()
    await retry
    expect(commit.failed).toBe(false)
    expect(() => new GroupCommit(sink, 1000)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG' }))
  })
})

describe('chunk-run packing', () => {
  const chunk = (seq: number, text: string, index = 0): SessionEvent => ({
    type: 'assistant/chunk',
    seq,
    time: 1000 + seq * 3,
    data: { turn: 1, step: 1, chunk: { type: 'text-delta', index, text } },
  })

  it('packs ≥3 consecutive deltas of one block into one row, and leaves shorter runs alone', () => {
    const records = packChunkRuns([chunk(0, 'a'), chunk(1, 'b'), chunk(2, 'c'), chunk(3, 'x', 1), chunk(4, 'y', 1)])
    expect(records).toEqual([
      { type: 'text-chunks', seq0: 0, time0: 1000, data: { turn: 1, step: 1, index: 0, dt: [3, 3], texts: ['a', 'b', 'c'] } },
      chunk(3, 'x', 1),
      chunk(4, 'y', 1),
    ])
  })

  it('JSONL lines (and SQLite rows, which hold the same records) decode to byte-identical events (property)', () => {
    fc.assert(
      fc.property(arbitraryStoredLog(), (events) => {
        const lines = encodeRecordLines(events, true).split('\n').filter((l) => l !== '')
        const decoded = lines.flatMap((l) => decodeRecord(JSON.parse(l)))
        expect(decoded.map((e) => JSON.stringify(e))).toEqual(events.map((e) => JSON.stringify(e)))
      }),
      { numRuns: 300, seed: 7 },
    )
  })

  it('the property exercises packing: runs are found in generated logs', () => {
    const sample = fc.sample(arbitraryStoredLog(), { numRuns: 100, seed: 7 })
    const packed = sample.flatMap((events) => packChunkRuns(events)).filter((r) => 'seq0' in r)
    expect(packed.length).toBeGreaterThan(20)
  })
})
