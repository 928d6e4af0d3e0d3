/**
 * SQLite per step against its floor (issue 30, target 3): the loop writing one turn of N steps through
 * `SqliteStore`, beside the same rows inserted straight through better-sqlite3 with the same durability (WAL,
 * `synchronous = FULL`, one `BEGIN IMMEDIATE` transaction per flush, the flushes where the loop made them).
 * Rows of one fresh process, interleaved per round, medians; the ratio is taken per round and its median shown.
 *
 *   npx tsx bench/micro/sqlite-floor.ts [--steps 10,100,1000] [--runs 7] [--json]
 *
 * Rows:
 * - `sqlite`: ledgerloop's loop on `SqliteStore` (the scripted model streams 20 text deltas and one tool call per
 *   step, N steps in one turn, as store-throughput.ts and the side-by-side bench measure it);
 * - `floor`: the rows that run stored (captured as each batch reached the store, packed and serialised before
 *   the clock starts) inserted by a prepared statement into a fresh database of the same schema, one
 *   transaction per captured batch; nothing else (no loop, no lease check, no listing columns);
 * - `of it in commitBatch`: the part of `sqlite` spent inside the store's batch commit (its transaction, fsync
 *   included), timed around each call;
 * - `floor + loop`: the floor plus the same loop on the memory store (the loop's own cost, measured here too),
 *   the least a durable SQLite loop could cost;
 * - `memory`, `jsonl`: the loop on `MemoryStore` and on `JsonlStore` (fsync before tool bodies and at turn end).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import Database from 'better-sqlite3'
import { createHarness, defineTool, MemoryStore, scriptChunks, type GenerateOptions, type LlmAdapter, type SessionEvent, type SessionStore, type StreamChunk } from '../../src/index.js'
import { firstSeqOf, packChunkRuns } from '../../src/store/chunk-runs.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import { median, spread as range } from './fixtures-shared.js'

const { values } = parseArgs({ options: { steps: { type: 'string', default: '10,100,1000' }, runs: { type: 'string', default: '7' }, json: { type: 'boolean', default: false } } })
/** The line the full run reads this bench's rows from (bench/src/micro-targets.ts). */
const RESULT_PREFIX = '@@bench-result '
const resultRows: { target: string; at: string; measured: number; spread: string; limit: number; notes: string }[] = []
const stepSizes = values.steps.split(',').map(Number)
const runs = Number(values.runs)

const K = 20
const toolStep = scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `), toolCalls: [{ id: 'c', name: 'noop', arguments: { n: 1 } }] })
const lastStep = scriptChunks({ text: Array.from({ length: K }, (_, i) => `tok${i} `) })

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

/** Every batch `SqliteStore` committed while capturing is on, in order (the events as handed to the store). */
let captured: SessionEvent[][] | undefined
/** Wall time spent inside `commitBatch` while capturing (the store's whole transaction, fsync included). */
let commitMs = 0
const commitBatch = SqliteStore.prototype.commitBatch
SqliteStore.prototype.commitBatch = function (this: SqliteStore, ...args: Parameters<typeof commitBatch>): void {
  if (captured === undefined) return commitBatch.apply(this, args)
  captured.push([...args[2]])
  const t0 = performance.now()
  try {
    commitBatch.apply(this, args)
  } finally {
    commitMs += performance.now() - t0
  }
}

/** One turn of `steps` steps on `store`: ms per step (the close, which flushes nothing new, is not timed). */
async function loopOnce(store: SessionStore, steps: number): Promise<number> {
  const noop = defineTool({ name: 'noop', description: 'does nothing', parameters: { type: 'object' }, execute: () => 'ok' })
  const model = loopModel(steps)
  const harness = createHarness({ store, adapters: [model], tools: [noop] })
  const agent = await harness.createAgent({ provider: 'bench', model: 'b' })
  const t0 = performance.now()
  agent.followup('go')
  await agent.whenIdle()
  const t1 = performance.now()
  await harness.close()
  if (model.calls !== steps) throw new Error(`ran ${model.calls} steps, expected ${steps}`)
  return (t1 - t0) / steps
}

/** The captured batches as the rows the store writes: [first seq, line] per stored record, per transaction. */
function rowsOf(batches: readonly SessionEvent[][]): [number, string][][] {
  return batches.map((batch) => packChunkRuns(batch).map((record) => [firstSeqOf(record), JSON.stringify(record)]))
}

/** The floor: `transactions` inserted into a fresh database with the store's schema and durability. ms per step. */
function floorOnce(path: string, transactions: readonly [number, string][][], steps: number): number {
  const db = new Database(path)
  db.pragma('journal_mode = wal')
  db.pragma('synchronous = FULL')
  db.exec(`
    CREATE TABLE sessions (id TEXT PRIMARY KEY) STRICT;
    CREATE TABLE events (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL, line TEXT NOT NULL, PRIMARY KEY (session_id, seq)) STRICT, WITHOUT ROWID;
    INSERT INTO sessions (id) VALUES ('s');
  `)
  const insert = db.prepare('INSERT INTO events (session_id, seq, line) VALUES (?, ?, ?)')
  const write = db.transaction((rows: readonly [number, string][]) => {
    for (const [seq, line] of rows) insert.run('s', seq, line)
  })
  const t0 = performance.now()
  for (const rows of transactions) write.immediate(rows)
  const t1 = performance.now()
  db.close()
  return (t1 - t0) / steps
}

const root = mkdtempSync(join(tmpdir(), 'll-sqlite-floor-'))
try {
  console.log(`SQLite per step against the floor of the same rows (WAL, synchronous=FULL, one transaction per flush); ${runs} rounds after a warm-up`)
  for (const steps of stepSizes) {
    const rows: Record<string, number[]> = { sqlite: [], '  of it in commitBatch': [], floor: [], 'floor + loop': [], memory: [], jsonl: [], 'sqlite ÷ floor': [], 'sqlite ÷ (floor + loop)': [] }
    let transactions = 0
    for (let round = -1; round < runs; round++) {
      const dir = join(root, `${steps}-${round + 1}`)
      captured = []
      commitMs = 0
      const sqlite = await loopOnce(new SqliteStore({ path: join(dir, 'sessions.db') }), steps)
      const batches = captured
      captured = undefined
      const memory = await loopOnce(new MemoryStore(), steps)
      const floor = floorOnce(join(dir, 'floor.db'), rowsOf(batches), steps)
      const jsonl = await loopOnce(new JsonlStore({ dir: join(dir, 'jsonl') }), steps)
      rmSync(dir, { recursive: true, force: true })
      if (round < 0) continue
      transactions = batches.length
      rows.sqlite?.push(sqlite)
      rows['  of it in commitBatch']?.push(commitMs / steps)
      rows.floor?.push(floor)
      rows['floor + loop']?.push(floor + memory)
      rows.memory?.push(memory)
      rows.jsonl?.push(jsonl)
      rows['sqlite ÷ floor']?.push(sqlite / floor)
      rows['sqlite ÷ (floor + loop)']?.push(sqlite / (floor + memory))
    }
    console.log(`N=${steps} (${transactions} transactions per turn)`)
    for (const [name, xs] of Object.entries(rows)) {
      const ratio = name.includes('÷')
      console.log(`  ${name.padEnd(24)} ${median(xs).toFixed(ratio ? 2 : 3).padStart(7)}${ratio ? '×' : ' ms/step'}  (${range(xs, ratio ? 2 : 3)}, ${xs.length})`)
    }
    const m = (name: string): number => median(rows[name] ?? [])
    resultRows.push({
      target: 'SQLite per step ≤ 1.5× the same rows inserted through better-sqlite3 directly (same synchronous setting, a transaction per flush)',
      at: `N=${steps} steps in one turn, ${transactions} transactions, median of ${runs}`,
      measured: m('sqlite ÷ floor'),
      spread: `${range(rows['sqlite ÷ floor'] ?? [], 2)}×`,
      limit: 1.5,
      notes: `${m('sqlite').toFixed(3)} vs ${m('floor').toFixed(3)} ms/step; of it in the store's transaction ${m('  of it in commitBatch').toFixed(3)}; ÷ (floor + the loop on MemoryStore) ${m('sqlite ÷ (floor + loop)').toFixed(2)}×; JSONL ${m('jsonl').toFixed(3)} ms/step`,
    })
  }
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: true, rows: resultRows }))
} catch (error) {
  if (!values.json) throw error
  console.log(RESULT_PREFIX + JSON.stringify({ ok: false, error: (error as Error).message }))
} finally {
  rmSync(root, { recursive: true, force: true })
}
