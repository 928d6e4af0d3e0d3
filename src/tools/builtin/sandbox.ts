import { execFile } from 'node:child_process'
import { accessSync, constants, lstatSync, realpathSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { HarnessError } from '../../errors/harness-error.js'

/** How `bash` runs commands: inside bubblewrap (the default), or directly on the host. */
export type SandboxMode = 'bwrap' | 'off'

/**
 * Checks a sandbox mode given as text (a CLI flag, a config value).
 * @throws HarnessError `INVALID_CONFIG` for anything but `bwrap` or `off`
 */
export function parseSandboxMode(value: unknown): SandboxMode {
  if (value === 'bwrap' || value === 'off') return value
  throw new HarnessError(`sandbox must be 'bwrap' or 'off', got ${JSON.stringify(value)}`, 'INVALID_CONFIG')
}

/** What {@link probeSandbox} found. */
export type SandboxProbe = { ok: true; bwrap: string } | { ok: false; reason: string }

// One probe per PATH value: starting bwrap costs a few milliseconds, but a test (or a user) that changes
// PATH must not be answered from another PATH's result.
const probes = new Map<string, Promise<SandboxProbe>>()

/**
 * Whether bubblewrap is on `PATH` and can actually start a sandbox with the namespaces `bash` uses (some
 * containers forbid them). Probed once per `PATH` value and cached.
 */
export function probeSandbox(searchPath: string = process.env.PATH ?? ''): Promise<SandboxProbe> {
  let probe = probes.get(searchPath)
  if (probe === undefined) {
    probe = runProbe(searchPath)
    probes.set(searchPath, probe)
  }
  return probe
}

async function runProbe(searchPath: string): Promise<SandboxProbe> {
  const bwrap = findExecutable('bwrap', searchPath)
  if (bwrap === undefined) return { ok: false, reason: 'bwrap (bubblewrap) was not found on PATH' }
  const args = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--unshare-net', '--unshare-pid', '--new-session', '--die-with-parent', 'true']
  return new Promise<SandboxProbe>((resolve) => {
    execFile(bwrap, args, { timeout: 10_000 }, (error, _stdout, stderr) => {
      if (error === null) return resolve({ ok: true, bwrap })
      const said = String(stderr).trim() || error.message
      resolve({ ok: false, reason: `${bwrap} is installed but cannot start a sandbox here: ${said}` })
    })
  })
}

/** The `SANDBOX_UNAVAILABLE` tool error: what went wrong and both ways to fix it. */
export function sandboxUnavailable(reason: string): HarnessError {
  return new HarnessError(
    `bash is sandboxed and the sandbox is unavailable: ${reason}. No command was run. ` +
      'Fix: install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap), ' +
      "or turn the sandbox off explicitly with builtinTools({ sandbox: 'off' }) (CLI: --sandbox off), " +
      'which runs commands with all of your rights.',
    'SANDBOX_UNAVAILABLE',
  )
}

/** What one sandboxed command may touch. */
export interface SandboxPolicy {
  /** Real path of the workspace: the only host directory mounted writable. */
  readonly workspace: string
  /** Keep the host network (default: a new, empty network namespace). */
  readonly network: boolean
  /** Host paths hidden inside the sandbox (an empty tmpfs or /dev/null is mounted over each). */
  readonly hidden: readonly string[]
}

/**
 * bubblewrap's arguments for one command: the host read-only, the workspace writable, private /tmp, fresh
 * minimal /dev and /proc (of a new pid namespace), no network unless allowed, secrets hidden, a new session,
 * and death with the parent.
 */
export function bwrapArguments(policy: SandboxPolicy, command: readonly string[]): string[] {
  const { workspace } = policy
  const args = ['--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts']
  if (!policy.network) args.push('--unshare-net')
  args.push('--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp')
  // /run holds host daemons' sockets (docker.sock, dbus): a read-only mount does not stop connect().
  if (!policy.network && !within('/run', workspace)) args.push('--tmpfs', '/run')
  // Later mounts win: a hidden directory that contains the workspace is masked first, then the workspace is
  // mounted into it; one inside the workspace is masked after the workspace mount.
  const masks = policy.hidden.map((hidden) => ({ hidden, args: maskArguments(hidden) }))
  for (const mask of masks) if (within(mask.hidden, workspace)) args.push(...mask.args)
  args.push('--bind', workspace, workspace)
  for (const mask of masks) if (!within(mask.hidden, workspace)) args.push(...mask.args)
  args.push('--chdir', workspace, '--', ...command)
  return args
}

/**
 * The host paths hidden by default: the ledgerloop home (sessions, config, keys) and the usual places of
 * credentials in the home directory. Only those that exist are returned, as real paths.
 */
export function defaultHiddenPaths(env: NodeJS.ProcessEnv = process.env): string[] {
  const home = os.homedir()
  const candidates = [
    env.LEDGERLOOP_HOME ?? path.join(home, '.ledgerloop'),
    path.join(home, '.ledgerloop'),
    ...['.ssh', '.gnupg', '.aws', '.azure', '.kube', '.docker', '.config/gcloud', '.config/gh', '.netrc', '.npmrc', '.git-credentials', '.pgpass'].map((name) =>
      path.join(home, name),
    ),
  ]
  const found = new Set<string>()
  for (const candidate of candidates) {
    try {
      found.add(realpathSync(candidate))
    } catch {
      // does not exist: nothing to hide
    }
  }
  return [...found]
}

function maskArguments(hidden: string): string[] {
  let isDirectory: boolean
  try {
    isDirectory = lstatSync(hidden).isDirectory()
  } catch {
    return []
  }
  return isDirectory ? ['--tmpfs', hidden] : ['--ro-bind', '/dev/null', hidden]
}

/** Whether `inner` is `outer` or lies beneath it. */
function within(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner)
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel))
}

function findExecutable(name: string, searchPath: string): string | undefined {
  for (const dir of searchPath.split(path.delimiter)) {
    if (dir === '') continue
    const candidate = path.join(dir, name)
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // not here
    }
  }
  return undefined
}
