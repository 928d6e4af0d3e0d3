// Every row the benchmark can run: which driver, which variant, which Node.
export type Runtime = 'node20' | 'node22'
export type Group = 'ledgerloop' | 'peer' | 'floor' | 'control' | 'scaling'

export interface BenchConfig {
  /** Stable id used in raw results. */
  readonly id: string
  /** Row label in RESULTS.md. */
  readonly label: string
  readonly group: Group
  /** Compiled driver, relative to bench/. */
  readonly driver: string
  readonly variant: string
  readonly runtime: Runtime
  /** What it persists, for the table. */
  readonly store: string
  /** npm package whose installed version is reported (resolved in the runtime's folder). */
  readonly versionOf?: string
  /** Writes to disk: compared with the durable ledgerloop row and the fsync floor. */
  readonly durable?: true
  /** Largest N this row runs at (to keep the full run under its time budget). */
  readonly maxSteps?: number
  /** Extra flags for the child (e.g. no warm-up). */
  readonly childArgs?: readonly string[]
}

const L = 'drivers/ledgerloop.ts'

export const SOURCES = {
  child: { source: 'src/child.ts', output: '.build/child.mjs' },
  drivers: [
    { source: 'drivers/ledgerloop.ts', output: '.build/ledgerloop.mjs' },
    { source: 'drivers/ledgerloop-scaling.ts', output: '.build/ledgerloop-scaling.mjs' },
    { source: 'drivers/ledgerloop-load.ts', output: '.build/ledgerloop-load.mjs' },
    { source: 'drivers/ledgerloop-sessions.ts', output: '.build/ledgerloop-sessions.mjs' },
    { source: 'drivers/pi.ts', output: '.build/pi.mjs' },
    { source: 'drivers/ai-sdk.ts', output: '.build/ai-sdk.mjs' },
    { source: 'drivers/openai-agents.ts', output: '.build/openai-agents.mjs' },
    { source: 'drivers/langgraph.ts', output: '.build/langgraph.mjs' },
    { source: 'drivers/floor.ts', output: '.build/floor.mjs' },
    // Lives under node22/ so its packages resolve from node22/node_modules.
    { source: 'node22/drivers/dsh.ts', output: 'node22/.build/dsh.mjs' },
  ],
} as const

function built(source: string): string {
  const entry = SOURCES.drivers.find((d) => d.source === source)
  if (!entry) throw new Error(`no build entry for ${source}`)
  return entry.output
}

export const CONFIGS: readonly BenchConfig[] = [
  { id: 'ledgerloop-memory', label: 'ledgerloop', group: 'ledgerloop', driver: built(L), variant: 'memory', runtime: 'node20', store: 'memory; plain async* model (verdict row)' },
  { id: 'ledgerloop-memory-replay', label: 'ledgerloop (fast path)', group: 'ledgerloop', driver: built(L), variant: 'memory+replay', runtime: 'node20', store: 'memory; scriptedAdapter replaying prebuilt frozen chunks' },
  { id: 'ledgerloop-memory-queue', label: 'ledgerloop (eager double)', group: 'ledgerloop', driver: built(L), variant: 'memory+queue', runtime: 'node20', store: "memory; eager double: chunks built per request, served without a generator (pi's double's shape)" },
  { id: 'ledgerloop-memory-scope', label: 'ledgerloop (initiatorScope)', group: 'ledgerloop', driver: built(L), variant: 'memory+scope', runtime: 'node20', store: 'memory; plain model; initiatorScope: true' },
  { id: 'ledgerloop-jsonl', label: 'ledgerloop', group: 'ledgerloop', driver: built(L), variant: 'jsonl', runtime: 'node20', store: 'JSONL, fsync before tool body + turn end; plain model (verdict row)', durable: true },
  { id: 'ledgerloop-jsonl-replay', label: 'ledgerloop (fast path)', group: 'ledgerloop', driver: built(L), variant: 'jsonl+replay', runtime: 'node20', store: 'JSONL, fsync before tool body + turn end; scriptedAdapter', durable: true },
  { id: 'ledgerloop-jsonl-interval', label: 'ledgerloop', group: 'ledgerloop', driver: built(L), variant: 'jsonl+interval', runtime: 'node20', store: "JSONL, fsync: 'interval' (batched, no fsync per step); plain model", durable: true },
  { id: 'ledgerloop-sqlite', label: 'ledgerloop', group: 'ledgerloop', driver: built(L), variant: 'sqlite', runtime: 'node20', store: 'SQLite; plain model', durable: true },
  { id: 'pi', label: 'pi (pi-agent-core)', group: 'peer', driver: built('drivers/pi.ts'), variant: '', runtime: 'node20', store: 'memory', versionOf: '@mariozechner/pi-agent-core' },
  { id: 'pi-async', label: 'pi (pi-agent-core)', group: 'peer', driver: built('drivers/pi.ts'), variant: 'async', runtime: 'node20', store: "memory; events from an async* generator pumped into its stream (ledgerloop's plain double's shape)", versionOf: '@mariozechner/pi-agent-core' },
  { id: 'ai-sdk', label: 'Vercel AI SDK (streamText)', group: 'peer', driver: built('drivers/ai-sdk.ts'), variant: '', runtime: 'node20', store: 'memory', versionOf: 'ai' },
  { id: 'openai-agents', label: 'OpenAI Agents SDK', group: 'peer', driver: built('drivers/openai-agents.ts'), variant: '', runtime: 'node20', store: 'memory', versionOf: '@openai/agents' },
  { id: 'langgraph', label: 'LangGraph ReAct agent', group: 'peer', driver: built('drivers/langgraph.ts'), variant: '', runtime: 'node20', store: 'MemorySaver checkpointer', versionOf: '@langchain/langgraph' },
  { id: 'langgraph-nocp', label: 'LangGraph ReAct agent', group: 'peer', driver: built('drivers/langgraph.ts'), variant: 'no-checkpointer', runtime: 'node20', store: 'none (no checkpointer)', versionOf: '@langchain/langgraph', maxSteps: 100 },
  { id: 'dsh-memory', label: 'original harness (dsh-agent-loop)', group: 'peer', driver: built('node22/drivers/dsh.ts'), variant: 'memory', runtime: 'node22', store: 'memory session store', versionOf: '@deepseek-ai/dsh-agent-loop' },
  { id: 'dsh-jsonl', label: 'original harness (dsh-agent-loop)', group: 'peer', driver: built('node22/drivers/dsh.ts'), variant: 'jsonl', runtime: 'node22', store: 'its JSONL persistence (batched, default settings)', versionOf: '@deepseek-ai/dsh-agent-loop', durable: true },
  { id: 'floor-serialise', label: 'floor', group: 'floor', driver: built('drivers/floor.ts'), variant: 'serialise', runtime: 'node20', store: 'serialise only' },
  { id: 'floor-fsync-step', label: 'floor', group: 'floor', driver: built('drivers/floor.ts'), variant: 'fsync-step', runtime: 'node20', store: '1 write + 1 fsync per step', durable: true },
  { id: 'floor-fsync-2', label: 'floor', group: 'floor', driver: built('drivers/floor.ts'), variant: 'fsync-2', runtime: 'node20', store: '2 writes + 2 fsyncs per step', durable: true },
  { id: 'floor-fsync-tool-turn', label: 'floor', group: 'floor', driver: built('drivers/floor.ts'), variant: 'fsync-tool-turn', runtime: 'node20', store: 'write + fsync before tool body and at turn end', durable: true },
  { id: 'pi-node22', label: 'pi (pi-agent-core)', group: 'control', driver: built('drivers/pi.ts'), variant: '', runtime: 'node22', store: 'memory', versionOf: '@mariozechner/pi-agent-core' },
  { id: 'ledgerloop-memory-node22', label: 'ledgerloop', group: 'control', driver: built(L), variant: 'memory', runtime: 'node22', store: 'memory; plain async* model' },
]

/**
 * Rows run back to back, in fresh processes, within every round (the order flips between rounds): each
 * adjacent pair is a comparison the report states as a paired ratio. Every chain row runs in every round;
 * the other rows run in the first `peripheralRounds` rounds only (and yield to the time budget).
 */
export const CHAINS: readonly (readonly string[])[] = [
  // Like for like with pi, one chain per double shape: pi's eager double against ledgerloop's eager one (and
  // the fast path); both async* generators (pi's pumped into its stream, as its providers do), then
  // initiatorScope against the plain row.
  ['ledgerloop-memory-replay', 'pi', 'ledgerloop-memory-queue'],
  ['pi-async', 'ledgerloop-memory', 'ledgerloop-memory-scope'],
  // fast path vs floor, floor vs the durable verdict row, that vs the original, the original vs 'interval'
  ['ledgerloop-jsonl-replay', 'floor-fsync-tool-turn', 'ledgerloop-jsonl', 'dsh-jsonl', 'ledgerloop-jsonl-interval'],
]

/** Paired ratios the report states: `row ÷ ref` per round. `adjacent` pairs run back to back (see CHAINS). */
export interface Pairing {
  readonly row: string
  readonly ref: string
}

/** The comparisons every verdict rests on (each an adjacent pair of a chain). */
export const VERDICT_PAIRS: readonly Pairing[] = [
  { row: 'ledgerloop-memory', ref: 'pi-async' },
  { row: 'ledgerloop-memory-queue', ref: 'pi' },
  { row: 'ledgerloop-memory', ref: 'pi' },
  { row: 'ledgerloop-memory-replay', ref: 'pi' },
  { row: 'ledgerloop-memory-scope', ref: 'ledgerloop-memory' },
  { row: 'ledgerloop-jsonl', ref: 'floor-fsync-tool-turn' },
  { row: 'ledgerloop-jsonl-replay', ref: 'floor-fsync-tool-turn' },
  { row: 'ledgerloop-jsonl', ref: 'dsh-jsonl' },
  { row: 'ledgerloop-jsonl-interval', ref: 'dsh-jsonl' },
]

/** Whether two rows run back to back in some chain. */
export function adjacent(a: string, b: string): boolean {
  return CHAINS.some((chain) => chain.some((id, i) => (id === a && chain[i + 1] === b) || (id === b && chain[i + 1] === a)))
}

/** ledgerloop per-step time at session sizes (pre-filled, then N steps timed). */
export function scalingConfigs(sizes: readonly number[], stores: readonly string[]): BenchConfig[] {
  return stores.flatMap((store) => sizes.map((size) => ({
    id: `scaling-${store}-${size}`,
    label: `ledgerloop @ ${size.toLocaleString('en-US')} events`,
    group: 'scaling' as const,
    driver: built('drivers/ledgerloop-scaling.ts'),
    variant: `${store}:${size}`,
    runtime: 'node20' as const,
    store,
    childArgs: ['--warmup-runs', '0'],
  })))
}

/**
 * The memory row (issue 15): a fresh process builds one session of `size` events through the loop (that is
 * its warm-up: no separate warm-up session), GCs, then runs N measured steps on it. Its peak RSS is compared
 * with the lowest peer's at N=1000.
 */
export function residentConfig(size: number): BenchConfig {
  return {
    id: `resident-memory-${size}`,
    label: `ledgerloop holding ${size.toLocaleString('en-US')} events`,
    group: 'scaling',
    driver: built('drivers/ledgerloop-scaling.ts'),
    variant: `memory:${size}:resident`,
    runtime: 'node20',
    store: 'memory; the session built through the loop in the measuring process, no other warm-up',
    childArgs: ['--warmup-runs', '0'],
  }
}
