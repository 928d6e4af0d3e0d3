import { HarnessError } from '../errors/harness-error.js'
import type { SessionStore } from '../store/types.js'
import { CliError, EXIT } from './cli-error.js'

/**
 * Turns what the user typed into one stored session id: the whole id, or a unique prefix of one (`inspect 56af`,
 * like git's short hashes). No match and an ambiguous prefix are usage errors; the ambiguous one lists the
 * candidates, newest first.
 */
export async function resolveSessionRef(store: SessionStore, ref: string): Promise<string> {
  const wanted = ref.trim().toLowerCase()
  if (wanted === '') throw new CliError('the session id is empty', EXIT.usage)
  if (await store.has(wanted)) return wanted
  // The store's search covers id prefixes (through the session index where there is one), so a prefix never
  // reads every session; a store that ignores the options returns them all, and the filter still decides.
  const matches = (await store.list({ search: wanted })).filter((s) => s.id.startsWith(wanted))
  if (matches.length === 1) return (matches[0] as { id: string }).id
  if (matches.length === 0) throw new CliError(`no session '${ref}' (ledgerloop sessions lists them)`, EXIT.usage)
  const shown = matches.slice(0, 5).map((s) => `  ${s.id}  ${new Date(s.updatedAt).toISOString().replace('T', ' ').slice(0, 19)}`)
  throw new CliError(
    `'${ref}' matches ${matches.length} sessions; type more of the id:\n${shown.join('\n')}${matches.length > 5 ? `\n  … and ${matches.length - 5} more` : ''}`,
    EXIT.usage,
  )
}

/**
 * The most recently written session (what `--continue` resumes), or a usage error when there is none. A newest
 * session that cannot be read is refused with the store's own error (`SESSION_CORRUPT` or `SESSION_VERSION`,
 * naming the file and the problem): continuing an older session instead would go on with the wrong
 * conversation, and "nothing to continue" would hide the damage.
 * @throws HarnessError from the store when the newest session is damaged
 */
export async function mostRecentSession(store: SessionStore): Promise<string> {
  const [newest] = await store.list({ limit: 1 })
  if (newest === undefined) throw new CliError('--continue: there is no session to continue yet (ledgerloop run "…" starts one)', EXIT.usage)
  if (newest.problem !== undefined) {
    try {
      await store.read(newest.id)
    } catch (error) {
      if (!(error instanceof HarnessError)) throw error
      throw new HarnessError(`--continue: the most recent session ${newest.id} cannot be continued: ${error.message}`, error.code, { cause: error })
    }
    // Readable after all (repaired since it was listed): continue it.
  }
  return newest.id
}
