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
  // The same confinement every command gets, so a bwrap that cannot build it (no user namespaces, a setuid
  // build that refuses some option) is found here and `bash` fails closed, instead of each call failing oddly.
  const args = [...confinementArguments(), '--unshare-net', '--ro-bind', '/', '/', ...procAndDevArguments(), 'true']
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
 * bubblewrap's arguments for one command: a new user namespace without capabilities (also for root), the host
 * read-only, the workspace writable, private /tmp, fresh minimal /dev and a read-only /proc (of a new pid
 * namespace), no network unless allowed, secrets hidden, a new session, and death with the parent.
 */
export function bwrapArguments(policy: SandboxPolicy, command: readonly string[]): string[] {
  const { workspace } = policy
  const args = confinementArguments()
  if (!policy.network) args.push('--unshare-net')
  args.push('--ro-bind', '/', '/', ...procAndDevArguments(), '--tmpfs', '/tmp')
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
 * Namespaces and privileges of every sandbox. Without a user namespace of its own, a command started by root
 * keeps all of root's capabilities inside bwrap and can simply unmount the masks or remount `/` writable. So:
 * - `--unshare-user`: a new user namespace. bwrap maps the caller's uid and gid to themselves (root stays 0,
 *   a user stays that user), so files created in the workspace belong to whoever ran ledgerloop.
 * - `--cap-drop ALL`: no capabilities in that namespace either, so `mount`, `umount`, `chroot`, raw sockets and
 *   the like are refused even for uid 0.
 * - `--disable-userns`: no nested user namespace, the usual way to get a full capability set back
 *   (`unshare -r`); the mounts would stay locked read-only even then, but there is no reason to allow it.
 * - a new pid, ipc and uts namespace, a new session (no `TIOCSTI` into our terminal), death with the parent.
 */
function confinementArguments(): string[] {
  return ['--unshare-user', '--disable-userns', '--cap-drop', 'ALL', '--die-with-parent', '--new-session', '--unshare-pid', '--unshare-ipc', '--unshare-uts']
}

/**
 * A fresh /dev and a /proc of the new pid namespace, read-only. Inside the user namespace root is still uid 0,
 * and uid 0 owns the sysctl files: `/proc/sys/vm/*` and friends are global and checked by owner alone, so
 * dropping capabilities does not stop `echo 1 > /proc/sys/...`. `/proc/sys` is therefore bound read-only, and
 * then the whole /proc is remounted read-only, which also covers other root-owned entries (`/proc/pressure`,
 * driver files). Reading /proc and opening `/proc/self/fd/N` (`/dev/stdout`, `<(…)`) keep working.
 */
function procAndDevArguments(): string[] {
  return ['--dev', '/dev', '--proc', '/proc', '--ro-bind', '/proc/sys', '/proc/sys', '--remount-ro', '/proc']
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
