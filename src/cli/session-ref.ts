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

/** The most recently written session (what `--continue` resumes), or a usage error when there is none. */
export async function mostRecentSession(store: SessionStore): Promise<string> {
  const readable = (list: readonly { id: string; problem?: string }[]) => list.find((s) => s.problem === undefined)
  // The first page almost always has it; only a run of unreadable sessions makes the whole list necessary.
  const newest = readable(await store.list({ limit: 20 })) ?? readable(await store.list())
  if (newest === undefined) throw new CliError('--continue: there is no session to continue yet (ledgerloop run "…" starts one)', EXIT.usage)
  return newest.id
}
