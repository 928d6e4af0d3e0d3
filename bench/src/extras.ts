// The rows that are not one agent turn: loading a long session, listing many sessions, PostgreSQL per step.
// Fixtures are built untimed once and cached under bench/.cache (keyed by a hash of the main package's dist/,
// so a rebuilt library gets fresh fixtures); every timed figure comes from a fresh process.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createConnection } from 'node:net'
import { join, relative, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { RESULT_PREFIX } from './protocol.ts'

export type Log = (message: string) => void

interface Script {
  readonly node: string
  readonly args: readonly string[]
  readonly cwd: string
  readonly timeoutMs: number
}

/** Runs a script, returns its `@@bench-result` object (or a failure) and its wall time. */
export function runScript(script: Script): Promise<{ result: Record<string, unknown>; wallMs: number }> {
  const t0 = performance.now()
  return new Promise((done) => {
    const child = spawn(script.node, [...script.args], { cwd: script.cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NODE_ENV: 'production' } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const timer = setTimeout(() => child.kill('SIGKILL'), script.timeoutMs)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const wallMs = performance.now() - t0
      const line = stdout.split('\n').find((l) => l.startsWith(RESULT_PREFIX))
      if (line) return done({ result: JSON.parse(line.slice(RESULT_PREFIX.length)) as Record<string, unknown>, wallMs })
      const why = signal === 'SIGKILL' ? `killed after ${script.timeoutMs / 1000} s` : `exited ${code ?? signal} without a result`
      const tail = stderr.trim().split('\n').slice(-3).join(' | ')
      done({ result: { ok: false, error: tail ? `${why}: ${tail}` : why }, wallMs })
    })
  })
}

/** A short hash of every file under the main package's dist/: fixtures built by another build are rebuilt. */
export function distHash(distDir: string): string {
  const hash = createHash('sha1')
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.isFile()) hash.update(relative(distDir, path)).update(readFileSync(path))
    }
  }
  walk(distDir)
  return hash.digest('hex').slice(0, 12)
}

/** A cached fixture folder: `build` runs once per (name, dist hash); older builds of the same name are removed. */
async function cachedFixture(
  cacheDir: string, name: string, hash: string, log: Log,
  build: (dir: string) => Promise<Record<string, unknown>>,
): Promise<{ dir: string; meta: Record<string, unknown>; cached: boolean }> {
  mkdirSync(cacheDir, { recursive: true })
  const dir = join(cacheDir, `${name}-${hash}`)
  const marker = join(dir, '.bench-fixture.json')
  if (existsSync(marker)) return { dir, meta: JSON.parse(readFileSync(marker, 'utf8')) as Record<string, unknown>, cached: true }
  for (const old of readdirSync(cacheDir)) if (old.startsWith(`${name}-`)) rmSync(join(cacheDir, old), { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  log(`building fixture ${name} (untimed, cached in ${relative(process.cwd(), dir) || dir})`)
  const meta = await build(dir)
  if (meta['ok'] !== true) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`fixture ${name}: ${String(meta['error'])}`)
  }
  writeFileSync(marker, JSON.stringify(meta))
  return { dir, meta, cached: false }
}

export interface ExtrasContext {
  readonly benchDir: string
  readonly node: string
  readonly hash: string
  readonly log: Log
}

/** One timed load of a long session in a fresh process. */
export interface LoadRun {
  readonly resumeMs: number
  readonly foldMs: number
  readonly rssMiB: number
}

export interface LoadResult {
  readonly store: string
  readonly targetEvents: number
  readonly events?: number
  readonly buildS?: number
  readonly cached?: boolean
  readonly runs: readonly LoadRun[]
  readonly error?: string
}

/** Builds (or reuses) a session of at least `events` events in `store`, then times `runs` loads. */
export async function measureLoad(ctx: ExtrasContext, store: 'jsonl' | 'sqlite', events: number, runs: number): Promise<LoadResult> {
  const script = join(ctx.benchDir, '.build/ledgerloop-load.mjs')
  const cacheDir = join(ctx.benchDir, '.cache')
  try {
    const fixture = await cachedFixture(cacheDir, `load-${store}-${events}`, ctx.hash, ctx.log, async (dir) =>
      (await runScript({ node: ctx.node, args: ['--max-old-space-size=8192', script, 'build', '--store', store, '--events', String(events), '--dir', dir], cwd: ctx.benchDir, timeoutMs: 1_800_000 })).result)
    const id = String(fixture.meta['id'])
    const list: LoadRun[] = []
    for (let i = 0; i < runs; i++) {
      const { result } = await runScript({ node: ctx.node, args: ['--expose-gc', '--max-old-space-size=8192', script, 'load', '--store', store, '--dir', fixture.dir, '--id', id], cwd: ctx.benchDir, timeoutMs: 300_000 })
      if (result['ok'] !== true) throw new Error(`load: ${String(result['error'])}`)
      const run = { resumeMs: Number(result['resumeMs']), foldMs: Number(result['foldMs']), rssMiB: Number(result['maxRssKiB']) / 1024 }
      list.push(run)
      ctx.log(`load ${store} ${Number(result['events']).toLocaleString('en-US')} events run ${i + 1}/${runs}: resume ${run.resumeMs.toFixed(0)} ms, fold ${run.foldMs.toFixed(0)} ms, peak RSS ${run.rssMiB.toFixed(0)} MiB`)
    }
    return { store, targetEvents: events, events: Number(fixture.meta['events']), buildS: Number(fixture.meta['buildMs']) / 1000, cached: fixture.cached, runs: list }
  } catch (error) {
    return { store, targetEvents: events, runs: [], error: error instanceof Error ? error.message : String(error) }
  }
}

/** One timed listing in a fresh process. */
export interface ListRun {
  /** `store.list({ limit: 20 })` from constructing the store to the rows (first call in the process). */
  readonly listMs: number
  /** The same call again in the same process. */
  readonly warmMs: number
  /** `ledgerloop sessions --limit 20 --json` wall time on the folder, and on an empty folder. */
  readonly cliMs: number
  readonly cliEmptyMs: number
  /** The difference: the command's work beyond starting up. */
  readonly cliWorkMs: number
  readonly limitHonoured: boolean
}

export interface SessionsResult {
  readonly count: number
  readonly runs: readonly ListRun[]
  readonly buildS?: number
  readonly cached?: boolean
  readonly error?: string
}

/** Builds (or reuses) a JSONL folder of `count` sessions, then times `runs` listings of the 20 most recent. */
export async function measureSessions(ctx: ExtrasContext, count: number, runs: number): Promise<SessionsResult> {
  const script = join(ctx.benchDir, '.build/ledgerloop-sessions.mjs')
  const cli = resolve(ctx.benchDir, '..', 'dist/cli/main.js')
  const cacheDir = join(ctx.benchDir, '.cache')
  const empty = join(ctx.benchDir, '.tmp', 'empty-sessions')
  try {
    const fixture = await cachedFixture(cacheDir, `sessions-${count}`, ctx.hash, ctx.log, async (dir) =>
      (await runScript({ node: ctx.node, args: [script, 'build', '--count', String(count), '--dir', dir], cwd: ctx.benchDir, timeoutMs: 3_600_000 })).result)
    const sessionsCli = (dir: string) => runScript({ node: ctx.node, args: [cli, 'sessions', '--store', dir, '--limit', '20', '--json'], cwd: ctx.benchDir, timeoutMs: 600_000 })
    const list: ListRun[] = []
    for (let i = 0; i < runs; i++) {
      const { result } = await runScript({ node: ctx.node, args: [script, 'list', '--dir', fixture.dir], cwd: ctx.benchDir, timeoutMs: 600_000 })
      if (result['ok'] !== true) throw new Error(`list: ${String(result['error'])}`)
      rmSync(empty, { recursive: true, force: true })
      mkdirSync(empty, { recursive: true, mode: 0o700 })
      // Alternate which goes first, so a warming disk cache favours neither.
      const [a, b] = i % 2 === 0 ? [fixture.dir, empty] : [empty, fixture.dir]
      const first = await sessionsCli(a)
      const second = await sessionsCli(b)
      const [full, base] = i % 2 === 0 ? [first, second] : [second, first]
      const run: ListRun = {
        listMs: Number(result['listMs']), warmMs: Number(result['warmMs']),
        cliMs: full.wallMs, cliEmptyMs: base.wallMs, cliWorkMs: full.wallMs - base.wallMs, limitHonoured: result['limitHonoured'] === true,
      }
      list.push(run)
      ctx.log(`sessions ${count.toLocaleString('en-US')} run ${i + 1}/${runs}: list(limit 20) ${run.listMs.toFixed(1)} ms (warm ${run.warmMs.toFixed(1)} ms${run.limitHonoured ? '' : ', limit ignored: whole list'}), CLI work ${run.cliWorkMs.toFixed(0)} ms`)
    }
    return { count, runs: list, buildS: Number(fixture.meta['buildMs']) / 1000, cached: fixture.cached }
  } catch (error) {
    return { count, runs: [], error: error instanceof Error ? error.message : String(error) }
  } finally {
    rmSync(empty, { recursive: true, force: true })
  }
}

export interface PostgresRun {
  readonly storeMs: number
  readonly floorMs: number
}

export interface PostgresResult {
  readonly runs: readonly PostgresRun[]
  readonly steps: number
  /** Why it did not run (no server, or the script failed). */
  readonly skipped?: string
}

/** Does something accept TCP connections at host:port within a second? */
function answers(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = createConnection({ host, port })
    const finish = (ok: boolean) => {
      socket.destroy()
      done(ok)
    }
    socket.setTimeout(1000, () => finish(false))
    socket.once('connect', () => finish(true))
    socket.once('error', () => finish(false))
  })
}

/** `micro/postgres-workers.ts --per-step-only` `runs` times (store and floor back to back, order alternating). */
export async function measurePostgres(ctx: ExtrasContext, runs: number, steps: number): Promise<PostgresResult> {
  if (!(await answers('127.0.0.1', 5432))) return { runs: [], steps, skipped: 'no PostgreSQL answers at 127.0.0.1:5432' }
  const root = resolve(ctx.benchDir, '..')
  const tsx = join(root, 'node_modules/tsx/dist/cli.mjs')
  if (!existsSync(tsx)) return { runs: [], steps, skipped: 'tsx missing in the main package (run npm ci at the top level)' }
  const list: PostgresRun[] = []
  for (let i = 0; i < runs; i++) {
    const args = [tsx, 'bench/micro/postgres-workers.ts', '--per-step-only', '--json', '--steps', String(steps), ...(i % 2 === 1 ? ['--floor-first'] : [])]
    const { result } = await runScript({ node: ctx.node, args, cwd: root, timeoutMs: 300_000 })
    if (result['ok'] !== true) return { runs: list, steps, skipped: `the script failed: ${String(result['error'])}` }
    const run = { storeMs: Number(result['storeMs']), floorMs: Number(result['floorMs']) }
    list.push(run)
    ctx.log(`postgres run ${i + 1}/${runs}: store ${run.storeMs.toFixed(2)} ms/step, floor ${run.floorMs.toFixed(2)} ms/step`)
  }
  return { runs: list, steps }
}
