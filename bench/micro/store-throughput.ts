/**
 * Rough append throughput of the durable stores against the physical floor: a raw `fs.writeSync` + `fsync`
 * of the same bytes with the same flush policy. Not a test; numbers depend on the disk.
 *
 *   npx tsx bench/micro/store-throughput.ts [--events 20000] [--batch 25]
 *
 * The event mix imitates a streaming agent: each "step" of `batch` events is mostly text chunks of one block,
 * framed by a few boundary events; a flush follows each step (as the loop flushes at tool bodies and turn/end).
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { Session, type SessionEvent, type SessionStore } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl-store.js'
import { encodeRecordLines } from '../../src/store/session-file.js'
import { SqliteStore } from '../../src/store/sqlite.js'

const { values } = parseArgs({
  options: { events: { type: 'string', default: '20000' }, batch: { type: 'string', default: '25' }, load: { type: 'string', default: '100000,1000000' } },
})
const total = Number(values.events)
const batch = Number(values.batch)
const loadSizes = values.load === '' ? [] : values.load.split(',').map(Number)

function workload(total: number): SessionEvent[] {
  const events: SessionEvent[] = []
  const push = (type: string, data: SessionEvent['data']): void => {
    events.push(Object.freeze({ type, seq: events.length, time: 1_700_000_000_000 + events.length, data }))
  }
  for (let step = 1; events.length < total; step++) {
    push('step/start', { turn: 1, step })
    push('request/context', { provider: 'p', model: 'm' })
    while (events.length % batch !== batch - 1 && events.length < total - 1) {
      push('assistant/chunk', { turn: 1, step, chunk: { type: 'text-delta', index: 0, text: 'some streamed words ' } })
    }
    push('step/end', { turn: 1, step })
  }
  return events.slice(0, total)
}

async function storeRun(store: SessionStore, events: readonly SessionEvent[]): Promise<number> {
  const writer = await store.create(new Session({ id: 'bench' }).header)
  const started = performance.now()
  for (let i = 0; i < events.length; i++) {
    writer.append(events[i] as SessionEvent)
    if ((i + 1) % batch === 0) await writer.flush()
  }
  await writer.flush()
  const elapsed = performance.now() - started
  await writer.close()
  return elapsed
}

function rawRun(path: string, events: readonly SessionEvent[], pack: boolean): number {
  const chunks: string[] = []
  for (let i = 0; i < events.length; i += batch) chunks.push(encodeRecordLines(events.slice(i, i + batch), pack))
  const fd = openSync(path, 'w', 0o600)
  const started = performance.now()
  for (const text of chunks) {
    writeSync(fd, text)
    fsyncSync(fd)
  }
  const elapsed = performance.now() - started
  closeSync(fd)
  return elapsed
}

const events = workload(total)
const root = mkdtempSync(join(tmpdir(), 'll-throughput-'))
const rate = (ms: number): string => `${Math.round(events.length / (ms / 1000)).toLocaleString('en')} events/s`
async function measureOnce(round: number): Promise<[string, number][]> {
  const rows: [string, number][] = []
  const at = (name: string): string => join(root, `${name}-${round}`)
  rows.push(['raw writeSync+fsync (packed bytes, encoded beforehand)', rawRun(at('raw-packed'), events, true)])
  rows.push(['raw writeSync+fsync (unpacked bytes, encoded beforehand)', rawRun(at('raw'), events, false)])
  for (const pack of [true, false]) {
    rows.push([`JsonlStore packChunks=${pack}`, await storeRun(new JsonlStore({ dir: at(`jsonl-${pack}`), packChunks: pack }), events)])
    const sqlite = new SqliteStore({ path: at(`sqlite-${pack}.db`), packChunks: pack })
    rows.push([`SqliteStore packChunks=${pack}`, await storeRun(sqlite, events)])
    const loadStart = performance.now()
    await sqlite.read('bench')
    rows.push([`  SqliteStore read() packChunks=${pack}`, performance.now() - loadStart])
    await sqlite.close()
    const jsonlLoad = performance.now()
    await new JsonlStore({ dir: at(`jsonl-${pack}`) }).read('bench')
    rows.push([`  JsonlStore read() packChunks=${pack}`, performance.now() - jsonlLoad])
  }
  return rows
}

try {
  await measureOnce(0) // warm-up: JIT and page cache, not reported
  const rounds = [await measureOnce(1), await measureOnce(2), await measureOnce(3)]
  const median = (i: number): number => (rounds.map((r) => (r[i] as [string, number])[1]).sort((a, b) => a - b)[1] as number)
  const floor = median(0)
  console.log(`${events.length} events, a flush every ${batch} (median of 3 after a warm-up round):`)
  rounds[0]?.forEach(([name], i) => {
    const ms = median(i)
    console.log(`${name.padEnd(58)} ${ms.toFixed(0).padStart(6)} ms  ${rate(ms).padStart(18)}  ×${(ms / floor).toFixed(2)} of the floor`)
  })
  await measureLoads()
} finally {
  rmSync(root, { recursive: true, force: true })
}

/**
 * Load time of big sessions: the store's read (parse, unpack, repair check) and the full resume path
 * (adopting every event into a Session: validation, surface and header folds), for JSONL and SQLite.
 */
async function measureLoads(): Promise<void> {
  for (const size of loadSizes) {
    const big = workload(size)
    console.log(`\nload of a ${size.toLocaleString('en')}-event session (median of 3):`)
    for (const kind of ['jsonl', 'sqlite'] as const) {
      const make = (): SessionStore => (kind === 'jsonl' ? new JsonlStore({ dir: join(root, `load-${size}`) }) : new SqliteStore({ path: join(root, `load-${size}.db`) }))
      const writerStore = make()
      const writer = await writerStore.create(new Session({ id: 'big' }).header)
      for (let i = 0; i < big.length; i++) {
        writer.append(big[i] as SessionEvent)
        if ((i + 1) % 10_000 === 0) await writer.flush()
      }
      await writer.close()
      await writerStore.close()
      const reads: number[] = []
      const resumes: number[] = []
      for (let round = 0; round < 3; round++) {
        const store = make()
        const t0 = performance.now()
        const stored = await store.read('big')
        const t1 = performance.now()
        // The compact log (packed runs stay packed), as resumeAgent adopts it.
        const session = new Session({ id: 'big', header: stored.header, ...(stored.log !== undefined ? { log: stored.log } : { seed: stored.events }) })
        const t2 = performance.now()
        if (session.length !== size) throw new Error(`loaded ${session.length} of ${size} events`)
        reads.push(t1 - t0)
        resumes.push(t2 - t0)
        await store.close()
      }
      const med = (xs: number[]): number => xs.sort((a, b) => a - b)[1] as number
      console.log(`  ${kind.padEnd(6)} read ${med(reads).toFixed(0).padStart(6)} ms   read + adopt into a Session ${med(resumes).toFixed(0).padStart(6)} ms   (${Math.round(size / (med(resumes) / 1000)).toLocaleString('en')} events/s)`)
    }
  }
}
