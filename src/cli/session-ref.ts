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
  const sessions = await store.list()
  if (sessions.some((s) => s.id === wanted)) return wanted
  const matches = sessions.filter((s) => s.id.startsWith(wanted))
  if (matches.length === 1) return (matches[0] as { id: string }).id
  if (matches.length === 0) throw new CliError(`no session '${ref}' (ledgerloop sessions lists them)`, EXIT.usage)
  const shown = matches.slice(0, 5).map((s) => `  ${s.id}  ${new Date(s.updatedAt).toISOString().replace('T', ' ').slice(0, 19)}`)
  throw new CliError(
    `'${ref}' matches ${matches.length} sessions; type more of the id:\n${shown.join('\n')}${matches.length > 5 ? `\n  … and ${matches.length - 5} more` : ''}`,
    EXIT.usage,
  )
}

/** The most recently written session (what `--continue` resumes), or a usage error when there is none. */
export async function mostRecentSession(store: SessionStore): Promise<string> {
  const newest = (await store.list()).find((s) => s.problem === undefined)
  if (newest === undefined) throw new CliError('--continue: there is no session to continue yet (ledgerloop run "…" starts one)', EXIT.usage)
  return newest.id
}
