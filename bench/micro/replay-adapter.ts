/**
 * What a cassette costs (issue 25): one 1,000-step turn (20 text chunks and one `noop` call per step, a final text
 * step) recorded once, then run again through `replayAdapter` (each request compared with the recorded one rebuilt
 * from the log, then answered with the recorded chunks) and through `scriptedAdapter` playing the same script,
 * paired in one process, order alternating by round. Reports each side's median CPU ms per run and the median of
 * the per-round ratios replay ÷ scripted; the replay side includes building the cassette from the log
 * (`replayAdapter({ events })`), and a second pair also swaps the tools for `recordedTools(events)`. Target ≤ 1.2×.
 *
 *   npx tsx bench/micro/replay-adapter.ts [--steps 1000] [--rounds 9] [--json]
 *
 * `--json` (the full bench's micro rows, bench/src/micro-targets.ts) prints one result line with both pairs as target rows.
 */
import { parseArgs } from 'node:util'
import * as lib from '../../src/index.js'
// The full bench's result-line prefix (bench/src/protocol.ts; not imported: the root tsconfig checks this file).
const RESULT_PREFIX = '@@bench-result '

const { values } = parseArgs({ options: { steps: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '9' }, json: { type: 'boolean', default: false } } })
const steps = Number(values.steps)
const rounds = Number(values.rounds)
const K = 20

const text = Array.from({ length: K }, (_, i) => `tok${i} `)
const script: lib.ScriptStep[] = Array.from({ length: steps }, (_, i) =>
  i < steps - 1 ? { text, toolCalls: [{ id: `call_${i + 1}`, name: 'noop', arguments: { n: i } }], usage: { inputTokens: 10, outputTokens: 5 } } : { text, usage: { inputTokens: 10, outputTokens: 5 } },
)
let toolRuns = 0
const noop = lib.defineTool({ name: 'noop', description: 'does nothing', parameters: { type: 'object', properties: { n: { type: 'number' } } }, execute: () => (toolRuns++, 'ok') })

/** One run of the turn with `adapter` (made inside the timed region by `make`); CPU ms. */
async function once(make: () => lib.LlmAdapter, tools: readonly lib.ToolDefinition<never>[]): Promise<{ ms: number; events: lib.SessionEvent[]; adapter: lib.LlmAdapter }> {
  toolRuns = 0
  const c0 = process.cpuUsage()
  const adapter = make()
  const harness = lib.createHarness({ adapters: [adapter], tools })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'bench' })
  agent.followup('go')
  await agent.whenIdle()
  const u = process.cpuUsage(c0)
  const events = [...agent.session.events]
  await harness.close()
  return { ms: (u.user + u.system) / 1000, events, adapter }
}

const scripted = () => lib.scriptedAdapter({ recordRequests: false, script })
const recorded = (await once(scripted, [noop])).events
const ends = recorded.filter((e) => e.type === 'step/end').length
if (ends !== steps) throw new Error(`the recording has ${ends} steps, expected ${steps}`)
const replay = () => lib.replayAdapter({ events: recorded })
const recordedSet = lib.recordedTools(recorded)

function check(adapter: lib.LlmAdapter): void {
  const cassette = adapter as lib.ReplayAdapter
  if (cassette.divergences.length > 0 || cassette.served !== steps) throw new Error(`replay diverged: ${JSON.stringify(cassette.divergences[0])}, served ${cassette.served}`)
}

const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number
for (let i = 0; i < 3; i++) {
  await once(scripted, [noop])
  check((await once(replay, [noop])).adapter)
}

async function pair(label: string, replayTools: readonly lib.ToolDefinition<never>[]): Promise<{ ratio: number; low: number; high: number }> {
  const s: number[] = []
  const r: number[] = []
  const ratios: number[] = []
  for (let round = 0; round < rounds; round++) {
    const replayFirst = round % 2 === 1
    const a = replayFirst ? await once(replay, replayTools) : await once(scripted, [noop])
    const b = replayFirst ? await once(scripted, [noop]) : await once(replay, replayTools)
    const [sm, rr] = replayFirst ? [b, a] : [a, b]
    check(rr.adapter)
    s.push(sm.ms)
    r.push(rr.ms)
    ratios.push(rr.ms / sm.ms)
  }
  const sorted = [...ratios].sort((x, y) => x - y)
  if (values.json) return { ratio: median(ratios), low: sorted[0] as number, high: sorted.at(-1) as number }
  console.log(
    `${label.padEnd(44)} scripted ${median(s).toFixed(0).padStart(5)} ms · replay ${median(r).toFixed(0).padStart(5)} ms · replay ÷ scripted ${median(ratios).toFixed(2)}× (range ${sorted[0]?.toFixed(2)}–${sorted.at(-1)?.toFixed(2)})`,
  )
  return { ratio: median(ratios), low: sorted[0] as number, high: sorted.at(-1) as number }
}

if (!values.json) console.log(`replayAdapter vs scriptedAdapter: one ${steps}-step turn (${K} text chunks + 1 tool call per step), ${rounds} paired rounds, CPU time, Node ${process.version}`)
const sameTool = await pair('replayAdapter, same live noop tool', [noop])
const withRecorded = await pair('replayAdapter + recordedTools', recordedSet)
if (values.json) {
  const at = `one ${steps}-step turn, ${rounds} paired rounds (CPU)`
  const row = (target: string, r: { ratio: number; low: number; high: number }) => ({ target, at, measured: r.ratio, spread: `${r.low.toFixed(2)}–${r.high.toFixed(2)}`, limit: 1.2 })
  console.log(RESULT_PREFIX + JSON.stringify({ ok: true, rows: [row('replayAdapter ÷ scriptedAdapter, same live tool', sameTool), row('replayAdapter + recordedTools ÷ scriptedAdapter', withRecorded)] }))
}
