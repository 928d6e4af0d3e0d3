import { readdirSync, readFileSync } from 'node:fs'

/** How long a process group gets to exit after SIGTERM before it is sent SIGKILL. */
export const KILL_GRACE_MS = 2000
const POLL_MS = 25

// Groups started by the bash tool and not yet reaped: a child in its own session outlives us unless killed.
const liveGroups = new Set<number>()
let exitHookInstalled = false

/**
 * Records a process group we started so that, if this Node process exits while it runs, the group is killed
 * instead of being orphaned (detached children survive their parent by design).
 */
export function trackGroup(pgid: number): void {
  liveGroups.add(pgid)
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.once('exit', () => {
      for (const group of liveGroups) signalGroup(group, 'SIGKILL')
    })
  }
}

/** Forgets a group once it has been killed or found gone. */
export function untrackGroup(pgid: number): void {
  liveGroups.delete(pgid)
}

/**
 * Kills every process in group `pgid`: SIGTERM, up to `graceMs` to exit, then SIGKILL, then waits briefly for
 * the group to disappear. Resolves `true` when there was anything to kill.
 */
export async function killProcessGroup(pgid: number, graceMs = KILL_GRACE_MS): Promise<boolean> {
  // Checked first because kill() succeeds on a group of zombies, and "we stopped something" must be true.
  if (!groupAlive(pgid) || !signalGroup(pgid, 'SIGTERM')) return false
  if (!(await waitGroupGone(pgid, graceMs))) {
    signalGroup(pgid, 'SIGKILL')
    await waitGroupGone(pgid, 1000)
  }
  return true
}

/**
 * Whether any process of group `pgid` is still running. Zombies do not count: a killed orphan stays a zombie
 * until init reaps it, which some container inits do only lazily, and there is nothing left to kill.
 */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
  } catch (error) {
    // EPERM still means "exists"; only ESRCH says the group is gone.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
  }
  return hasLivingMember(pgid) ?? true
}

/** Scans `/proc` for a non-zombie process in group `pgid`; `undefined` where there is no `/proc` (macOS). */
function hasLivingMember(pgid: number): boolean | undefined {
  let names: string[]
  try {
    names = readdirSync('/proc')
  } catch {
    return undefined
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8')
    } catch {
      continue // exited while we looked
    }
    // Fields after "pid (comm) ": state ppid pgrp …; comm may contain spaces and parentheses, so cut at the last ')'.
    const [state, , group] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    if (Number(group) === pgid && state !== 'Z' && state !== 'X') return true
  }
  return false
}

function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    return false
  }
}

async function waitGroupGone(pgid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (groupAlive(pgid)) {
    if (Date.now() >= deadline) return false
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
  }
  return true
}
