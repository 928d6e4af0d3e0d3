import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const MAX_ENTRIES = 500

/** `$LEDGERLOOP_HOME/chat_history`: one entry per line, newest first (readline's order). */
export function historyFile(home: string): string {
  return join(home, 'chat_history')
}

/** The saved chat history, newest first; empty when there is none. */
export function loadHistory(home: string): string[] {
  try {
    return readFileSync(historyFile(home), 'utf8').split('\n').filter((l) => l !== '').slice(0, MAX_ENTRIES)
  } catch {
    return []
  }
}

/** Saves the history privately (it may hold anything the user typed). Failures are not worth a crash. */
export function saveHistory(home: string, entries: readonly string[]): void {
  try {
    mkdirSync(home, { recursive: true, mode: 0o700 })
    writeFileSync(historyFile(home), `${entries.slice(0, MAX_ENTRIES).join('\n')}\n`, { mode: 0o600 })
  } catch {
    // A read-only home only loses the history.
  }
}
