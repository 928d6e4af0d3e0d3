/**
 * Rough append throughput of the durable stores against the physical floor: a raw `fs.writeSync` + `fsync`
 * of the same bytes with the same flush policy. Not a test; numbers depend on the disk.
 *
 *   npx tsx bench/micro/store-throughput.ts [--events 20000] [--batch 25] [--load 100000,1000000] [--steps 10,100,1000] [--runs 7]
 *
 * `--steps` adds the loop's wall time per step on each JSONL write policy (`fsync: 'tool'`, the default, and
 * `fsync: 'interval'`) beside the memory store, as the side-by-side bench measures it (a scripted model
 * streaming 20 text chunks and one tool call per step, N steps in one turn), compared with the original
 * harness's JSONL store from bench/RESULTS.md. `--steps ''` skips it.
 *
 * The event mix imitates a streaming agent: each "step" of `batch` events is mostly text chunks of one block,
 * framed by a few boundary events; a flush follows each step (as the loop flushes at tool bodies and turn/end).
 */
import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createHarness, defineTool, MemoryStore, scriptChunks, Session, type GenerateOptions, type JsonValue, type LlmAdapter, type SessionEvent, type SessionStore, type StreamChunk } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { encodeRecordLines } from '../../src/store/session-file.js'
import { SqliteStore } from '../../src/store/sqlite.js'

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '25' },
    load: { type: 'string', default: '100000,1000000' },
    steps: { type: 'string', default: '10,100,1000' },
    runs: { type: 'string', default: '7' },
  },
})
const stepSizes = values.steps === '' ? [] : values.steps.split(',').map(Number)
const loopRuns = Number(values.runs)

// The original harness's JSONL store per step (ms, median), from bench/RESULTS.md (its batched default).
const ORIGINAL_JSONL_MS: Readonly<Record<number, number>> = { 10: 2.59, 100: 1.45, 1000: 5.16 }
const K = 20
const toolStep = scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `), toolCalls: [{ id: 'c', name: 'noop', arguments: { n: 1 } }] })
const lastStep = scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `) })

const total = Number(values.events)
const batch = Number(values.batch)
const loadSizes = values.load === '' ? [] : values.load.split(',').map(Number)

function workload(total: number): SessionEvent[] {
  const events: SessionEvent[] = []
  const push = (type: string, data: JsonValue): void => {
    events.push(Object.freeze({ type, seq: events.length, time: 1_700_000_000_000 + events.length, data }) as SessionEvent)
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

async function storeRun(store: SessionStore, events: readonly SessionEvent[], includeClose = false): Promise<number> {
  const writer = await store.create(new Session({ id: 'bench' }).header)
  const started = performance.now()
  for (let i = 0; i < events.length; i++) {
    writer.append(events[i] as SessionEvent)
    if ((i + 1) % batch === 0) await writer.flush()
  }
  await writer.flush()
  if (includeClose) await writer.close() // interval mode: the data is on disk only after close
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
    rows.push([`JsonlStore fsync=interval packChunks=${pack} (incl. close)`, await storeRun(new JsonlStore({ dir: at(`jsonl-i-${pack}`), packChunks: pack, fsync: 'interval' }), events, true)])
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
  await measureLoopSteps()
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

function loopModel(steps: number): LlmAdapter & { calls: number } {
  const adapter = {
    provider: 'bench',
    calls: 0,
    async *stream(_request: GenerateOptions): AsyncGenerator<StreamChunk> {
      const n = ++adapter.calls
      for (const c of n < steps ? toolStep : lastStep) {
        if (c.type === 'tool-call-delta') yield { ...c, id: `call_${n}` }
        else if (c.type === 'block-end' && c.block.type === 'tool-call') yield { ...c, block: { ...c.block, id: `call_${n}` } }
        else yield c
      }
    },
  }
  return adapter
}

/** One turn of `steps` steps on `store`: ms per step of the turn, and ms of the close after it. */
async function loopOnce(store: SessionStore, steps: number): Promise<{ perStep: number; closeMs: number }> {
  const noop = defineTool({ name: 'noop', description: 'does nothing', parameters: { type: 'object' }, execute: () => 'ok' })
  const model = loopModel(steps)
  const harness = createHarness({ store, adapters: [model], tools: [noop] })
  const agent = await harness.createAgent({ provider: 'bench', model: 'b' })
  const t0 = performance.now()
  agent.followup('go')
  await agent.whenIdle()
  const t1 = performance.now()
  await harness.close()
  const t2 = performance.now()
  if (model.calls !== steps) throw new Error(`ran ${model.calls} steps, expected ${steps}: ${JSON.stringify(agent.session.events.filter((e) => e.type === 'turn/end' || e.type === 'step/end').map((e) => e.data))}`)
  return { perStep: (t1 - t0) / steps, closeMs: t2 - t1 }
}

/**
 * Wall time per step of the loop on each write policy, median of `--runs` after a warm-up, with the ratio to
 * the original harness's JSONL store (how many times faster ledgerloop is).
 */
async function measureLoopSteps(): Promise<void> {
  if (stepSizes.length === 0) return
  const dirOf = (name: string): string => join(root, `loop-${name}-${Math.random().toString(36).slice(2)}`)
  const policies: [string, () => SessionStore][] = [
    ['memory', () => new MemoryStore()],
    ["JSONL fsync: 'tool' (default)", () => new JsonlStore({ dir: dirOf('tool') })],
    ["JSONL fsync: 'interval' (200 ms)", () => new JsonlStore({ dir: dirOf('interval'), fsync: 'interval' })],
  ]
  for (let i = 0; i < 10; i++) for (const [, make] of policies) await loopOnce(make(), 100) // warm-up
  // What the disk costs right now: one write + fsync of a step's bytes, per step (the default mode's floor).
  const floorPath = join(root, 'loop-floor')
  const fd = openSync(floorPath, 'w', 0o600)
  const stepBytes = 'x'.repeat(2500) + '\n'
  const floorSamples: number[] = []
  for (let r = 0; r < loopRuns; r++) {
    const t0 = performance.now()
    for (let i = 0; i < 100; i++) {
      writeSync(fd, stepBytes)
      fsyncSync(fd)
    }
    floorSamples.push((performance.now() - t0) / 100)
  }
  closeSync(fd)
  const floor = floorSamples.sort((a, b) => a - b)[Math.floor(floorSamples.length / 2)] as number
  console.log(`\nfloor now: one write + fsync of a step's bytes = ${floor.toFixed(3)} ms (the disk's state during this run)`)
  console.log(`loop wall time per step (${K} chunks + 1 tool call per step, one turn; median of ${loopRuns}); vs the original harness's JSONL store:`)
  for (const steps of stepSizes) {
    for (const [name, make] of policies) {
      const perStep: number[] = []
      const closes: number[] = []
      for (let r = 0; r < loopRuns; r++) {
        const { perStep: ms, closeMs } = await loopOnce(make(), steps)
        perStep.push(ms)
        closes.push(closeMs)
      }
      const med = (xs: number[]): number => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
      const original = ORIGINAL_JSONL_MS[steps]
      const versus = original === undefined ? '' : `  ${(original / med(perStep)).toFixed(1)}× faster than its ${original} ms`
      console.log(`  N=${String(steps).padStart(4)}  ${name.padEnd(34)} ${med(perStep).toFixed(3).padStart(7)} ms/step  (close ${med(closes).toFixed(1)} ms)${versus}`)
    }
  }
}
