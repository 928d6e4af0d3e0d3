/**
 * What the long-session micro benches share (fork.ts, reopen.ts, sqlite-floor.ts): the built library loaded from
 * a dist folder, the original harness's long-session shape recorded through the loop, the floors of reading a
 * stored session (every line `JSON.parse`d), fresh-process measurement, and the statistics of the rows.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { isAbsolute, join } from 'node:path'
import { pathToFileURL } from 'node:url'

/** The full bench's result-line prefix (bench/src/protocol.ts; not imported: the root tsconfig checks this file). */
export const RESULT_PREFIX = '@@bench-result '

/** The built library's entry points. */
export type Lib = typeof import('../../src/index.js')
export type SqliteLib = typeof import('../../src/store/sqlite.js')

/** The library as built in `dist` (relative to the working directory unless absolute): what users run. */
export function builtLibrary(dist = 'dist'): { readonly dir: string; lib(): Promise<Lib>; sqlite(): Promise<SqliteLib> } {
  const dir = isAbsolute(dist) ? dist : join(process.cwd(), dist)
  return {
    dir,
    lib: async () => (await import(pathToFileURL(join(dir, 'index.js')).href)) as Lib,
    sqlite: async () => (await import(pathToFileURL(join(dir, 'store/sqlite.js')).href)) as SqliteLib,
  }
}

/** The original harness's session shape: turns of one step streaming reasoning and text deltas. */
export interface LongShape {
  readonly turns: number
  readonly reasoning: number
  readonly text: number
}

/**
 * Records session `id` of `shape` on `store` through the loop (scripted model, public API), then closes the
 * harness (and with it the store).
 */
export async function recordLongSession(lib: Lib, store: import('../../src/index.js').SessionStore, id: string, shape: LongShape): Promise<void> {
  const step = {
    reasoning: Array.from({ length: shape.reasoning }, (_, i) => `thinking ${i} `),
    text: Array.from({ length: shape.text }, (_, i) => `word${i} `),
    usage: { inputTokens: 100, outputTokens: 50 },
  }
  const model = lib.scriptedAdapter({ recordRequests: false, script: Array.from({ length: shape.turns }, () => step), models: { m1: { contextWindow: 10_000_000 } } })
  const harness = lib.createHarness({ store, adapters: [model] })
  const agent = await harness.createAgent({ provider: 'scripted', model: 'm1', sessionId: id })
  for (let t = 0; t < shape.turns; t++) await agent.run(`prompt ${t}`)
  await agent.dispose()
  await harness.close()
}

/** The JSONL floor: `readFileSync` of the log and `JSON.parse` of every line. */
export function readJsonlFloor(path: string): { readonly ms: number; readonly records: number } {
  const t0 = performance.now()
  const text = readFileSync(path, 'utf8')
  let records = 0
  for (let p = 0, q = text.indexOf('\n'); q >= 0; p = q + 1, q = text.indexOf('\n', p)) records += JSON.parse(text.slice(p, q)) === null ? 0 : 1
  return { ms: performance.now() - t0, records }
}

/** The SQLite floor: the session's rows read with better-sqlite3 directly (one raw `SELECT`) and every line parsed. */
export async function readSqliteFloor(path: string, id: string): Promise<{ readonly ms: number; readonly records: number }> {
  const { default: Database } = await import('better-sqlite3')
  const t0 = performance.now()
  const db = new Database(path, { readonly: true })
  const rows = db.prepare('SELECT line FROM events WHERE session_id = ? ORDER BY seq').raw(true).all(id) as [string][]
  let records = 0
  for (const [line] of rows) records += JSON.parse(line) === null ? 0 : 1
  const ms = performance.now() - t0
  db.close()
  return { ms, records }
}

/** Runs this script again in a fresh process with `args` and returns the JSON of the last line it printed. */
export function runFresh<T>(args: readonly string[]): T {
  const out = execFileSync(process.execPath, [...process.execArgv, process.argv[1] as string, ...args], { encoding: 'utf8' })
  return JSON.parse(out.trim().split('\n').pop() as string) as T
}

/** The median (the mean of the middle two for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 === 1 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2
}

/** Lowest–highest, as text. */
export function spread(xs: readonly number[], digits = 2): string {
  return `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`
}
