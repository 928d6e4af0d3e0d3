import { grepNeedle, type ContentMatch } from './content-search.js'
import type { SessionList, SessionListOptions, SessionSummary } from './types.js'

/** Builds a {@link SessionList} (its `total` and `indexNote` are non-enumerable properties) from rows, the total that matched, and an optional index note. */
export function sessionList(rows: SessionSummary[], total: number, indexNote?: string): SessionList {
  // Not enumerable: the result still compares, spreads and serialises as the plain array of rows it is.
  Object.defineProperty(rows, 'total', { value: total, enumerable: false })
  if (indexNote !== undefined) Object.defineProperty(rows, 'indexNote', { value: indexNote, enumerable: false })
  return rows as SessionList
}

/**
 * Applies {@link SessionListOptions} to every summary of a store that lists in memory (already newest first).
 * `grep` needs `contentMatch`, the session's first match of the needle (undefined: none); without it a `grep`
 * matches nothing here (a caller that can read the logs passes one).
 */
export function pageOf(
  all: readonly SessionSummary[],
  options: SessionListOptions = {},
  contentMatch?: (summary: SessionSummary, needle: string) => ContentMatch | undefined,
): SessionList {
  let matched = options.search !== undefined && options.search !== '' ? all.filter((s) => matchesSearch(s, options.search as string)) : all
  const needle = grepNeedle(options.grep)
  if (needle !== undefined) {
    const rows: SessionSummary[] = []
    for (const s of matched) {
      const match = contentMatch?.(s, needle)
      if (match !== undefined) rows.push({ ...s, match })
    }
    matched = rows
  }
  const offset = Math.max(0, options.offset ?? 0)
  const end = options.limit === undefined ? undefined : offset + Math.max(0, options.limit)
  return sessionList(matched.slice(offset, end), matched.length)
}

/** The rule of `search`: title or first prompt contains the text (case-insensitive), or the id starts with it. */
export function matchesSearch(summary: Pick<SessionSummary, 'id' | 'title' | 'firstPrompt'>, search: string): boolean {
  const needle = search.toLowerCase()
  return (
    summary.id.toLowerCase().startsWith(needle) ||
    (summary.firstPrompt ?? '').toLowerCase().includes(needle) ||
    (summary.title ?? '').toLowerCase().includes(needle)
  )
}

/** Newest first; equal times by id, so a page boundary does not depend on the order rows were found in. */
export function newestFirst(a: Pick<SessionSummary, 'id' | 'updatedAt'>, b: Pick<SessionSummary, 'id' | 'updatedAt'>): number {
  return b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
}
