/**
 * What file checkpoints cost a step of the loop (issue 29): a turn whose one tool call is `write_file` (a 4 KiB
 * file, overwritten with new content each turn) with checkpoints on ÷ off, and a turn whose tool call is `bash`
 * (`sed -i` on one file) in a workspace of 10,000 files, on ÷ off. Each turn is a full loop turn on a real store
 * (two model steps from the scripted adapter, the flush before the tool body, the turn-end flush). Not a test;
 * numbers depend on the disk and the machine's load.
 *
 *   npx tsx bench/micro/checkpoints.ts [--rounds 15] [--block 8] [--files 10000] [--store jsonl,sqlite]
 *     [--sandbox off|bwrap] [--model-ms 0] [--only write|bash] [--json]
 *
 * Pairing: the "on" and "off" harnesses (each with its own store and its own workspace) stay open side by side,
 * and each round runs a block of `--block` turns on one, then a block on the other, the order alternating by
 * round, so drift in the machine's load falls on both sides. A round's ratio is the median turn on ÷ the median
 * turn off; the figure is the median of the rounds' ratios, with their lowest–highest as the spread.
 *
 * The first bash turn of a harness with checkpoints on builds the workspace baseline (reads and stores every
 * file); it is reported on its own, and the scan alone (two stat walks, no command) is timed as well.
 *
 * `--json` (the full bench's micro rows, bench/src/micro-targets.ts) prints one result line with the targets as rows.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createHarness } from '../../src/harness/harness.js'
import { scriptedAdapter, type ScriptStep } from '../../src/llm/adapters/scripted.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'
import type { SessionStore } from '../../src/store/types.js'
import type { CheckpointSink } from '../../src/tools/checkpoint.js'
import { builtinTools } from '../../src/tools/builtin/index.js'
import { WorkspaceBaseline } from '../../src/tools/builtin/workspace-baseline.js'
// The full bench's result-line prefix (bench/src/protocol.ts; not imported: the root tsconfig checks this file).
const RESULT_PREFIX = '@@bench-result '

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '15' },
    block: { type: 'string', default: '8' },
    only: { type: 'string' },
    files: { type: 'string', default: '10000' },
    store: { type: 'string', default: 'jsonl,sqlite' },
    sandbox: { type: 'string', default: 'off' },
    'model-ms': { type: 'string', default: '0' },
    json: { type: 'boolean', default: false },
  },
})
const rounds = Number(values.rounds)
const block = Number(values.block)
const fileCount = Number(values.files)
const sandbox = values.sandbox === 'bwrap' ? 'bwrap' : 'off'
const storeKinds = (values.store ?? 'jsonl').split(',').filter((s) => s === 'jsonl' || s === 'sqlite')
// How long the scripted model takes per step: 0 is the worst case for checkpoints (nothing hides their disk
// writes); a real model's seconds between steps hide a background write entirely.
const modelMs = Number(values['model-ms'])
const log = (line: string): void => {
  if (!values.json) console.log(line)
}

type ToolCalls = { name: string; arguments: Record<string, unknown> }[]

const sorted = (xs: readonly number[]): number[] => [...xs].sort((a, b) => a - b)
const median = (xs: readonly number[]): number => sorted(xs)[Math.floor(xs.length / 2)] as number

/** A harness with one agent, ready to time turns; `close` removes its store. */
interface Bench {
  turn(): Promise<number>
  /** CPU ms (user + system) of this process during each turn so far. */
  readonly cpu: number[]
  close(): Promise<void>
}

async function openBench(kind: string, root: string, checkpoints: boolean, call: (turn: number) => ToolCalls): Promise<Bench> {
  const dir = mkdtempSync(join(tmpdir(), 'll-bench-ckpt-store-'))
  const store: SessionStore = kind === 'sqlite' ? new SqliteStore({ path: join(dir, 'sessions.db') }) : new JsonlStore({ dir: join(dir, 'sessions') })
  const script = (_request: unknown, index: number): ScriptStep => (index % 2 === 0 ? { toolCalls: call(index / 2), delayMs: modelMs } : { text: 'done', delayMs: modelMs })
  const harness = createHarness({
    store,
    adapters: [scriptedAdapter({ script, models: { m: { contextWindow: 1_000_000 } } })],
    tools: builtinTools({ root, shell: true, sandbox, checkpoints }),
  })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm', cwd: root })
  let turns = 0
  const cpu: number[] = []
  return {
    cpu,
    async turn() {
      const started = performance.now()
      const cpu0 = process.cpuUsage()
      agent.followup(`turn ${turns++}`)
      await agent.whenIdle()
      const ms = performance.now() - started
      const used = process.cpuUsage(cpu0)
      cpu.push((used.user + used.system) / 1000)
      if (agent.session.events.some((e) => e.type === 'turn/failed')) throw new Error('a bench turn failed')
      return ms
    },
    async close() {
      await harness.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
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

/** Paired figure of one on/off pair of benches. */
interface Paired {
  readonly ratio: number
  readonly low: number
  readonly high: number
  readonly offMs: number
  readonly onMs: number
  /** Median CPU ms a turn, off and on (this process only: the disk's own time is not in it). */
  readonly offCpu: number
  readonly onCpu: number
}

async function paired(off: Bench, on: Bench, roundCount: number, blockTurns: number): Promise<Paired> {
  const cpuFrom = [off.cpu.length, on.cpu.length]
  const ratios: number[] = []
  const offAll: number[] = []
  const onAll: number[] = []
  for (let round = 0; round < roundCount; round++) {
    const times = { off: [] as number[], on: [] as number[] }
    const order: ['off' | 'on', Bench][] = round % 2 === 0 ? [['off', off], ['on', on]] : [['on', on], ['off', off]]
    for (const [side, bench] of order) for (let i = 0; i < blockTurns; i++) times[side].push(await bench.turn())
    ratios.push(median(times.on) / median(times.off))
    offAll.push(...times.off)
    onAll.push(...times.on)
  }
  const s = sorted(ratios)
  const offCpu = median(off.cpu.slice(cpuFrom[0]))
  const onCpu = median(on.cpu.slice(cpuFrom[1]))
  return { ratio: median(ratios), low: s[0] as number, high: s.at(-1) as number, offMs: median(offAll), onMs: median(onAll), offCpu, onCpu }
}

interface Row {
  readonly target: string
  readonly at: string
  readonly measured: number
  readonly unit?: string
  readonly spread?: string
  readonly limit: number
  readonly notes?: string
}
const rows: Row[] = []
const spread = (p: Paired): string => `${p.low.toFixed(2)}–${p.high.toFixed(2)}`

async function writeFileRatio(kind: string): Promise<void> {
  const call = (turn: number): ToolCalls => [{ name: 'write_file', arguments: { path: 'notes.txt', content: `turn ${turn}\n${'y'.repeat(4096)}` } }]
  const roots = [workspace(20), workspace(20)]
  const off = await openBench(kind, roots[0] as string, false, call)
  const on = await openBench(kind, roots[1] as string, true, call)
  // Warm-up: the first turns open files and compile code on both sides.
  for (let i = 0; i < 5; i++) await off.turn(), await on.turn()
  const p = await paired(off, on, rounds, block)
  await off.close()
  await on.close()
  for (const root of roots) rmSync(root, { recursive: true, force: true })
  log(
    `write_file turn (${kind}, model ${modelMs} ms per step): off ${p.offMs.toFixed(2)} ms, on ${p.onMs.toFixed(2)} ms; on ÷ off ${p.ratio.toFixed(3)} (rounds ${spread(p)}); ` +
      `CPU a turn off ${p.offCpu.toFixed(2)} ms, on ${p.onCpu.toFixed(2)} ms`,
  )
  rows.push({
    target: `write_file step with checkpoints ÷ without (${kind})`,
    at: `4 KiB file rewritten each turn, ${rounds} rounds × ${block} turns a side, model ${modelMs} ms`,
    measured: p.ratio,
    spread: spread(p),
    limit: 1.2,
    notes: `off ${p.offMs.toFixed(2)} ms, on ${p.onMs.toFixed(2)} ms a turn (CPU ${p.offCpu.toFixed(2)} / ${p.onCpu.toFixed(2)} ms)`,
  })
}

/** Two stat walks of the workspace with nothing changed: what a bash call's checkpoint costs besides the command. */
async function scanOnly(root: string): Promise<number[]> {
  const sink: CheckpointSink = { accepts: () => true, saveBlobs: async () => undefined, record: () => undefined }
  const baseline = new WorkspaceBaseline(root, { maxFiles: 100_000, maxBytes: 1 << 20 })
  await (await baseline.begin(sink, 's')).finish()
  const times: number[] = []
  for (let i = 0; i < 15; i++) {
    const started = performance.now()
    await (await baseline.begin(sink, 's')).finish()
    times.push(performance.now() - started)
  }
  return times
}

async function bashFigures(kind: string): Promise<void> {
  const call = (turn: number): ToolCalls => [{ name: 'bash', arguments: { command: `sed -i 's/^file .*/file edited ${turn}/' d1/f1.txt` } }]
  const roots = [workspace(fileCount), workspace(fileCount)]
  const off = await openBench(kind, roots[0] as string, false, call)
  const on = await openBench(kind, roots[1] as string, true, call)
  await off.turn()
  const first = await on.turn()
  for (let i = 0; i < 2; i++) await off.turn(), await on.turn()
  const bashRounds = Math.max(3, Math.min(rounds, 9))
  const p = await paired(off, on, bashRounds, 3)
  await off.close()
  await on.close()
  const scan = median(await scanOnly(roots[0] as string))
  for (const root of roots) rmSync(root, { recursive: true, force: true })
  log(
    `bash turn, ${fileCount} files (${kind}, sandbox ${sandbox}): off ${p.offMs.toFixed(1)} ms, on ${p.onMs.toFixed(1)} ms; on ÷ off ${p.ratio.toFixed(2)} (rounds ${spread(p)}); ` +
      `CPU a turn off ${p.offCpu.toFixed(1)} ms, on ${p.onCpu.toFixed(1)} ms; ` +
      `first turn with checkpoints (baseline) ${first.toFixed(0)} ms; the two stat walks alone ${scan.toFixed(1)} ms`,
  )
  rows.push({
    target: `bash step with checkpoints ÷ without (${kind})`,
    at: `${fileCount}-file workspace, sed -i on one file, sandbox ${sandbox}, ${bashRounds} rounds × 3 turns a side`,
    measured: p.ratio,
    spread: spread(p),
    // The issue asks for figures here, not a limit; 1.5 is the bound the work on it set itself.
    limit: 1.5,
    notes: `off ${p.offMs.toFixed(1)} ms, on ${p.onMs.toFixed(1)} ms a turn; scan alone ${scan.toFixed(1)} ms; first turn (baseline of every file) ${first.toFixed(0)} ms; no limit in the issue, 1.5 is the work's own`,
  })
}

log(`checkpoints bench: Node ${process.version}, load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
try {
  for (const kind of storeKinds) {
    if (values.only !== 'bash') await writeFileRatio(kind)
    if (values.only !== 'write') await bashFigures(kind)
  }
  log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: true, rows }))
} catch (error) {
  if (!values.json) throw error
  console.log(RESULT_PREFIX + JSON.stringify({ ok: false, error: (error as Error).message }))
}
