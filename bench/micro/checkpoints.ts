/**
 * What file checkpoints cost a step of the loop: a turn whose one tool call is `write_file` (a 4 KiB file,
 * overwritten with new content each turn) with checkpoints on ÷ off, and a turn whose tool call is `bash`
 * (`sed -i` on one file) in a workspace of 10,000 files, on and off. Each turn is a full loop turn on a real
 * store (two model steps from the scripted adapter, the flush before the tool body, the turn-end flush). Not a
 * test; numbers depend on the disk and the machine's load.
 *
 *   npx tsx bench/micro/checkpoints.ts [--turns 40] [--rounds 6] [--files 10000] [--store jsonl|sqlite] [--sandbox off|bwrap] [--model-ms 0] [--only write|bash]
 *
 * The write_file figure alternates `--rounds` rounds of `--turns` turns off, then on, so drift in the machine's
 * load falls on both sides; the ratio is of the medians over all rounds.
 *
 * The first bash turn of a process with checkpoints on builds the workspace baseline (reads and stores every
 * file); it is reported on its own. Later bash turns are medians of `--turns` (at most 15).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createHarness } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { SessionStore } from '../../src/store/types.js'
import { builtinTools } from '../../src/tools/builtin/index.js'

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '6' },
    only: { type: 'string' },
    files: { type: 'string', default: '10000' },
    store: { type: 'string', default: 'jsonl' },
    sandbox: { type: 'string', default: 'off' },
    'model-ms': { type: 'string', default: '0' },
  },
})
const turns = Number(values.turns)
const fileCount = Number(values.files)
const sandbox = values.sandbox === 'bwrap' ? 'bwrap' : 'off'
// How long the scripted model takes per step: 0 is the worst case for checkpoints (nothing hides their disk
// writes); a real model's seconds between steps hide a background write entirely.
const modelMs = Number(values['model-ms'])

function storeIn(dir: string): SessionStore {
  return values.store === 'sqlite' ? new SqliteStore({ path: join(dir, 'sessions.db') }) : new JsonlStore({ dir: join(dir, 'sessions') })
}

type ToolCalls = { name: string; arguments: Record<string, unknown> }[]

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number

/** Per-turn wall times (ms) of `count` turns, each running `call` once. */
async function timeTurns(root: string, checkpoints: boolean, call: (turn: number) => ToolCalls, count: number): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'll-bench-ckpt-store-'))
  const script = (_request: unknown, index: number): ScriptStep => (index % 2 === 0 ? { toolCalls: call(index / 2), delayMs: modelMs } : { text: 'done', delayMs: modelMs })
  const harness = createHarness({
    store: storeIn(dir),
    adapters: [scriptedAdapter({ script, models: { m: { contextWindow: 1_000_000 } } })],
    tools: builtinTools({ root, shell: true, sandbox, checkpoints }),
  })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm', cwd: root })
  const times: number[] = []
  for (let turn = 0; turn < count; turn++) {
    const started = performance.now()
    agent.followup(`turn ${turn}`)
    await agent.whenIdle()
    times.push(performance.now() - started)
  }
  await harness.close()
  rmSync(dir, { recursive: true, force: true })
  return times
}

function workspace(files: number): string {
  const root = mkdtempSync(join(tmpdir(), 'll-bench-ckpt-ws-'))
  for (let i = 0; i < files; i++) {
    const folder = join(root, `d${i % 100}`)
    if (i < 100) mkdirSync(folder)
    writeFileSync(join(folder, `f${i}.txt`), `file ${i}\n${'x'.repeat(200)}\n`)
  }
  return root
}

async function writeFileRatio(): Promise<void> {
  const root = workspace(20)
  const call = (turn: number): ToolCalls => [{ name: 'write_file', arguments: { path: 'notes.txt', content: `turn ${turn}\n${'y'.repeat(4096)}` } }]
  // Alternate off/on rounds so drift in the machine's load falls on both sides.
  const off: number[] = []
  const on: number[] = []
  for (let round = 0; round < Number(values.rounds); round++) {
    off.push(...(await timeTurns(root, false, call, turns)).slice(1))
    on.push(...(await timeTurns(root, true, call, turns)).slice(1))
  }
  const ratio = median(on) / median(off)
  console.log(`write_file turn (${values.store}, model ${modelMs} ms per step): off ${median(off).toFixed(2)} ms, on ${median(on).toFixed(2)} ms, on ÷ off ${ratio.toFixed(3)}`)
  rmSync(root, { recursive: true, force: true })
}

async function bashFigures(): Promise<void> {
  const root = workspace(fileCount)
  const call = (turn: number): ToolCalls => [{ name: 'bash', arguments: { command: `sed -i 's/^file .*/file edited ${turn}/' d1/f1.txt` } }]
  const count = Math.min(turns, 15)
  const off = await timeTurns(root, false, call, count)
  const on = await timeTurns(root, true, call, count)
  console.log(
    `bash turn, ${fileCount} files (${values.store}, sandbox ${sandbox}): off ${median(off.slice(1)).toFixed(1)} ms; ` +
      `on: first turn (baseline) ${(on[0] as number).toFixed(1)} ms, later turns ${median(on.slice(1)).toFixed(1)} ms`,
  )
  rmSync(root, { recursive: true, force: true })
}

if (values.only !== 'bash') await writeFileRatio()
if (values.only !== 'write') await bashFigures()
