import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmdirSync, rmSync, statSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { afterAll } from 'vitest'

/** The repository root (where `dist/cli/main.js` is built). */
export const REPO = resolve(import.meta.dirname, '../..')
/** The built CLI entry the tests spawn. */
export const CLI = join(REPO, 'dist/cli/main.js')

function newestMtime(dir: string): number {
  let newest = 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs)
  }
  return newest
}

/**
 * Builds `dist/` when it is missing or older than `src/`, under a lock directory so test files running in
 * parallel do not build over each other.
 */
export function ensureBuilt(): void {
  const lock = join(REPO, '.cli-test-build.lock')
  const stale = (): boolean => {
    try {
      return statSync(CLI).mtimeMs < newestMtime(join(REPO, 'src'))
    } catch {
      return true
    }
  }
  if (!stale()) return
  const deadline = Date.now() + 120_000
  for (;;) {
    try {
      mkdirSync(lock)
      break
    } catch {
      if (Date.now() > deadline) throw new Error(`build lock ${lock} held too long`)
      spawnSync('sleep', ['0.2'])
    }
  }
  try {
    if (!stale()) return
    const built = spawnSync(process.execPath, [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: REPO, encoding: 'utf8' })
    if (built.status !== 0) throw new Error(`build failed:\n${built.stdout}${built.stderr}`)
    // The `serve` page's static files and browser libraries (what `npm run build` copies after tsc).
    const copied = spawnSync(process.execPath, [join(REPO, 'scripts/copy-web.mjs')], { cwd: REPO, encoding: 'utf8' })
    if (copied.status !== 0) throw new Error(`copying the web page failed:\n${copied.stdout}${copied.stderr}`)
    // The build is incremental: it rewrites only what changed, so the entry is stamped for the check above.
    const now = new Date()
    utimesSync(CLI, now, now)
  } finally {
    rmdirSync(lock)
  }
}

const homes: string[] = []
// Every test file that makes homes removes them when it is done: a test run leaves no folders behind.
afterAll(() => {
  for (const home of homes.splice(0)) rmSync(home, { recursive: true, force: true })
})

/** A fresh `LEDGERLOOP_HOME` (also used as HOME, so nothing of the real user's leaks in); removed after the file's tests. */
export function tempHome(): string {
  const home = mkdtempSync(join(tmpdir(), 'll-cli-test-'))
  homes.push(home)
  return home
}

/** A clean environment: no provider keys, no colour switches, only what the test passes. */
export function cliEnv(home: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, LEDGERLOOP_HOME: home, ...extra }
}

/** The outcome of one CLI run. */
export interface CliRun {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI to completion with optional stdin text. */
export function runCli(args: readonly string[], options: { env: NodeJS.ProcessEnv; input?: string; cwd?: string; timeoutMs?: number }): Promise<CliRun> {
  const child = startCli(args, options)
  if (options.input !== undefined) child.stdin?.end(options.input)
  else child.stdin?.end()
  return finished(child, options.timeoutMs ?? 15_000)
}

/** Starts the CLI and returns the live process (stdio piped). */
export function startCli(args: readonly string[], options: { env: NodeJS.ProcessEnv; cwd?: string }): ChildProcess & { out: { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd ?? REPO, env: options.env, stdio: ['pipe', 'pipe', 'pipe'] })
  const out = { stdout: '', stderr: '' }
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out.stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out.stderr += d))
  return Object.assign(child, { out })
}

/** Waits for a started CLI to exit. */
export function finished(child: ReturnType<typeof startCli>, timeoutMs = 15_000): Promise<CliRun> {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`the CLI did not exit within ${timeoutMs} ms\nstdout:\n${child.out.stdout}\nstderr:\n${child.out.stderr}`))
    }, timeoutMs)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolvePromise({ code, signal, stdout: child.out.stdout, stderr: child.out.stderr })
    })
  })
}

/** Resolves once the process's stdout contains `text`. */
export async function waitForOutput(child: ReturnType<typeof startCli>, text: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!child.out.stdout.includes(text)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`never saw ${JSON.stringify(text)}\nstdout:\n${child.out.stdout}\nstderr:\n${child.out.stderr}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** The session files under a home. */
export function sessionFiles(home: string): string[] {
  try {
    return readdirSync(join(home, 'sessions')).filter((n) => n.endsWith('.jsonl'))
  } catch {
    return []
  }
}
