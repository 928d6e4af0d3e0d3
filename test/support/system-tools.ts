import { spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { inject } from 'vitest'
import { probeSandbox } from '../../src/tools/builtin/sandbox.js'

/** The system packages some suites need, by the name a user installs them under (`apt-get install NAME`). */
export type SystemTool = 'bubblewrap' | 'chromium'

/** Whether a system tool works here, and why not when it does not. */
export interface SystemToolCheck {
  readonly ok: boolean
  /** What failed (missing, or installed but unable to start), for the skip line. */
  readonly reason?: string
}

/** What the global setup found, handed to every test file through vitest's `provide`/`inject`. */
export interface SystemToolsReport {
  readonly tools: Readonly<Record<SystemTool, SystemToolCheck>>
  /** Where test files leave a note for each skip, so the summary can name the suites. */
  readonly skipNotes: string
  /** `CI=true`: suites run (and fail) even when a tool does not work, so CI still proves them. */
  readonly strict: boolean
}

declare module 'vitest' {
  interface ProvidedContext {
    systemTools: SystemToolsReport
  }
}

/** Debian's Chromium, as the browser tests launch it. */
export const CHROMIUM_PATH = '/usr/bin/chromium'

/**
 * Whether bubblewrap can start the sandbox `bash` uses: the same probe the tool itself runs (it starts bwrap
 * with the sandbox's namespaces), so a binary that exists but cannot start a sandbox counts as missing.
 */
export async function checkBubblewrap(): Promise<SystemToolCheck> {
  const probe = await probeSandbox()
  return probe.ok ? { ok: true } : { ok: false, reason: probe.reason }
}

/**
 * Whether Chromium starts headless and renders a page: it is run, not only looked for, because a package
 * that is half installed (or a snap stub) exists on disk and fails at start.
 */
export function checkChromium(path: string = CHROMIUM_PATH): Promise<SystemToolCheck> {
  const profile = mkdtempSync(join(tmpdir(), 'ledgerloop-chromium-probe-'))
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', `--user-data-dir=${profile}`, '--dump-dom', 'data:text/html,<p>ok</p>']
  return new Promise<SystemToolCheck>((resolve) => {
    let out = ''
    let err = ''
    const child = spawn(path, args, { stdio: ['ignore', 'pipe', 'pipe'] })
    // Our own timer (spawn's `timeout` is only cleared on exit, which a binary that never started never has).
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
    child.on('error', (error) => {
      clearTimeout(timer)
      resolve({ ok: false, reason: `${path} could not be started: ${error.message}` })
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      if (code === 0 && out.includes('<p>ok</p>')) return resolve({ ok: true })
      const said = err.trim().split('\n').slice(-1)[0] ?? ''
      resolve({ ok: false, reason: `${path} did not render a page (exit ${code ?? signal}${said === '' ? '' : `: ${said}`})` })
    })
  }).finally(() => rmSync(profile, { recursive: true, force: true }))
}

/**
 * What a test file needs from the machine: `skip` is true when `tool` does not work here and the run is not
 * strict (`CI=true` never skips). A skip leaves a note that the run's summary prints, naming this file.
 * @param tool - the package the tests need
 * @param fileUrl - `import.meta.url` of the test file, for the summary
 * @example
 * const sandbox = requireSystemTool('bubblewrap', import.meta.url)
 * describe.skipIf(sandbox.skip)('bash in its sandbox', () => { … })
 */
export function requireSystemTool(tool: SystemTool, fileUrl: string): { readonly skip: boolean } {
  const report = inject('systemTools')
  const check = report.tools[tool]
  if (check.ok || report.strict) return { skip: false }
  mkdirSync(report.skipNotes, { recursive: true })
  const file = fileURLToPath(fileUrl)
  writeFileSync(join(report.skipNotes, `${tool}--${basename(file)}`), `${file}\n`)
  return { skip: true }
}
