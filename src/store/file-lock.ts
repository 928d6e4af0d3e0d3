import { randomUUID } from 'node:crypto'
import { linkSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { dirname, join } from 'node:path'
import { HarnessError } from '../errors/harness-error.js'

/** Who holds a session: the content of a lock file, and of a SQLite lease. */
export interface LockHolder {
  readonly pid: number
  readonly hostname: string
  /** ms since epoch when the holding process started (tells a live holder from a reused pid). */
  readonly startedAt: number
  /** Unique per acquisition: a release only removes its own lock. */
  readonly token: string
}

/** A holder record for this process, with a fresh token. */
export function currentHolder(): LockHolder {
  return { pid: process.pid, hostname: hostname(), startedAt: ownStartTime(), token: randomUUID() }
}

let ownStart: number | undefined
function ownStartTime(): number {
  ownStart ??= processStartTime(process.pid) ?? Math.round(Date.now() - process.uptime() * 1000)
  return ownStart
}

let bootTimeMs: number | null | undefined
/** Start time of a process in ms since epoch, from /proc (Linux); undefined where unknown. */
function processStartTime(pid: number): number | undefined {
  try {
    if (bootTimeMs === undefined) {
      const btime = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'))
      bootTimeMs = btime === null ? null : Number(btime[1]) * 1000
    }
    if (bootTimeMs === null) return undefined
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name (which may contain spaces) start at field 3; starttime is field 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[19])
    // USER_HZ is 100 on every Linux ABI Node supports.
    return Number.isFinite(ticks) ? bootTimeMs + ticks * 10 : undefined
  } catch {
    return undefined
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code !== 'ESRCH'
  }
}

/**
 * Whether a holder is certainly gone: a process on this host that no longer runs, or whose pid now belongs
 * to a process started at another time. A holder on another host is never presumed dead.
 */
export function holderIsDead(holder: LockHolder): boolean {
  if (holder.hostname !== hostname()) return false
  if (holder.pid === process.pid) return holder.startedAt !== ownStartTime()
  if (!pidAlive(holder.pid)) return true
  const started = processStartTime(holder.pid)
  // Start times are rounded to clock ticks on one side and to a ms estimate on the other.
  return started !== undefined && Math.abs(started - holder.startedAt) > 2000
}

/** Parses a holder record; undefined when it is not one. */
export function parseHolder(text: string): LockHolder | undefined {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>
    if (!Number.isSafeInteger(value.pid) || typeof value.hostname !== 'string' || !Number.isSafeInteger(value.startedAt) || typeof value.token !== 'string') {
      return undefined
    }
    return value as LockHolder
  } catch {
    return undefined
  }
}

/** Describes a holder for a SESSION_LOCKED message. */
export function describeHolder(holder: LockHolder): string {
  return `process ${holder.pid} on ${holder.hostname} (started ${new Date(holder.startedAt).toISOString()})`
}

/**
 * An exclusive pid lock file (`<id>.lock`) for one session writer. The file is written complete under a
 * temporary name and published with `link()`, which fails when the lock exists: the same exclusivity as an
 * O_EXCL create, without the moment where a lock file exists but is still empty (which a concurrent opener
 * could neither honour nor safely take over).
 */
export class FileLock {
  readonly path: string
  readonly holder: LockHolder
  #held = true

  private constructor(path: string, holder: LockHolder) {
    this.path = path
    this.holder = holder
  }

  /**
   * Takes the lock, taking over a stale one left by a dead process on this host.
   * @param sessionId - named in the error
   * @throws HarnessError `SESSION_LOCKED` naming the holder's pid when a live process holds it
   */
  static acquire(path: string, sessionId: string): FileLock {
    const holder = currentHolder()
    const text = JSON.stringify(holder)
    for (let attempt = 0; attempt < 5; attempt++) {
      const temporary = join(dirname(path), `.${randomUUID()}.lock-tmp`)
      writeFileSync(temporary, text, { mode: 0o600, flag: 'wx' })
      try {
        linkSync(temporary, path)
        return new FileLock(path, holder)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      } finally {
        unlinkSync(temporary)
      }
      let existing: string
      try {
        existing = readFileSync(path, 'utf8')
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue // released meanwhile: try again
        throw error
      }
      const current = parseHolder(existing)
      if (current === undefined) {
        throw new HarnessError(`session '${sessionId}' is locked by ${path}, which is not a ledgerloop lock; remove it if no process uses the session`, 'SESSION_LOCKED')
      }
      if (!holderIsDead(current)) {
        throw new HarnessError(`session '${sessionId}' is open in another writer: ${describeHolder(current)} holds ${path}`, 'SESSION_LOCKED')
      }
      takeOverStale(path, existing)
    }
    throw new HarnessError(`session '${sessionId}': could not take the lock ${path} (it keeps changing hands)`, 'SESSION_LOCKED')
  }

  /** Releases the lock if it is still ours. Idempotent. */
  release(): void {
    if (!this.#held) return
    this.#held = false
    try {
      if (parseHolder(readFileSync(this.path, 'utf8'))?.token === this.holder.token) unlinkSync(this.path)
    } catch {
      // Already gone (taken over after we were presumed dead): nothing of ours to remove.
    }
  }
}

// Removes a dead holder's lock only if it is still exactly that lock: another opener may have replaced it
// since we read it. The window between the re-read and the unlink is a few syscalls wide.
function takeOverStale(path: string, staleText: string): void {
  try {
    if (readFileSync(path, 'utf8') === staleText) unlinkSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
}
