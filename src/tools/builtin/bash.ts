import { spawn, type ChildProcess } from 'node:child_process'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { ToolOutput } from '../types.js'
import { throwIfAborted } from './fs-errors.js'
import { HeadTailCapture } from './output-capture.js'
import { killProcessGroup, trackGroup, untrackGroup } from './process-group.js'
import type { Workspace } from './workspace-path.js'

/** Timeout when the model gives none. */
export const BASH_DEFAULT_TIMEOUT_MS = 120_000
/** Largest `timeoutMs` the model may ask for. */
export const BASH_MAX_TIMEOUT_MS = 600_000
/** Output kept from the start of a command's combined stdout/stderr. */
export const BASH_HEAD_BYTES = 16 * 1024
/** Output kept from the end (larger than the head: errors and summaries come last). */
export const BASH_TAIL_BYTES = 48 * 1024
// After bash itself exits, how long its background jobs may keep the pipes open before they are stopped.
const DRAIN_MS = 300
const CLOSE_WAIT_MS = 1000

const parameters = z.object({
  command: z.string().min(1).describe('Bash command line, run with the workspace root as working directory'),
  timeoutMs: z
    .number()
    .int()
    .min(1)
    .max(BASH_MAX_TIMEOUT_MS)
    .optional()
    .describe(`Milliseconds before the command is killed (default ${BASH_DEFAULT_TIMEOUT_MS})`),
})

/** Arguments of `bash`. */
export type BashArgs = z.infer<typeof parameters>

type Ending =
  | { kind: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'timeout' }
  | { kind: 'abort' }
  | { kind: 'error'; error: Error }

/**
 * `bash {command, timeoutMs?}`: runs `bash -c command` in the workspace root in its own process group and
 * session. On timeout (`TOOL_TIMEOUT`), on `ctx.signal` (`ABORTED`) and when background jobs outlive the
 * command, the whole group gets SIGTERM then SIGKILL, so no process is left behind. Combined output is capped
 * at head + tail with a note of the bytes cut; a non-zero exit is an `isError` result (`COMMAND_FAILED`)
 * carrying the output and exit code.
 */
export function bashTool(workspace: Workspace): DefinedTool<BashArgs> {
  return defineTool({
    name: 'bash',
    description:
      'Run a bash command in the workspace root (no stdin, no terminal). Returns stdout and stderr interleaved and the ' +
      `exit code. Killed after timeoutMs (default ${BASH_DEFAULT_TIMEOUT_MS / 1000} s). Background jobs are stopped when ` +
      `the command exits. Output beyond ${(BASH_HEAD_BYTES + BASH_TAIL_BYTES) / 1024} KiB is cut from the middle.`,
    parameters,
    concurrencySafe: false,
    async execute({ command, timeoutMs = BASH_DEFAULT_TIMEOUT_MS }, ctx): Promise<ToolOutput> {
      throwIfAborted(ctx.signal)
      const started = Date.now()
      const output = new HeadTailCapture(BASH_HEAD_BYTES, BASH_TAIL_BYTES)
      // detached: a new session and process group led by bash, so one kill(-pid) reaches every descendant
      // and the command cannot read our terminal.
      const child = spawn('bash', ['-c', command], { cwd: workspace.root, detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: shellEnv() })
      const pgid = child.pid
      if (pgid !== undefined) trackGroup(pgid)
      child.stdout?.on('data', (chunk: Buffer) => output.push(chunk))
      child.stderr?.on('data', (chunk: Buffer) => output.push(chunk))
      const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
      try {
        const ending = await waitForEnding(child, timeoutMs, ctx.signal)
        if (ending.kind === 'error') throw new HarnessError(`could not start bash: ${ending.error.message}`, 'SHELL_UNAVAILABLE', { cause: ending.error })
        if (ending.kind === 'exit') await within(closed, DRAIN_MS)
        const stoppedLeftovers = pgid !== undefined && (await killProcessGroup(pgid))
        await within(closed, CLOSE_WAIT_MS)
        const { text, cutBytes } = output.render()
        const durationMs = Date.now() - started
        if (ending.kind === 'timeout') {
          throw new HarnessError(
            `command timed out after ${timeoutMs} ms and its process group was killed.${outputSection(text, cutBytes)}`,
            'TOOL_TIMEOUT',
          )
        }
        if (ending.kind === 'abort') {
          throw new HarnessError(`command was cancelled and its process group was killed.${outputSection(text, cutBytes)}`, 'ABORTED')
        }
        return formatExit(ending, text, cutBytes, stoppedLeftovers, durationMs)
      } finally {
        if (pgid !== undefined) untrackGroup(pgid)
        child.stdout?.destroy()
        child.stderr?.destroy()
      }
    },
  })
}

function waitForEnding(child: ChildProcess, timeoutMs: number, signal: AbortSignal): Promise<Ending> {
  return new Promise<Ending>((resolve) => {
    const finish = (ending: Ending): void => {
      clearTimeout(timer)
      signal.removeEventListener('abort', onAbort)
      resolve(ending)
    }
    const onAbort = (): void => finish({ kind: 'abort' })
    const timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs)
    signal.addEventListener('abort', onAbort, { once: true })
    child.once('exit', (code, exitSignal) => finish({ kind: 'exit', code, signal: exitSignal }))
    child.once('error', (error) => finish({ kind: 'error', error }))
  })
}

function formatExit(
  ending: Extract<Ending, { kind: 'exit' }>,
  text: string,
  cutBytes: number,
  stoppedLeftovers: boolean,
  durationMs: number,
): ToolOutput {
  const status = ending.code !== null ? `exit code ${ending.code}` : `killed by signal ${ending.signal ?? 'unknown'}`
  const notes = [status]
  if (cutBytes > 0) notes.push(`${cutBytes} bytes of output were cut from the middle`)
  if (stoppedLeftovers) notes.push('background processes still running when the command exited were stopped')
  const failed = ending.code !== 0
  return {
    content: `${text === '' ? '(no output)' : text.replace(/\n$/, '')}\n\n[${notes.join('; ')}]`,
    ...(failed ? { isError: true, errorCode: 'COMMAND_FAILED' } : {}),
    meta: { exitCode: ending.code, signal: ending.signal, durationMs, cutBytes },
  }
}

function outputSection(text: string, cutBytes: number): string {
  if (text === '') return ' It printed nothing.'
  const cut = cutBytes > 0 ? ` (${cutBytes} bytes cut from the middle)` : ''
  return `\n\nOutput so far${cut}:\n${text}`
}

/** Resolves when `promise` settles or after `ms`, whichever is first (stray holders of a pipe must not hang us). */
async function within(promise: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  await Promise.race([promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))])
  clearTimeout(timer)
}

/**
 * The environment for commands: ours minus provider API keys. The model reads all output and the session log
 * keeps it, so a key the shell could print would leak into the log (DESIGN.md "Security").
 */
export function shellEnv(source: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [name, value] of Object.entries(source)) {
    if (!/API_?KEY/i.test(name)) env[name] = value
  }
  return env
}
