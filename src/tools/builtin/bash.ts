import { spawn, type ChildProcess } from 'node:child_process'
import { z } from 'zod'
import { HarnessError } from '../../errors/harness-error.js'
import { defineTool, type DefinedTool } from '../define-tool.js'
import type { CheckpointSlot } from '../checkpoint.js'
import type { ToolContext, ToolOutput } from '../types.js'
import { sinkOf } from './file-checkpoint.js'
import { throwIfAborted } from './fs-errors.js'
import type { ResolvedToolLimits } from './limits.js'
import { HeadTailCapture } from './output-capture.js'
import { killProcessGroup, trackGroup, untrackGroup } from './process-group.js'
import { prepareProcessCap, type ProcessCap } from './process-limit.js'
import { bwrapArguments, defaultHiddenPaths, probeSandbox, sandboxUnavailable, type SandboxMode } from './sandbox.js'
import { shellEnv, type ShellEnvPolicy } from './shell-env.js'
import { WorkspaceBaseline, type BashCheckpoint } from './workspace-baseline.js'
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

// Runs inside the sandbox as `bash -c SUPERVISOR ledgerloop-bash COMMAND`. When the command exits, bwrap
// tears the whole pid namespace down, so this is the last moment to see whether background jobs were still
// running: it gives them the same drain time as the host path, then reports leftovers on fd 3.
const SUPERVISOR = `bash -c "$1" 3>&-
status=$?
others() {
  local entry
  for entry in /proc/[0-9]*; do
    case "\${entry#/proc/}" in 1|$$) continue ;; esac
    [ -e "$entry/stat" ] && return 0
  done
  return 1
}
for _ in 1 2 3 4 5 6; do others || break; sleep 0.05; done
if others; then echo leftovers >&3; fi
exit "$status"
`

/**
 * Whether sandboxed commands reach the network: `false` never (a new, empty network namespace), `true` always,
 * `'per-call'` only for a call whose arguments say `network: true` — a permission rule on the pseudo-tool
 * `network` (see `permissionPlugin`) then decides whether such a call may run.
 */
export type NetworkPolicy = boolean | 'per-call'

/** How `bash` runs: the sandbox mode, when the sandbox keeps the network, the limits and the environment. */
export interface BashOptions {
  readonly sandbox: SandboxMode
  readonly network: NetworkPolicy
  readonly limits: ResolvedToolLimits
  /** Which environment variables commands get (see `shellEnv`). */
  readonly env: ShellEnvPolicy
  /** Where the harness binds its checkpoint sink (absent: no checkpoints). */
  readonly checkpoints?: CheckpointSlot
}

const baseParameters = z.object({
  command: z.string().min(1).describe('Bash command line, run with the workspace root as working directory'),
  timeoutMs: z
    .number()
    .int()
    .min(1)
    .max(BASH_MAX_TIMEOUT_MS)
    .optional()
    .describe(`Milliseconds before the command is killed (default ${BASH_DEFAULT_TIMEOUT_MS})`),
})

// Offered only under the 'per-call' policy, so a model never sees a switch that would do nothing.
const perCallParameters = baseParameters.extend({
  network: z
    .boolean()
    .optional()
    .describe('Set true only when the command needs the network (e.g. installing packages); it may need the user\'s approval'),
})

/** Arguments of `bash` (`network` exists only under the `'per-call'` network policy). */
export type BashArgs = z.infer<typeof perCallParameters>

type Ending =
  | { kind: 'exit'; code: number | null; signal: NodeJS.Signals | null }
  | { kind: 'timeout' }
  | { kind: 'abort' }
  | { kind: 'error'; error: Error }

/**
 * `bash {command, timeoutMs?}`: runs `bash -c command` in the workspace root in its own process group and
 * session; by default inside bubblewrap (see {@link bwrapArguments}): the host read-only, the workspace
 * writable, no network, secrets hidden, at most `limits.maxProcesses` tasks. Commands get an allow-listed
 * environment (`options.env`), never the harness's whole one. When the sandbox cannot start,
 * the call fails with `SANDBOX_UNAVAILABLE` and runs nothing (fail closed). On timeout (`TOOL_TIMEOUT`), on `ctx.signal` (`ABORTED`) and when background jobs outlive the
 * command, the whole group gets SIGTERM then SIGKILL, so no process is left behind. Combined output is capped
 * at head + tail with a note of the bytes cut; a non-zero exit is an `isError` result (`COMMAND_FAILED`)
 * carrying the output and exit code. With a checkpoint sink for the session, the workspace's pre-images are
 * stored before the command starts and the files it changed are logged when it ends, however it ends
 * (see {@link WorkspaceBaseline}).
 */
export function bashTool(workspace: Workspace, options: BashOptions): DefinedTool<BashArgs> {
  const baseline = new WorkspaceBaseline(workspace.root, { maxFiles: options.limits.maxFilesWalked, maxBytes: options.limits.maxFileBytes })
  return defineTool({
    ...(options.checkpoints !== undefined ? { checkpoints: options.checkpoints } : {}),
    name: 'bash',
    description:
      'Run a bash command in the workspace root (no stdin, no terminal). ' +
      (options.sandbox === 'bwrap'
        ? `It runs in a sandbox: only the workspace and /tmp are writable${networkNote(options.network)}. `
        : '') +
      'Returns stdout and stderr interleaved and the ' +
      `exit code. Killed after timeoutMs (default ${BASH_DEFAULT_TIMEOUT_MS / 1000} s). Background jobs are stopped when ` +
      `the command exits. Output beyond ${(BASH_HEAD_BYTES + BASH_TAIL_BYTES) / 1024} KiB is cut from the middle.`,
    // The base schema is the per-call one minus an optional field, so its values fit BashArgs (network absent).
    parameters: options.network === 'per-call' ? perCallParameters : (baseParameters as typeof perCallParameters),
    concurrencySafe: false,
    async execute({ command, timeoutMs = BASH_DEFAULT_TIMEOUT_MS, network: wantsNetwork }, ctx): Promise<ToolOutput> {
      const network = options.network === true || (options.network === 'per-call' && wantsNetwork === true)
      throwIfAborted(ctx.signal)
      // Read at each call, not once: the harness's environment may change between calls.
      const { env, withheld } = shellEnv(process.env, options.env)
      let cap: ProcessCap | undefined
      let argv = ['bash', '-c', command]
      if (options.sandbox === 'bwrap') {
        const probe = await probeSandbox(env.PATH ?? '')
        if (!probe.ok) throw sandboxUnavailable(probe.reason)
        cap = await prepareProcessCap(options.limits.maxProcesses)
        const policy = { workspace: workspace.root, network, hidden: defaultHiddenPaths() }
        argv = [...cap.wrap, probe.bwrap, ...bwrapArguments(policy, ['bash', '-c', cap.shellPrelude + SUPERVISOR, 'ledgerloop-bash', command])]
        // The host's TMPDIR may be a read-only path in there; the sandbox's own /tmp is writable.
        env.TMPDIR = '/tmp'
      }
      // Before the first byte of the command runs: what it may overwrite or delete is stored.
      const checkpoint = await beginCheckpoint(baseline, options.checkpoints, ctx)
      const started = Date.now()
      const output = new HeadTailCapture(BASH_HEAD_BYTES, BASH_TAIL_BYTES)
      // detached: a new session and process group led by bash (or bwrap), so one kill(-pid) reaches every
      // descendant and the command cannot read our terminal. fd 3 carries the supervisor's leftovers report.
      const child = spawn(argv[0] as string, argv.slice(1), { cwd: workspace.root, detached: true, stdio: ['ignore', 'pipe', 'pipe', cap !== undefined ? 'pipe' : 'ignore'], env })
      let reportedLeftovers = false
      child.stdio[3]?.on('data', () => (reportedLeftovers = true))
      const pgid = child.pid
      if (pgid !== undefined) trackGroup(pgid)
      child.stdout?.on('data', (chunk: Buffer) => output.push(chunk))
      child.stderr?.on('data', (chunk: Buffer) => output.push(chunk))
      const closed = new Promise<void>((resolve) => child.once('close', () => resolve()))
      try {
        const ending = await waitForEnding(child, timeoutMs, ctx.signal)
        if (ending.kind === 'error') throw new HarnessError(`could not start bash: ${ending.error.message}`, 'SHELL_UNAVAILABLE', { cause: ending.error })
        if (ending.kind === 'exit') await within(closed, DRAIN_MS)
        const stoppedLeftovers = (pgid !== undefined && (await killProcessGroup(pgid))) || reportedLeftovers
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
        const sandbox = { sandbox: options.sandbox, ...(cap !== undefined ? { processLimit: cap.kind, network } : {}) }
        // Names only, never values: they tell the user why an allowed variable was missing.
        return formatExit(ending, text, cutBytes, stoppedLeftovers, durationMs, { ...sandbox, ...(withheld.length > 0 ? { envWithheld: withheld } : {}) })
      } finally {
        if (pgid !== undefined) untrackGroup(pgid)
        for (const stream of child.stdio) stream?.destroy()
        await cap?.release()
        // Every process of the command is gone by now, so the scan sees its final changes (a failed,
        // timed-out or cancelled command is checkpointed too).
        await checkpoint?.finish()
      }
    },
  })
}

/** A command's checkpoint when a sink keeps the calling session's, with the record logged when it finishes. */
async function beginCheckpoint(baseline: WorkspaceBaseline, slot: CheckpointSlot | undefined, ctx: ToolContext): Promise<{ finish(): Promise<void> } | undefined> {
  const sink = sinkOf(slot, ctx)
  if (sink === undefined) return undefined
  const pending: BashCheckpoint = await baseline.begin(sink, ctx.agent.id)
  return {
    async finish() {
      const { files, incomplete } = await pending.finish()
      if (files.length === 0 && !incomplete) return
      sink.record(ctx.agent.id, { callId: ctx.callId, tool: 'bash', root: baseline.root, files, ...(incomplete ? { incomplete: true as const } : {}) })
    },
  }
}

function networkNote(policy: NetworkPolicy): string {
  if (policy === true) return ''
  if (policy === false) return ', there is no network'
  return ', there is no network unless you pass network: true'
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
  sandbox: Record<string, string | boolean | readonly string[]>,
): ToolOutput {
  const status = ending.code !== null ? `exit code ${ending.code}` : `killed by signal ${ending.signal ?? 'unknown'}`
  const notes = [status]
  if (cutBytes > 0) notes.push(`${cutBytes} bytes of output were cut from the middle`)
  if (stoppedLeftovers) notes.push('background processes still running when the command exited were stopped')
  const failed = ending.code !== 0
  return {
    content: `${text === '' ? '(no output)' : text.replace(/\n$/, '')}\n\n[${notes.join('; ')}]`,
    ...(failed ? { isError: true, errorCode: 'COMMAND_FAILED' } : {}),
    meta: { exitCode: ending.code, signal: ending.signal, durationMs, cutBytes, ...sandbox },
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

