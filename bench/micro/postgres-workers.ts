/**
 * PostgreSQL rows (issues 12 and 30). Not a test; numbers depend on the machine and on whatever else shares it.
 *
 *   npx tsx bench/micro/postgres-workers.ts [--workers 1,2,4] [--sessions 64] [--turns 5] [--rounds 3]
 *     [--request-ms 50] [--concurrency 4] [--idle-grace-ms 2000] [--poll-ms 1000] [--steps 300]
 *     [--per-step-only | --workers-only] [--floor-first] [--no-content-index] [--json]
 *
 * 1. Turns per second against worker processes: `--sessions` sessions each get `--turns` followups through the
 *    inbox; N worker processes (`--concurrency` each, the `ledgerloop worker` defaults for idle grace and poll)
 *    serve them with a model that waits `--request-ms` before each reply (I/O-bound, as with a real model) and
 *    one tool call per turn (two requests per turn; the tool body only counts its runs). Every round
 *    also measures the I/O bound itself in this process: the same sessions' turns as two bare timer waits of
 *    `--request-ms` each, served by the same number of lanes. The default 64 sessions fill every one of 16
 *    lanes (4 workers × 4) equally, so the bound scales with the lanes. Each round ends with where one
 *    worker's slot time went (held in turns, between turns, idle before release, not held: claim and open).
 *    Each run also reads the CPU of the database's server backends and of the machine, and the last round
 *    lists the statements the workers sent per turn by what they do (with their mean round trip) and, per
 *    claimed session, claim → open → first request.
 * 2. Per-step cost of PostgresStore (append a step's ~25 events, flush: one statement with the epoch check)
 *    next to a floor of the same rows inserted directly with `pg` (one multi-row INSERT per step, autocommit).
 *    Both build their steps' events before the clock starts; the store's time includes encoding them, the
 *    floor's rows are encoded beforehand.
 *
 * `--no-content-index` disables the content index's trigger in part 1 (a diagnosis of what it costs a flush;
 * search would not find those sessions' text). `--per-step-only` skips part 1, `--workers-only` part 2; `--floor-first` times the floor before the store (the
 * bench runner alternates it between rounds); `--json` ends with one `@@bench-result {"ok":true,…}` line: the
 * per-step figures (`storeMs`, `floorMs`) and, with part 1, the issue 30 target rows (bench/src/micro-targets.ts).
 *
 * Needs PostgreSQL at 127.0.0.1:5432 (or LEDGERLOOP_TEST_PG_URL); creates and drops a scratch database.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { Session, type SessionEvent } from '../../src/index.js'
import { PostgresStore } from '../../src/postgres.js'
import { encodeRows } from '../../src/store/postgres/stored-events.js'
import { createScratchDatabase } from '../../test/store/postgres-scratch.js'
import { bundleTestChild } from '../../test/support/child-process-kit.js'
// The full bench's result-line prefix (bench/src/protocol.ts; not imported: the root tsconfig checks this file).
const RESULT_PREFIX = '@@bench-result '

const { values } = parseArgs({
  options: {
    workers: { type: 'string', default: '1,2,4' },
    sessions: { type: 'string', default: '64' },
    turns: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '3' },
    'request-ms': { type: 'string', default: '50' },
    concurrency: { type: 'string', default: '4' },
    'idle-grace-ms': { type: 'string', default: '2000' },
    'poll-ms': { type: 'string', default: '1000' },
    steps: { type: 'string', default: '300' },
    'per-step-only': { type: 'boolean', default: false },
    'workers-only': { type: 'boolean', default: false },
    'floor-first': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    'no-content-index': { type: 'boolean', default: false },
  },
})
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const sessions = Number(values.sessions)
const turns = Number(values.turns)
const requestMs = Number(values['request-ms'])
const concurrency = Number(values.concurrency)
const workerCounts = values.workers.split(',').map(Number)
const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ')

/** The bound: each session's turns in order on one of `lanes` lanes, a turn being two bare waits of the model's latency. */
async function ioBound(lanes: number): Promise<number> {
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: lanes }, async () => {
      while (next < sessions) {
        next++
        for (let t = 0; t < turns; t++) {
          await sleep(requestMs)
          await sleep(requestMs)
        }
      }
    }),
  )
  return (sessions * turns) / ((performance.now() - started) / 1000)
}

interface WorkerLine {
  readonly type: string
  readonly at: number
  readonly sessionId?: string
  readonly cpuMs?: number
  readonly bodies?: number
  readonly statements?: Record<string, { count: number; ms: number }>
  readonly phases?: { claims: number; claimToOpenMs: number; openToFirstRequestMs: number }
}

/** CPU ticks (10 ms) used so far by this database's server backends (local server only; 0 when unreadable). */
async function serverTicks(pool: pg.Pool): Promise<number> {
  const pids = await pool.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')
  let ticks = 0
  for (const { pid } of pids.rows) {
    try {
      const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ')
      ticks += Number(fields[11]) + Number(fields[12])
    } catch {
      // not a local server, or the backend just left
    }
  }
  return ticks
}

/** The machine's busy and total CPU ticks so far (all processes, other work included). */
function machineTicks(): { busy: number; total: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
  const total = fields.reduce((a, b) => a + b, 0)
  return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total }
}

/** Per turn, what one run cost besides the workers' own CPU: statements by kind, server CPU, the machine's load. */
interface RunCost {
  readonly statements: Map<string, { count: number; ms: number }>
  readonly serverCpuMsPerTurn: number
  readonly machineBusy: number
  /** Mean ms from a claim statement's return to the session being open, and from there to its first request. */
  readonly openMs: number
  readonly firstRequestMs: number
}

/** Where one worker's slot time went, in slot-seconds (`concurrency × wall` in all). */
interface SlotTime {
  readonly wall: number
  readonly inTurns: number
  readonly modelWaits: number
  readonly betweenTurns: number
  readonly idleHeld: number
  /** Slot time in neither: claim, open, empty slots. */
  readonly outside: number
  readonly claims: number
}

async function turnsPerSecond(url: string, childFile: string, dir: string, workers: number, round: number): Promise<{ perSecond: number; slots: SlotTime | undefined; cpuMsPerTurn: number; cost: RunCost }> {
  const schema = `bench_r${round}_w${workers}`
  const store = new PostgresStore({ connectionString: url, schema })
  await store.ready()
  // Diagnosis only (what the content index costs the flushes): search would miss these sessions' text.
  if (values['no-content-index']) {
    const admin = new pg.Pool({ connectionString: url, max: 1 })
    await admin.query(`ALTER TABLE "${schema}".events DISABLE TRIGGER events_content`)
    await admin.end()
  }
  for (let i = 0; i < sessions; i++) await store.createDetached(new Session({ id: `b${i}` }).header)
  const lines: WorkerLine[] = []
  const args = (n: number): string[] => [childFile, url, schema, `w${n}`, String(requestMs), String(concurrency), values['idle-grace-ms'], values['poll-ms']]
  const children = Array.from({ length: workers }, (_, n) => spawn(process.execPath, args(n), { stdio: ['ignore', 'pipe', 'inherit'] }))
  await Promise.all(
    children.map(
      (c) =>
        new Promise<void>((ready) =>
          createInterface({ input: c.stdout }).on('line', (line) => {
            const event = JSON.parse(line) as WorkerLine
            lines.push(event)
            if (event.type === 'ready') ready()
          }),
        ),
    ),
  )
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  const ticksBefore = await serverTicks(pool)
  const machineBefore = machineTicks()
  const started = Date.now()
  // Session by session, so a claimed session's whole queue arrives while it runs its first turn.
  for (let i = 0; i < sessions; i++) for (let t = 0; t < turns; t++) await store.send(`b${i}`, { kind: 'followup', message: `turn ${t + 1}` })
  for (;;) {
    const r = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".events WHERE type = 'turn/end'`)
    if ((r.rows[0] as { n: number }).n >= sessions * turns) break
    await sleep(10)
  }
  const ended = Date.now()
  const serverMs = ((await serverTicks(pool)) - ticksBefore) * 10
  const machineAfter = machineTicks()
  for (const c of children) c.kill('SIGTERM')
  // 'close' comes once stdout is drained too, so the last line (with the CPU time) has been read.
  await Promise.all(children.map((c) => new Promise<void>((r) => c.once('close', () => r()))))
  const slots = workers === 1 ? await slotTime(pool, schema, lines, started, ended) : undefined
  await pool.end()
  await store.close()
  const bodies = lines.reduce((sum, l) => sum + (l.bodies ?? 0), 0)
  if (bodies !== sessions * turns) throw new Error(`${workers} worker(s) ran ${bodies} tool bodies for ${sessions * turns} turns`)
  // Worker-process CPU after start-up (shutdown included) over the turns served: what a turn costs the worker side.
  const cpuMs = lines.reduce((sum, l) => sum + (l.type === 'stopped' ? (l.cpuMs ?? 0) : l.type === 'ready' ? -(l.cpuMs ?? 0) : 0), 0)
  const statements = new Map<string, { count: number; ms: number }>()
  for (const line of lines) {
    for (const [kind, { count, ms }] of Object.entries(line.statements ?? {})) {
      const sum = statements.get(kind) ?? { count: 0, ms: 0 }
      statements.set(kind, { count: sum.count + count, ms: sum.ms + ms })
    }
  }
  const machineBusy = (machineAfter.busy - machineBefore.busy) / Math.max(1, machineAfter.total - machineBefore.total)
  const phase = (pick: (p: NonNullable<WorkerLine['phases']>) => number): number => lines.reduce((sum, l) => sum + (l.phases === undefined ? 0 : pick(l.phases)), 0)
  const claims = Math.max(1, phase((p) => p.claims))
  const cost = { statements, serverCpuMsPerTurn: serverMs / (sessions * turns), machineBusy, openMs: phase((p) => p.claimToOpenMs) / claims, firstRequestMs: phase((p) => p.openToFirstRequestMs) / claims }
  return { perSecond: (sessions * turns) / ((ended - started) / 1000), slots, cpuMsPerTurn: cpuMs / (sessions * turns), cost }
}

/** One worker's slot-seconds from its claim/release lines and the logged turn boundaries (event `time`). */
async function slotTime(pool: pg.Pool, schema: string, lines: readonly WorkerLine[], started: number, ended: number): Promise<SlotTime> {
  const found = await pool.query<{ session_id: string; type: string; data: string }>(`SELECT session_id, type, data FROM "${schema}".events WHERE type IN ('turn/start', 'turn/end') ORDER BY session_id, seq`)
  const bySession = new Map<string, { type: string; time: number }[]>()
  for (const row of found.rows) {
    const list = bySession.get(row.session_id) ?? []
    list.push({ type: row.type, time: (JSON.parse(row.data) as { time: number }).time })
    bySession.set(row.session_id, list)
  }
  let inTurns = 0
  let betweenTurns = 0
  for (const list of bySession.values()) {
    for (let i = 0; i + 1 < list.length; i += 2) inTurns += (list[i + 1] as { time: number }).time - (list[i] as { time: number }).time
    for (let i = 1; i + 1 < list.length; i += 2) betweenTurns += (list[i + 1] as { time: number }).time - (list[i] as { time: number }).time
  }
  // Idle until released: from a session's last turn/end before its release to the release (its slot is free for
  // a claim from the moment the worker sees it idle, so this overlaps the next session's claim and open).
  let idleHeld = 0
  let claims = 0
  for (const line of lines) {
    if (line.sessionId === undefined || line.at > ended) continue
    if (line.type === 'claimed') claims++
    if (line.type !== 'released') continue
    const last = bySession.get(line.sessionId)?.filter((e) => e.type === 'turn/end' && e.time <= line.at).at(-1)
    if (last !== undefined) idleHeld += line.at - last.time
  }
  const wall = (ended - started) / 1000
  return { wall, inTurns: inTurns / 1000, modelWaits: (sessions * turns * 2 * requestMs) / 1000, betweenTurns: betweenTurns / 1000, idleHeld: idleHeld / 1000, outside: concurrency * wall - (inTurns + betweenTurns) / 1000, claims }
}

/** A step's 25 events, as the session appended them (no copy of the whole log: `session.events` would be one). */
function stepEvents(session: Session, step: number): SessionEvent[] {
  const events = [session.append('session/title', { title: `step ${step}` })]
  for (let i = 0; i < 23; i++) events.push(session.append('session/title', { title: `chunk ${i}` }))
  events.push(session.append('session/title', { title: `end ${step}` }))
  return events
}

async function storePerStep(url: string, steps: number): Promise<number> {
  const store = new PostgresStore({ connectionString: url, schema: 'bench_step' })
  await store.ready()
  const session = new Session({ id: 'step' })
  const writer = await store.create(session.header)
  const warm = stepEvents(session, 0)
  for (const e of warm) writer.append(e)
  await writer.flush()
  // Built before the clock starts, as the floor's rows are: making the events is the session's work, not the store's.
  const batches = Array.from({ length: steps }, (_, s) => stepEvents(session, s + 1))
  const t = performance.now()
  for (const batch of batches) {
    for (const e of batch) writer.append(e)
    await writer.flush()
  }
  const storeMs = (performance.now() - t) / steps
  await writer.close()
  await store.close()
  return storeMs
}

async function floorPerStep(url: string, steps: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: 1 })
  await pool.query('CREATE TABLE floor_events (session_id text NOT NULL, seq integer NOT NULL, type text NOT NULL, data text NOT NULL, PRIMARY KEY (session_id, seq))')
  const floorSession = new Session({ id: 'floor' })
  const batches = Array.from({ length: steps }, (_, s) => encodeRows(stepEvents(floorSession, s), true))
  const t = performance.now()
  for (const rows of batches) {
    await pool.query('INSERT INTO floor_events (session_id, seq, type, data) SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[])', ['floor', rows.seqs, rows.types, rows.data])
  }
  const floorMs = (performance.now() - t) / steps
  await pool.end()
  return floorMs
}

async function perStep(url: string): Promise<{ store: number; floor: number }> {
  const steps = Number(values.steps)
  if (values['floor-first']) {
    const floor = await floorPerStep(url, steps)
    return { store: await storePerStep(url, steps), floor }
  }
  const store = await storePerStep(url, steps)
  return { store, floor: await floorPerStep(url, steps) }
}

const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 === 1 ? (s[(s.length - 1) / 2] as number) : ((s[s.length / 2 - 1] as number) + (s[s.length / 2] as number)) / 2
}
const spread = (xs: readonly number[], digits = 2): string => `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`

interface Round {
  readonly bound: Map<number, number>
  readonly measured: Map<number, number>
  readonly cpu: Map<number, number>
  readonly cost: Map<number, RunCost>
  readonly slots: SlotTime | undefined
}

async function workerRounds(url: string, dir: string): Promise<object[]> {
  const childFile = await bundleTestChild(join(dirname(fileURLToPath(import.meta.url)), 'postgres-workers-child.ts'), dir, ['pg-native'])
  const rounds: Round[] = []
  const loads: number[] = []
  for (let round = 0; round < Number(values.rounds); round++) {
    const bound = new Map<number, number>()
    const measured = new Map<number, number>()
    const cpu = new Map<number, number>()
    const cost = new Map<number, RunCost>()
    let slots: SlotTime | undefined
    // Alternate the order by round, so a drift in the machine's load does not favour one worker count.
    for (const n of round % 2 === 0 ? workerCounts : [...workerCounts].reverse()) {
      bound.set(n, await ioBound(n * concurrency))
      const r = await turnsPerSecond(url, childFile, dir, n, round)
      measured.set(n, r.perSecond)
      cpu.set(n, r.cpuMsPerTurn)
      cost.set(n, r.cost)
      slots ??= r.slots
      loads.push(loadavg()[0] as number)
    }
    rounds.push({ bound, measured, cpu, cost, slots })
    const cells = workerCounts.map((n) => {
      const c = cost.get(n) as RunCost
      return `${n}: ${(measured.get(n) as number).toFixed(1)} of ${(bound.get(n) as number).toFixed(1)} (CPU ms/turn: workers ${(cpu.get(n) as number).toFixed(1)}, server ${c.serverCpuMsPerTurn.toFixed(1)}; machine ${(100 * c.machineBusy).toFixed(0)} % busy)`
    })
    console.log(`round ${round + 1}: turns/s (measured of bound) ${cells.join(' · ')} · load ${load()}`)
    if (slots !== undefined) {
      const all = concurrency * slots.wall
      const pct = (x: number): string => `${((100 * x) / all).toFixed(0)} %`
      console.log(
        `  one worker's ${all.toFixed(1)} slot-s: in turns ${pct(slots.inTurns)} (model waits ${pct(slots.modelWaits)}), between turns ${pct(slots.betweenTurns)}, outside turns (claim, open, idle, empty) ${pct(slots.outside)}; last turn/end to release ${((1000 * slots.idleHeld) / slots.claims).toFixed(0)} ms per claim (${slots.claims} claims)`,
      )
    }
  }
  console.log('')
  console.log(`statements per turn, by what they do (round ${rounds.length}; mean round trip in ms):`)
  const last = rounds.at(-1) as Round
  for (const n of workerCounts) {
    const c = last.cost.get(n) as RunCost
    const all = [...c.statements.entries()].filter(([kind]) => kind !== 'setup').sort(([, a], [, b]) => b.count - a.count)
    const total = all.reduce((sum, [, t]) => sum + t.count, 0)
    const cells = all.map(([kind, t]) => `${kind} ${(t.count / (sessions * turns)).toFixed(2)} (${(t.ms / t.count).toFixed(1)})`)
    console.log(`  ${n} worker(s): ${(total / (sessions * turns)).toFixed(2)} in all: ${cells.join(' · ')}`)
    console.log(`    per claimed session: claim returned → open ${c.openMs.toFixed(1)} ms, open → first request ${c.firstRequestMs.toFixed(1)} ms`)
  }
  console.log('')
  console.log('| worker processes | turns/s (median) | spread | I/O bound (median) | of the bound |')
  console.log('| ---: | ---: | ---: | ---: | ---: |')
  for (const n of workerCounts) {
    const m = rounds.map((r) => r.measured.get(n) as number)
    const b = rounds.map((r) => r.bound.get(n) as number)
    console.log(`| ${n} | ${median(m).toFixed(1)} | ${spread(m, 1)} | ${median(b).toFixed(1)} | ${((100 * median(rounds.map((r) => (r.measured.get(n) as number) / (r.bound.get(n) as number))))).toFixed(0)} % |`)
  }
  const at = `${sessions} sessions × ${turns} turns, ${requestMs} ms per request, 2 requests per turn, concurrency ${concurrency}; ${rounds.length} rounds, load ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`
  const rows: object[] = []
  if (workerCounts.includes(1)) {
    const one = rounds.map((r) => r.measured.get(1) as number)
    const ofBound = rounds.map((r) => (r.bound.get(1) as number) / (r.measured.get(1) as number))
    const slotMs = one.map((x) => (1000 * concurrency) / x)
    const share = (pick: (t: SlotTime) => number): string => `${median(rounds.map((r) => (r.slots === undefined ? 0 : (100 * pick(r.slots)) / (concurrency * r.slots.wall)))).toFixed(0)} %`
    const where = `slot time: in turns ${share((t) => t.inTurns)} (model waits ${share((t) => t.modelWaits)}), between turns ${share((t) => t.betweenTurns)}, claim/open/idle ${share((t) => t.outside)}; worker CPU ${median(rounds.map((r) => r.cpu.get(1) as number)).toFixed(1)} ms/turn`
    rows.push({ target: 'workers: 1 worker ≥ 80 % of the I/O bound measured beside it (bound ÷ turns/s)', at, measured: median(ofBound), spread: spread(ofBound), limit: 1.25, notes: `${median(one).toFixed(1)} turns/s of ${median(rounds.map((r) => r.bound.get(1) as number)).toFixed(1)}; ${where}` })
    rows.push({ target: 'workers: 1 worker ≥ 32 turns/s (slot time per turn ≤ 125 ms)', at, measured: median(slotMs), unit: 'ms', spread: spread(slotMs, 0), limit: (1000 * concurrency) / 32, notes: `${median(one).toFixed(1)} turns/s, spread ${spread(one, 1)}` })
  }
  if (workerCounts.includes(1) && workerCounts.includes(4)) {
    const scale = rounds.map((r) => (r.measured.get(4) as number) / (r.measured.get(1) as number))
    const inverse = scale.map((x) => 4 / x)
    rows.push({ target: 'workers: 4 workers ≥ 3.5× one (4 ÷ speed-up)', at, measured: median(inverse), spread: spread(inverse), limit: 4 / 3.5, notes: `speed-up ${median(scale).toFixed(2)}× (${spread(scale)}); 4 workers ${median(rounds.map((r) => r.measured.get(4) as number)).toFixed(1)} turns/s` })
  }
  return rows
}

const dir = mkdtempSync(join(tmpdir(), 'll-pg-bench-'))
let db: Awaited<ReturnType<typeof createScratchDatabase>> | undefined
try {
  db = await createScratchDatabase('ll_bench')
  console.log(`load average at start: ${load()}`)
  const rows = values['per-step-only'] ? [] : await workerRounds(db.url, dir)
  const step = values['workers-only'] ? undefined : await perStep(db.url)
  if (step !== undefined) {
    console.log('')
    console.log('| per step (25 events, one flush) | ms |')
    console.log('| --- | ---: |')
    console.log(`| PostgresStore append + flush (epoch-checked statement) | ${step.store.toFixed(3)} |`)
    console.log(`| floor: the same rows, one INSERT with pg | ${step.floor.toFixed(3)} |`)
  }
  console.log(`load average at end: ${load()}`)
  const perStepResult = step === undefined ? {} : { storeMs: step.store, floorMs: step.floor, steps: Number(values.steps) }
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: true, ...perStepResult, ...(rows.length > 0 ? { rows } : {}) }))
} catch (error) {
  if (values.json) console.log(RESULT_PREFIX + JSON.stringify({ ok: false, error: (error as Error).message }))
  throw error
} finally {
  rmSync(dir, { recursive: true, force: true })
  await db?.drop()
}
