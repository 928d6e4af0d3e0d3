/**
 * The takeover test (issue 12): worker processes share sessions in one PostgreSQL database while the parent
 * SIGKILLs some mid-turn and SIGSTOPs others past their lease (then SIGCONTs them). Afterwards every session
 * must have all its turns closed, every log must verify, every prompt sent must be in its log exactly once, no
 * tool body may have run twice (side file), and a stalled worker's late flush must have been refused with
 * `LEASE_LOST`. Shared by `test/worker/takeover.test.ts` (one kill, one stall) and `npm run crash:pg`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import { bundleTestChild, prng } from '../support/child-process-kit.js'
import pg from 'pg'
import { Session, verifySessionLog, type SessionEvent } from '../../src/index.js'
import { checkEveryPromptAnswered } from '../support/answered-prompts.js'
import { PostgresStore } from '../../src/postgres.js'
import { createScratchDatabase } from '../store/postgres-scratch.js'

/** Options of {@link runTakeover}. */
export interface TakeoverOptions {
  /** Disruptions: SIGKILLs mid-turn (every `stallEvery`-th one is a SIGSTOP past the lease instead). */
  readonly kills: number
  /** SIGSTOP/SIGCONT stalls past the lease (default one per four kills, at least one). */
  readonly stalls?: number
  /** Every n-th disruption is a stall while stalls remain (default 2: kill, stall, kill, …). */
  readonly stallEvery?: number
  readonly sessions?: number
  /** Followups sent to each session up front. */
  readonly followups?: number
  readonly workers?: number
  readonly leaseMs?: number
  /** Start a fresh worker for every killed one (default: only when there are more disruptions than workers). */
  readonly replace?: boolean
  readonly seed?: number
  readonly log?: (line: string) => void
}

/** What a takeover run observed. */
export interface TakeoverReport {
  kills: number
  stalls: number
  sessions: number
  prompts: number
  turns: number
  interruptedTurns: number
  outcomeUnknown: number
  toolBodies: number
  leaseLostOnFlush: number
  leaseLostOnRenewal: number
  workersStarted: number
  elapsedMs: number
  /** Continuation turns (`turn/start` with `continues`) the new owners started after disruptions. */
  continuations: number
  /** Milliseconds from each SIGKILL to the first request of the first continuation in a session the killed worker owned. */
  killToContinuationMs: number[]
  /** For every session a kill cut off mid-turn: kill → its own continuation's first request (crash continuations run alone, one after another per worker). */
  killToEachContinuationMs: number[]
  problems: string[]
}

interface Worker {
  readonly tag: string
  readonly child: ChildProcess
  readonly events: Record<string, unknown>[]
  readonly exited: Promise<void>
  ready: Promise<void>
}

const here = dirname(fileURLToPath(import.meta.url))
const SCHEMA = 'takeover'

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/**
 * Bundles the worker child into `outDir` and returns the file: a bundle starts in a fraction of the time
 * `node --import tsx` needs on a loaded box (see crash-runner.ts). Also used by the benchmark.
 */
export function bundleChild(outDir: string): Promise<string> {
  return bundleTestChild(join(here, 'takeover-child.ts'), outDir, ['pg-native'])
}

/** Runs the takeover scenario on a scratch database (dropped afterwards) and returns what it saw. */
export async function runTakeover(options: TakeoverOptions): Promise<TakeoverReport> {
  const started = Date.now()
  const log = options.log ?? (() => {})
  const random = prng(options.seed ?? 12)
  const sessionCount = options.sessions ?? 30
  const workerCount = options.workers ?? 3
  const leaseMs = options.leaseMs ?? 2000
  const stallEvery = options.stallEvery ?? 2
  const replace = options.replace ?? options.kills > workerCount - 1
  const dir = mkdtempSync(join(tmpdir(), 'll-takeover-'))
  const sideFile = join(dir, 'bodies.txt')
  const db = await createScratchDatabase('ll_takeover')
  const store = new PostgresStore({ connectionString: db.url, schema: SCHEMA })
  const pool = new pg.Pool({ connectionString: db.url, max: 2 })
  const stallsWanted = options.stalls ?? Math.max(1, Math.floor(options.kills / 4))
  const workers: Worker[] = []
  const report: TakeoverReport = {
    kills: 0,
    stalls: 0,
    sessions: sessionCount,
    prompts: 0,
    turns: 0,
    interruptedTurns: 0,
    outcomeUnknown: 0,
    toolBodies: 0,
    leaseLostOnFlush: 0,
    leaseLostOnRenewal: 0,
    workersStarted: 0,
    elapsedMs: 0,
    continuations: 0,
    killToContinuationMs: [],
    killToEachContinuationMs: [],
    problems: [],
  }
  try {
    const childFile = await bundleChild(dir)
    const ids = Array.from({ length: sessionCount }, (_, i) => `s${String(i).padStart(3, '0')}`)
    const sent = new Map<string, string[]>(ids.map((id) => [id, []]))
    const send = async (id: string): Promise<void> => {
      const prompts = sent.get(id) as string[]
      const text = `${id} prompt ${prompts.length + 1}`
      prompts.push(text)
      await store.send(id, { kind: 'followup', message: text })
    }
    await store.ready()
    for (const id of ids) await store.createDetached(new Session({ id }).header)

    const spawnWorker = (): Worker => {
      const tag = `w${report.workersStarted++}`
      const child = spawn(process.execPath, [childFile, db.url, SCHEMA, sideFile, tag, String(leaseMs)], { stdio: ['ignore', 'pipe', 'inherit'] })
      const events: Record<string, unknown>[] = []
      let readyResolve!: () => void
      const ready = new Promise<void>((r) => (readyResolve = r))
      createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
        try {
          const event = JSON.parse(line) as Record<string, unknown>
          events.push(event)
          if (event.type === 'ready') readyResolve()
        } catch {
          log(`${tag}: ${line}`)
        }
      })
      const exited = new Promise<void>((r) => child.once('exit', () => r()))
      const worker = { tag, child, events, exited, ready }
      workers.push(worker)
      return worker
    }
    const killed: { at: number; sessions: string[] }[] = []
    const live = (): Worker[] => workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null)
    for (let i = 0; i < workerCount; i++) spawnWorker()
    await Promise.all(workers.map((w) => w.ready))
    for (let round = 0; round < (options.followups ?? 3); round++) for (const id of ids) await send(id)

    for (let n = 1; n <= 4 * (options.kills + stallsWanted) && (report.kills < options.kills || report.stalls < stallsWanted); n++) {
      const stall = report.stalls < stallsWanted && (n % stallEvery === 0 || report.kills >= options.kills)
      if (live().length < 2) await spawnWorker().ready
      // Strike mid-turn: pick a live worker that owns a session whose open turn is on the database.
      let target: Worker | undefined
      let owned: string[] = []
      for (let waited = 0; target === undefined && waited < 10_000; waited += 20) {
        const busy = await pool.query<{ id: string; owner: string }>(
          `SELECT id, owner FROM ${store.tables.sessions} WHERE owner IS NOT NULL AND status = 'running' AND lease_until > now()`,
        )
        const byTag = new Map<string, string[]>()
        for (const row of busy.rows) {
          const tag = row.owner.split(':')[0] as string
          byTag.set(tag, [...(byTag.get(tag) ?? []), row.id])
        }
        const candidates = live().filter((w) => byTag.has(w.tag))
        if (candidates.length > 0) {
          target = candidates[Math.floor(random() * candidates.length)] as Worker
          owned = byTag.get(target.tag) as string[]
        } else {
          await sleep(20)
          if (waited > 0 && waited % 1000 === 0) for (const id of ids.filter(() => random() < 0.3)) await send(id)
        }
      }
      if (target === undefined) {
        log('no worker is running a turn; feeding more work')
        for (const id of ids.filter(() => random() < 0.3)) await send(id)
        continue
      }
      await sleep(Math.floor(random() * 40))
      if (stall) {
        target.child.kill('SIGSTOP')
        report.stalls++
        log(`stalled ${target.tag} owning ${owned.join(',')}`)
        // Past the lease, and until another worker has taken over at least one of its sessions.
        const until = Date.now() + 30_000
        await sleep(leaseMs)
        while (Date.now() < until) {
          const taken = await pool.query(`SELECT 1 FROM ${store.tables.sessions} WHERE id = ANY($1) AND (owner IS NULL OR owner NOT LIKE $2)`, [owned, `${target.tag}:%`])
          if ((taken.rowCount ?? 0) > 0) break
          await sleep(50)
        }
        target.child.kill('SIGCONT')
        log(`resumed ${target.tag}`)
      } else {
        target.child.kill('SIGKILL')
        killed.push({ at: Date.now(), sessions: owned })
        report.kills++
        log(`killed ${target.tag} owning ${owned.join(',')}`)
        await target.exited
        if (replace) await spawnWorker().ready
      }
      if (replace) for (const id of ids.filter(() => random() < 0.3)) await send(id)
    }

    // Let every session drain: prompts logged, turns closed, inbox empty, released.
    const deadline = Date.now() + 60_000 + options.kills * 500
    for (;;) {
      const open = await pool.query(
        `SELECT count(*)::int AS n FROM ${store.tables.sessions} s WHERE s.owner IS NOT NULL OR s.status <> 'idle' OR EXISTS (SELECT 1 FROM ${store.tables.inbox} i WHERE i.session_id = s.id)`,
      )
      if ((open.rows[0] as { n: number }).n === 0) break
      if (Date.now() > deadline) {
        report.problems.push(`${(open.rows[0] as { n: number }).n} sessions still busy at the deadline`)
        break
      }
      await sleep(100)
    }
    for (const w of live()) w.child.kill('SIGTERM')
    await Promise.all(workers.map((w) => w.exited))

    const bodies = existsSync(sideFile) ? readFileSync(sideFile, 'utf8').split('\n').filter((l) => l !== '') : []
    report.toolBodies = bodies.length
    const bodyCount = new Map<string, number>()
    for (const line of bodies) {
      const key = line.split(' ').slice(0, 2).join(' ')
      bodyCount.set(key, (bodyCount.get(key) ?? 0) + 1)
    }
    for (const [key, count] of bodyCount) if (count > 1) report.problems.push(`tool body ${key} ran ${count} times`)
    const logs = new Map<string, readonly SessionEvent[]>()
    for (const id of ids) logs.set(id, (await store.read(id)).events)
    for (const [id, events] of logs) checkSession(id, events, sent.get(id) as string[], bodyCount, report)
    for (const kill of killed) {
      // The continuation's first request: its first step/start (logged as the request is built). A continuation
      // that ends without a request (the answer was complete) counts from its turn/start.
      const firstRequests = new Map<string, number>()
      for (const id of kill.sessions) {
        const log = logs.get(id) ?? []
        const start = log.findIndex((e) => e.type === 'turn/start' && (e.data as { continues?: number }).continues !== undefined && e.time >= kill.at)
        if (start < 0) continue
        const step = log.slice(start).find((e) => e.type === 'step/start' || e.type === 'turn/end')
        firstRequests.set(id, (step?.type === 'step/start' ? step : log[start])?.time ?? Number.NaN)
      }
      const first = Math.min(...firstRequests.values())
      if (Number.isFinite(first)) report.killToContinuationMs.push(first - kill.at)
      for (const at of firstRequests.values()) if (Number.isFinite(at)) report.killToEachContinuationMs.push(at - kill.at)
    }
    const troubled = new Set(report.problems.map((p) => p.split(':')[0]))
    for (const w of workers) {
      for (const e of w.events) {
        if (troubled.has(String(e.sessionId))) log(`${w.tag}: ${JSON.stringify(e)}`)
        if (e.type === 'lease-lost' && e.during === 'flush') report.leaseLostOnFlush++
        if (e.type === 'lease-lost' && e.during === 'renewal') report.leaseLostOnRenewal++
        if (e.type === 'error') report.problems.push(`${w.tag}: ${String(e.code)} ${String(e.message)}`)
      }
    }
  } finally {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL')
    await Promise.all(workers.map((w) => w.exited))
    await store.close()
    await pool.end()
    await db.drop()
    rmSync(dir, { recursive: true, force: true })
  }
  report.elapsedMs = Date.now() - started
  return report
}

function checkSession(id: string, events: readonly SessionEvent[], sent: readonly string[], bodies: ReadonlyMap<string, number>, report: TakeoverReport): void {
  const problems = verifySessionLog(events).problems
  if (problems.length > 0) report.problems.push(`${id}: ${problems.slice(0, 3).join('; ')}`)
  const starts = events.filter((e) => e.type === 'turn/start').length
  const ends = events.filter((e) => e.type === 'turn/end')
  if (starts !== ends.length) report.problems.push(`${id}: ${starts} turns started, ${ends.length} ended`)
  report.turns += ends.length
  report.interruptedTurns += ends.filter((e) => (e.data as { reason: { kind: string } }).reason.kind === 'interrupted').length
  events.forEach((e, i) => {
    if (e.seq !== i) report.problems.push(`${id}: event ${i} has seq ${e.seq}`)
  })
  // Each prompt sent reaches the log exactly once (the inbox row and its event change hands atomically), in the
  // order sent, and the model exactly once: a prompt whose turn was interrupted before its step opened is
  // restored to the inbox by repair, and interrupted work is continued (issue 24).
  const delivered: string[] = []
  const surfaced: string[] = []
  for (const e of events) {
    const d = e.data as Record<string, unknown>
    if (e.type === 'turn/start' && d.continues !== undefined) report.continuations++
    if (e.type === 'agent/inbox/spliced' && d.target === 'next-turn' && d.restores === undefined) {
      delivered.push(...(d.inserted as { content: { text?: string }[] }[]).map((m) => m.content[0]?.text ?? ''))
    } else if (e.type === 'user/message' && (d.source as { kind: string }).kind === 'user') {
      surfaced.push((d.content as { text?: string }[])[0]?.text ?? '')
    }
  }
  try {
    checkEveryPromptAnswered(events, (why) => {
      throw new Error(why)
    })
  } catch (error) {
    report.problems.push(`${id}: ${(error as Error).message}; log: ${describeLog(events)}`)
  }
  report.prompts += delivered.length
  if (JSON.stringify(delivered) !== JSON.stringify(sent)) {
    report.problems.push(`${id}: delivered ${JSON.stringify(delivered)} != sent ${JSON.stringify(sent)}; log: ${describeLog(events)}`)
  }
  const missing = sent.filter((p) => !surfaced.includes(p))
  if (missing.length > 0 || new Set(surfaced).size !== surfaced.length) {
    report.problems.push(`${id}: prompts seen ${JSON.stringify(surfaced)} of ${JSON.stringify(sent)}; log: ${describeLog(events)}`)
  }
  const results = new Map<string, string | undefined>()
  for (const e of events) {
    if (e.type !== 'tool/result') continue
    const data = e.data as { message: { source: { callId: string } }; error?: { code?: string } }
    results.set(data.message.source.callId, data.error?.code)
  }
  for (const e of events) {
    if (e.type !== 'tool/call') continue
    const callId = (e.data as { callId: string }).callId
    const ran = bodies.get(`${id} ${callId}`) ?? 0
    const code = results.get(callId)
    if (code === 'TOOL_OUTCOME_UNKNOWN') report.outcomeUnknown++
    // A call answered normally ran exactly once; one answered by repair or a cancel ran at most once.
    else if (code === undefined && ran !== 1) report.problems.push(`${id}: completed call ${callId} ran ${ran} times`)
  }
  for (const key of bodies.keys()) {
    if (!key.startsWith(`${id} `)) continue
    const callId = key.slice(id.length + 1)
    if (!events.some((e) => e.type === 'tool/call' && (e.data as { callId: string }).callId === callId)) report.problems.push(`${id}: body of ${callId} ran without a logged tool/call`)
  }
}

/** A compact account of a log for failure messages: boundaries, inbox splices and prompts. */
function describeLog(events: readonly SessionEvent[]): string {
  return events
    .filter((e) => e.type !== 'assistant/chunk')
    .map((e) => {
      const d = e.data as Record<string, unknown>
      if (e.type === 'agent/inbox/spliced') {
        const inserted = (d.inserted as { content: { text?: string }[] }[]).map((m) => m.content[0]?.text)
        return `${e.seq}:splice(${String(d.target)},${String(d.start)},-${String(d.removedCount ?? 0)},+${JSON.stringify(inserted)})`
      }
      if (e.type === 'user/message') return `${e.seq}:user(${String((d.content as { text?: string }[])[0]?.text)})`
      if (e.type === 'turn/end') return `${e.seq}:turn/end(${JSON.stringify(d.reason)})`
      return `${e.seq}:${e.type}`
    })
    .join(' ')
}
