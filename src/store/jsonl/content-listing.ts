// `JsonlStore.list({ grep })`: the session index's rows (every session, newest first, `search` applied) kept
// where the content index finds the needle, each with its match, then paged.
import { grepNeedle } from '../content-search.js'
import { sessionList } from '../session-list.js'
import type { SessionList, SessionListOptions, SessionSummary } from '../types.js'
import type { ContentIndex } from './content-index.js'
import type { SessionIndex } from './session-index.js'

/** Lists the sessions whose content matches `options.grep` (see {@link ContentIndex.search}). */
export function grepListing(index: SessionIndex, content: ContentIndex, options: SessionListOptions): SessionList {
  const needle = grepNeedle(options.grep)
  const { grep: _, limit, offset, ...rest } = options
  if (needle === undefined) return index.list({ ...rest, ...(limit !== undefined ? { limit } : {}), ...(offset !== undefined ? { offset } : {}) })
  const all = index.list(rest)
  const matches = content.search(
    all.map((s) => s.id),
    needle,
  )
  const rows: SessionSummary[] = []
  for (const s of all) {
    const match = matches.get(s.id)
    if (match !== undefined) rows.push({ ...s, match })
  }
  const from = Math.max(0, offset ?? 0)
  const page = rows.slice(from, limit === undefined ? undefined : from + Math.max(0, limit))
  return sessionList(page, rows.length, all.indexNote)
}
