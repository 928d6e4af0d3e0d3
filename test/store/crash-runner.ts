/**
 * The kill -9 test (issue 5): children run scripted sessions on a JsonlStore (or, with `store: 'sqlite'`, on
 * one SqliteStore database they all share: issue 22) and are SIGKILLed at random moments; after every kill the parent checks that nothing flushed was lost, the log loads and verifies, resume
 * completes a turn, and no tool call ran twice — in the sessions and in their sub-agents' sessions. Shared by `test/store/crash.test.ts` and `npm run crash`.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { checkEveryPromptAnswered } from '../support/answered-prompts.js'
import { bundleSqliteChild, prng } from '../support/child-process-kit.js'
import { z } from 'zod'
import { closerEvents, createHarness, defineTool, scriptedAdapter, verifySessionLog, type SessionEvent, type SessionStore } from '../../src/index.js'
import { JsonlStore } from '../../src/store/jsonl/jsonl-store.js'
import { SqliteStore } from '../../src/store/sqlite.js'

/** Options of {@link runCrashTest}. */
export interface CrashTestOptions {
  readonly kills: number
  readonly seed: number
  /** Sessions each child spreads its work over. */
  readonly sessions?: number
  /** Consecutive children that share one set of sessions (bounds how long a session grows). */
  readonly childrenPerSessionSet?: number
  /** Longest a child runs on before the kill (ms), counted from its first reported flush for most kills; each kill picks 10..this from the seeded PRNG. */
  readonly maxRunMs?: number
  /** Children kept loaded and waiting, so a child's startup overlaps the previous child's run. */
  readonly warmChildren?: number
  /** Where the children keep their sessions (default `jsonl`: a folder of files; `sqlite`: one database). */
  readonly store?: 'jsonl' | 'sqlite'
  /** Progress lines. */
  readonly log?: (line: string) => void
}

/** The store the children and the parent's checks use, and how the parent tells that a session changed. */
interface CrashStore {
  /** The location passed to each child: a folder, or `sqlite:PATH`. */
  readonly spec: string
  open(): SessionStore
  /** Changes whenever something is committed to the session. */
  signature(id: string): string
  /** Releases what {@link signature} holds open. */
  close(): void
}

function jsonlCrashStore(dir: string): CrashStore {
  mkdirSync(dir, { mode: 0o700 })
  const reader = new JsonlStore({ dir })
  return {
    spec: dir,
    open: () => new JsonlStore({ dir }),
    signature: (id) => {
      const stats = statSync(reader.pathOf(id))
      return `${stats.size}:${stats.mtimeMs}`
    },
    close: () => {},
  }
}

async function sqliteCrashStore(path: string): Promise<CrashStore> {
  // The schema exists before the first child starts (the children's own racing opens are tested elsewhere).
  await new SqliteStore({ path }).close()
  let db: Database.Database | undefined
  return {
    spec: `sqlite:${path}`,
    open: () => new SqliteStore({ path }),
    // Every commit moves next_seq: a session's counter says whether anything was committed since the last look.
    signature: (id) => {
      db ??= new Database(path, { readonly: true })
      return String((db.prepare('SELECT next_seq FROM sessions WHERE id = ?').get(id) as { next_seq: number } | undefined)?.next_seq)
    },
    close: () => db?.close(),
  }
}

/** What a crash run observed. */
export interface CrashReport {
  kills: number
  flushReports: number
  toolExecutions: number
  repairedTurns: number
  tornTails: number
  resumedTurns: number
  /** Events in the sessions the parent resumed, summed over kills. */
  events: number
  elapsedMs: number
  /** Time spent waiting for a loaded child (startup not hidden by the warm pool). */
  waitingForChildMs: number
  /** Time spent checking after kills. */
  checkingMs: number
  /** Distinct sub-agent sessions checked (and resumed when a kill touched them). */
  childSessions: number
  /** Tool executions inside sub-agent sessions. */
  childToolExecutions: number
  /** Parent `task` calls a kill interrupted, answered `TOOL_OUTCOME_UNKNOWN` by repair. */
  interruptedTaskCalls: number
  /** Sub-agent sessions resumed to a completed turn after a kill. */
  resumedChildren: number
  /** Continuation turns the resumes started (each carries on a turn a kill interrupted). */
  continuations: number
  /** Prompts the sessions' logs hold (durably sent), each checked to be answered once by a completed turn. */
  promptsAnswered: number
  /** Input a kill had claimed before its `user/message` and repair put back (`restores`). */
  restoredInputs: number
  /** `safe` calls a kill cut off that the continuation ran again (`tool/call` with `of`). */
  safeReruns: number
  /** Milliseconds from each kill to its continuation's first model request, one per continuation that sent one. */
  killToContinuationMs: number[]
}

const here = dirname(fileURLToPath(import.meta.url))

/** Bundles the child once (see bundleTestChild): the test starts a child per kill. */
function bundleChild(outDir: string): Promise<string> {
  return bundleSqliteChild(join(here, 'crash-child.ts'), outDir)
}

interface Child {
  /** Prefix of the session ids this child works on. */
  readonly prefix: string
  readonly process: ChildProcess
  readonly lines: string[]
  readonly ready: Promise<void>
  readonly exited: Promise<void>
}

function startChild(script: string, args: string[], prefix: string): Child {
  const child = spawn(process.execPath, [script, ...args, prefix], { stdio: ['pipe', 'pipe', 'pipe'] })
  const lines: string[] = []
  let partial = ''
  let stderr = ''
  let markReady!: () => void
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    const parts = (partial + text).split('\n')
    partial = parts.pop() as string
    for (const line of parts) {
      if (line === 'READY') markReady()
      else lines.push(line)
    }
  })
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text))
  const exited = new Promise<void>((resolve, reject) => {
    child.on('exit', (code, signal) => {
      if (partial !== '') lines.push(partial) // a line cut by the kill is not a report; parse() ignores it
      if (signal === 'SIGKILL') resolve()
      else reject(new Error(`crash child exited by itself (code ${code}, signal ${signal}): ${stderr}${lines.join('\n')}`))
    })
  })
  exited.catch(() => {})
  return { prefix, process: child, lines, ready, exited }
}

/**
 * Runs the crash test. Throws on the first violated guarantee, naming the kill and the session.
 */
export async function runCrashTest(options: CrashTestOptions): Promise<CrashReport> {
  const started = Date.now()
  const random = prng(options.seed)
  const sessions = options.sessions ?? 3
  const maxRunMs = options.maxRunMs ?? 250
  const warm = options.warmChildren ?? 2
  const perSet = options.childrenPerSessionSet ?? 5
  const root = mkdtempSync(join(tmpdir(), 'll-crash-'))
  const crashStore = options.store === 'sqlite' ? await sqliteCrashStore(join(root, 'sessions.db')) : jsonlCrashStore(join(root, 'sessions'))
  const sideFile = join(root, 'executions.txt')
  const report: CrashReport = { kills: 0, flushReports: 0, toolExecutions: 0, repairedTurns: 0, tornTails: 0, resumedTurns: 0, events: 0, elapsedMs: 0, waitingForChildMs: 0, checkingMs: 0, childSessions: 0, childToolExecutions: 0, interruptedTaskCalls: 0, resumedChildren: 0, continuations: 0, promptsAnswered: 0, restoredInputs: 0, safeReruns: 0, killToContinuationMs: [] }
  const executed = new Map<string, string>() // callId → session
  const checked = new Map<string, string>() // session → file signature after its last check
  const subagentIds = new Set<string>() // every sub-agent session seen
  const script = await bundleChild(root)
  const pool: Child[] = []
  let spawned = 0
  const refill = (): void => {
    while (pool.length < warm) {
      const prefix = `g${Math.floor(spawned / perSet)}-`
      pool.push(startChild(script, [crashStore.spec, sideFile, `k${spawned++}`, String(Math.floor(random() * 2 ** 31)), String(sessions)], prefix))
    }
  }
  try {
    refill()
    for (let kill = 1; kill <= options.kills; kill++) {
      const child = pool.shift() as Child
      refill()
      const waitStart = Date.now()
      await child.ready
      report.waitingForChildMs += Date.now() - waitStart
      child.process.stdin?.write('go\n')
      // Most kills wait for the child's first reported flush before the random delay starts: on a loaded
      // machine a child may do nothing at all in 250 ms of wall-clock time, and then the kills test nothing.
      // The rest still land at any moment, start-up included.
      await progressed(child, random() < 0.8 ? 1 : 0)
      await new Promise((r) => setTimeout(r, 10 + Math.floor(random() * Math.max(0, maxRunMs - 10))))
      child.process.kill('SIGKILL')
      const killedAt = Date.now()
      await child.exited // reaped: its pid is dead, so its stale lock may be taken over
      const error = child.lines.find((l) => l.startsWith('ERROR'))
      if (error !== undefined) throw new Error(`kill ${kill}: the child failed before the kill: ${error}`)
      const checkStart = Date.now()
      await checkAfterKill({ kill, killedAt, crashStore, sideFile, child, executed, checked, report, sessions, subagentIds })
      report.checkingMs += Date.now() - checkStart
      report.kills = kill
      if (kill % 25 === 0) options.log?.(`${kill} kills, ${report.flushReports} flushes checked, ${report.toolExecutions} tool runs, ${report.repairedTurns} repaired turns`)
    }
  } finally {
    for (const child of pool) child.process.kill('SIGKILL')
    await Promise.allSettled(pool.map((c) => c.exited))
    crashStore.close()
    rmSync(root, { recursive: true, force: true })
  }
  report.elapsedMs = Date.now() - started
  return report
}

/** Resolves once the child reported `flushes` flushes (or after 5 s, or when it died). */
async function progressed(child: Child, flushes: number): Promise<void> {
  const deadline = Date.now() + 5_000
  let exited = false
  child.exited.then(
    () => (exited = true),
    () => (exited = true),
  )
  while (!exited && Date.now() < deadline && child.lines.filter((l) => l.startsWith('F ')).length < flushes) {
    await new Promise((r) => setTimeout(r, 5))
  }
}

/** What the checks after one kill look at: the run so far and the child that was killed. */
interface KillCheck {
  readonly kill: number
  /** When the child was SIGKILLed (for the time to its continuation's first request). */
  readonly killedAt: number
  readonly crashStore: CrashStore
  readonly sideFile: string
  readonly child: Child
  readonly executed: Map<string, string>
  readonly checked: Map<string, string>
  readonly report: CrashReport
  readonly sessions: number
  readonly subagentIds: Set<string>
}

async function checkAfterKill(check: KillCheck): Promise<void> {
  const { kill, crashStore, child, report } = check
  const fail = (id: string, why: string): never => {
    throw new Error(`kill ${kill}, session ${id}: ${why}`)
  }
  // Highest flushed seq (and its type) per session, as the child reported them.
  const flushed = new Map<string, { seq: number; type: string }[]>()
  for (const line of child.lines) {
    const m = /^F (\S+) (\d+) (\S+)$/.exec(line)
    if (m === null) continue
    const list = flushed.get(m[1] as string) ?? []
    list.push({ seq: Number(m[2]), type: m[3] as string })
    flushed.set(m[1] as string, list)
    report.flushReports++
  }
  const store = crashStore.open()
  try {
    await checkStore(check, store, flushed, fail)
  } finally {
    await store.close()
  }
}

async function checkStore(
  check: KillCheck,
  store: SessionStore,
  flushed: Map<string, { seq: number; type: string }[]>,
  fail: (id: string, why: string) => never,
): Promise<void> {
  const { kill, killedAt, crashStore, sideFile, child, executed, checked, report, sessions, subagentIds } = check
  const logs = new Map<string, readonly SessionEvent[]>()
  const allLogs = new Map<string, readonly SessionEvent[]>()
  // The child's sessions, then their sub-agents' sessions (same store, linked by header).
  const parents = Array.from({ length: sessions }, (_, s) => `${child.prefix}s${s}`)
  const subagents = (await store.list()).filter((r) => r.parentCallId !== undefined && r.parentSession?.startsWith(child.prefix) === true).map((r) => r.id)
  for (const id of subagents) subagentIds.add(id)
  report.childSessions = subagentIds.size
  for (const id of [...parents, ...subagents]) {
    if (!(await store.has(id))) {
      if (flushed.has(id)) fail(id, 'flushes were reported but the session file does not exist')
      continue
    }
    const changed = checked.get(id) !== crashStore.signature(id)
    if (!changed && flushed.has(id)) fail(id, 'flushes were reported but the file did not change')
    const stored = await store.read(id)
    if (stored.tailRepair !== undefined) report.tornTails++
    for (const { seq, type } of flushed.get(id) ?? []) {
      if (stored.events[seq]?.type !== type) fail(id, `seq ${seq} (${type}) was reported flushed but the log has ${stored.events[seq]?.type ?? 'nothing'} there`)
    }
    const repaired = [...stored.events, ...closerEvents(stored.events)]
    const verdict = verifySessionLog(repaired)
    if (!verdict.ok) fail(id, `the repaired log does not verify: ${verdict.problems.join('; ')}`)
    if (repaired.length > stored.events.length) report.repairedTurns++
    // A parent killed while a sub-agent ran: its task call is answered "outcome unknown", like any tool.
    const taskCalls = new Set(stored.events.filter((e) => e.type === 'tool/call' && (e.data as { name?: string }).name === 'task').map((e) => e.seq))
    for (const closer of repaired.slice(stored.events.length)) {
      if ((closer.data as { error?: { code?: string } }).error?.code === 'TOOL_OUTCOME_UNKNOWN' && taskCalls.has(closer.sourceEventSeqs?.[0] ?? -1)) report.interruptedTaskCalls++
    }
    allLogs.set(id, stored.events)
    // A session the child did not touch was verified and resumed after an earlier kill.
    if (changed) logs.set(id, stored.events)
  }
  // Every execution is unique and was logged (tool/call flushed) before it ran.
  const side = existsSync(sideFile) ? readFileSync(sideFile, 'utf8').split('\n') : []
  side.pop() // complete lines only
  for (const line of side.slice(report.toolExecutions)) {
    const [id, callId, tool] = line.split(' ') as [string, string, string | undefined]
    // `look` is replay-safe: a continuation may run it again after a kill cut it off. Every other body runs once.
    if (executed.has(callId) && tool !== 'look') fail(id, `tool call ${callId} executed twice`)
    executed.set(callId, id)
    if (subagentIds.has(id)) report.childToolExecutions++
    const log = allLogs.get(id) ?? fail(id, `tool call ${callId} ran in a session this child does not own`)
    if (!log.some((e) => e.type === 'tool/call' && (e.data as { callId?: string }).callId === callId)) fail(id, `tool call ${callId} ran without a logged tool/call`)
  }
  report.toolExecutions = side.length
  // Resume continues what the kill interrupted, then completes the next turn, on every session.
  let events = 0
  for (const id of logs.keys()) {
    let calls = 0
    let firstRequestAt: number | undefined
    const model = scriptedAdapter({
      script: (request) => {
        firstRequestAt ??= Date.now()
        return request.messages[request.messages.length - 1]?.content[0]?.type === 'tool-result'
          ? { text: ['resumed', ' fine', '.'] }
          : { toolCalls: [{ id: `p${kill}-${id}-${calls++}`, name: 'record', arguments: { note: 'parent' } }] }
      },
      models: { m1: { contextWindow: 1_000_000 } },
    })
    const record = defineTool({
      name: 'record',
      description: 'Records that it ran',
      parameters: z.object({ note: z.string() }),
      execute: () => 'recorded',
    })
    const look = defineTool({ name: 'look', description: 'Looks (replay-safe)', parameters: z.object({ note: z.string() }), replay: 'safe', execute: () => 'looked' })
    const harness = createHarness({ store: crashStore.open(), adapters: [model], tools: [record, look], onListenerError: () => {} })
    try {
      const before = allLogs.get(id)?.length ?? 0
      const agent = await harness.resumeAgent(id, { provider: 'scripted', model: 'm1', quarantineAfter: 1_000 })
      const continued = agent.session.events.slice(before).some((e) => e.type === 'turn/start' && (e.data as { continues?: number }).continues !== undefined)
      await agent.whenIdle()
      if (continued) {
        report.continuations++
        if (firstRequestAt !== undefined) report.killToContinuationMs.push(firstRequestAt - killedAt)
      }
      agent.followup('after the crash')
      await agent.whenIdle()
      const final = agent.session.events
      const end = final.at(-1)
      if (end?.type !== 'turn/end' || (end.data as { reason: { kind: string } }).reason.kind !== 'completed') fail(id, `the resumed turn did not complete: ${JSON.stringify(end)}`)
      const verdict = verifySessionLog(final)
      if (!verdict.ok) fail(id, `the log after resume does not verify: ${verdict.problems.join('; ')}`)
      const answered = checkEveryPromptAnswered(final, (why) => fail(id, why))
      report.promptsAnswered += answered.prompts
      report.restoredInputs += answered.restored
      report.safeReruns += final.slice(before).filter((e) => e.type === 'tool/call' && (e.data as { of?: number }).of !== undefined).length
      report.resumedTurns++
      if (subagentIds.has(id)) report.resumedChildren++
      events += agent.session.length
    } finally {
      await harness.close()
    }
    checked.set(id, crashStore.signature(id))
  }
  report.events += events
}
