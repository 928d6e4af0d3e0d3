import { chmodSync, lstatSync, mkdirSync, type Stats } from 'node:fs'
import { HarnessError } from '../errors/harness-error.js'

// Ownership and mode bits mean nothing useful on Windows; there the checks are skipped.
const POSIX = process.platform !== 'win32' && typeof process.getuid === 'function'

function owner(): number {
  return (process.getuid as () => number)()
}

function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, '0')
}

/**
 * Creates the sessions directory with mode 0700, or checks an existing one: it must be a real directory owned
 * by this user and not writable by group or others (who could otherwise replace session files).
 * @throws HarnessError `SESSION_PERMISSIONS`
 */
export function ensurePrivateDir(dir: string): void {
  let stats: Stats
  try {
    stats = lstatSync(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    // mkdir's mode is filtered by the umask; set it outright.
    if (POSIX) chmodSync(dir, 0o700)
    return
  }
  if (!stats.isDirectory()) throw new HarnessError(`session directory ${dir} is not a directory`, 'SESSION_PERMISSIONS')
  if (!POSIX) return
  if (stats.uid !== owner()) {
    throw new HarnessError(`session directory ${dir} belongs to uid ${stats.uid}, not to this user (uid ${owner()}); use a directory of your own`, 'SESSION_PERMISSIONS')
  }
  if ((stats.mode & 0o022) !== 0) {
    throw new HarnessError(`session directory ${dir} has mode ${octal(stats.mode)}: others can write into it; run: chmod 700 ${dir}`, 'SESSION_PERMISSIONS')
  }
}

/**
 * Checks a session file before it is read: a regular file (not a symlink), owned by this user, mode 0600
 * or stricter (sessions hold prompts and tool output).
 * @throws HarnessError `SESSION_PERMISSIONS`
 */
export function checkPrivateFile(path: string, stats: Stats): void {
  if (stats.isSymbolicLink()) throw new HarnessError(`session file ${path} is a symbolic link; refusing to follow it`, 'SESSION_PERMISSIONS')
  if (!stats.isFile()) throw new HarnessError(`session file ${path} is not a regular file`, 'SESSION_PERMISSIONS')
  if (!POSIX) return
  if (stats.uid !== owner()) {
    throw new HarnessError(`session file ${path} belongs to uid ${stats.uid}, not to this user (uid ${owner()})`, 'SESSION_PERMISSIONS')
  }
  if ((stats.mode & 0o077) !== 0) {
    throw new HarnessError(`session file ${path} has mode ${octal(stats.mode)}; session files must be readable by their owner only: run chmod 600 ${path}`, 'SESSION_PERMISSIONS')
  }
}
