import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises'
import path from 'node:path'

/**
 * How a sandboxed command's process count is capped:
 * - `cgroup`: a pids cgroup per command (`pids.max`); needs a writable cgroup tree, i.e. root.
 * - `rlimit`: `ulimit -u` inside the sandbox; the kernel ignores it for root, so it is the non-root path.
 * - `none`: root without a writable pids cgroup; nothing stops a fork bomb but the time limit.
 */
export type ProcessLimitKind = 'cgroup' | 'rlimit' | 'none'

/** A process cap prepared for one command. */
export interface ProcessCap {
  readonly kind: ProcessLimitKind
  /** The argv prefix that puts the command into the cap before it runs (empty when none). */
  readonly wrap: readonly string[]
  /** Shell lines run inside the sandbox before the command (the `ulimit`). */
  readonly shellPrelude: string
  /** Kills whatever is left in the cgroup and removes it. */
  release(): Promise<void>
}

let counter = 0

/**
 * Prepares a cap of `maxProcesses` tasks (threads count: the kernel counts tasks) for one command. Tries a
 * pids cgroup first, then an rlimit for non-root users; never throws.
 */
export async function prepareProcessCap(maxProcesses: number): Promise<ProcessCap> {
  const parent = pidsCgroupParent()
  if (parent !== undefined) {
    const dir = path.join(parent, `ledgerloop-${process.pid}-${++counter}`)
    try {
      await mkdir(dir)
      await writeFile(path.join(dir, 'pids.max'), String(maxProcesses))
      // The shell moves itself into the cgroup and then becomes bwrap, so every descendant starts inside it.
      const wrap = ['sh', '-c', 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir]
      return { kind: 'cgroup', wrap, shellPrelude: '', release: () => removeCgroup(dir) }
    } catch {
      await rmdir(dir).catch(() => undefined)
    }
  }
  const uid = process.getuid?.()
  if (uid !== undefined && uid !== 0) {
    // RLIMIT_NPROC counts every task of the user, on the whole machine, so the cap sits above what runs now.
    const ceiling = tasksOfUser(uid) + maxProcesses
    return { kind: 'rlimit', wrap: [], shellPrelude: `ulimit -u ${ceiling} 2>/dev/null\n`, release: async () => undefined }
  }
  return { kind: 'none', wrap: [], shellPrelude: '', release: async () => undefined }
}

/**
 * Where this process may create a pids cgroup: its own group in cgroup v1's pids hierarchy, or in the v2
 * tree. Whether pids.max really exists there is found out by writing it.
 */
function pidsCgroupParent(): string | undefined {
  if (process.getuid?.() !== 0) return undefined
  let membership: string
  try {
    membership = readFileSync('/proc/self/cgroup', 'utf8')
  } catch {
    return undefined
  }
  const lines = membership.split('\n').map((line) => line.split(':'))
  const v1 = lines.find(([, controllers]) => controllers?.split(',').includes('pids'))
  const v2 = lines.find(([id, controllers]) => id === '0' && controllers === '')
  const candidates = [
    ...(v1?.[2] !== undefined ? [path.join('/sys/fs/cgroup/pids', v1[2])] : []),
    ...(v2?.[2] !== undefined ? [path.join('/sys/fs/cgroup', v2[2]), path.join('/sys/fs/cgroup/unified', v2[2])] : []),
  ]
  return candidates.find((dir) => existsSync(path.join(dir, 'cgroup.procs')))
}

// A fork bomb's hundreds of tasks can take a few seconds to die after the namespace goes.
const CGROUP_REMOVE_MS = 10_000

async function removeCgroup(dir: string): Promise<void> {
  const deadline = Date.now() + CGROUP_REMOVE_MS
  for (;;) {
    const pids = await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => '')
    for (const pid of pids.split('\n').filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL')
      } catch {
        // already gone
      }
    }
    try {
      await rmdir(dir)
      return
    } catch (error) {
      // EBUSY: the killed tasks are still being torn down. Past the deadline the empty group is left behind.
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' || Date.now() > deadline) return
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
}

/** Tasks (threads included) the user runs now, from /proc; 0 where /proc cannot tell. */
function tasksOfUser(uid: number): number {
  let total = 0
  let names: string[]
  try {
    names = readdirSync('/proc')
  } catch {
    return 0
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8')
      if (Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]) !== uid) continue
      total += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1)
    } catch {
      // exited while we looked
    }
  }
  return total
}
