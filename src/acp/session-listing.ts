// `session/list`: the store's top-level sessions (forks included, sub-agents not: they belong to their parent's
// tool call), newest first, with the cwd each was started in. A session's cwd is in its stored header, which
// only a read of the session gives, so one call reads a bounded number of sessions and hands back a cursor
// for the rest: a page may hold fewer sessions than the limit when a `cwd` filter skips many.
import { resolve } from 'node:path'
import { RequestError, type ListSessionsRequest, type ListSessionsResponse, type SessionInfo } from '@agentclientprotocol/sdk'
import { listSessions } from '../app/session-listing.js'
import type { SessionStore } from '../store/types.js'

/** Sessions in one page at most. */
export const LIST_PAGE_SIZE = 50
/** Sessions read for one page at most (each read yields its cwd): what bounds a filtered page's cost. */
export const LIST_SCAN_LIMIT = 200

/** The cursor of the next page: how many listed sessions the pages so far have looked at. */
function encodeCursor(offset: number): string {
  return Buffer.from(JSON.stringify({ offset }), 'utf8').toString('base64url')
}

function decodeCursor(cursor: string): number {
  try {
    const { offset } = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { offset?: unknown }
    if (typeof offset === 'number' && Number.isSafeInteger(offset) && offset >= 0) return offset
  } catch {
    // Falls through to the error below: a cursor we did not make.
  }
  throw RequestError.invalidParams({ cursor }, 'the cursor is not one this agent returned')
}

/**
 * One page of `session/list`: sessions newest first, only those started in `cwd` when it is given (compared as
 * resolved absolute paths), with a `nextCursor` while there are more to look at.
 */
export async function listAcpSessions(store: SessionStore, request: ListSessionsRequest): Promise<ListSessionsResponse> {
  const offset = request.cursor !== undefined && request.cursor !== null ? decodeCursor(request.cursor) : 0
  const wanted = request.cwd !== undefined && request.cwd !== null ? resolve(request.cwd) : undefined
  const { sessions: candidates, total } = await listSessions(store, { offset, limit: LIST_SCAN_LIMIT, keep: (s) => s.parentCallId === undefined && s.problem === undefined })
  const page: SessionInfo[] = []
  let looked = 0
  for (const summary of candidates) {
    if (page.length === LIST_PAGE_SIZE) break
    looked++
    let cwd: string | undefined
    try {
      cwd = (await store.read(summary.id)).header.cwd
    } catch {
      continue // removed or damaged since it was listed: `ledgerloop verify` is where a damaged log is reported
    }
    if (cwd === undefined || (wanted !== undefined && resolve(cwd) !== wanted)) continue
    page.push({ sessionId: summary.id, cwd, ...(summary.title !== undefined ? { title: summary.title } : {}), updatedAt: new Date(summary.updatedAt).toISOString() })
  }
  const next = offset + looked
  return { sessions: page, ...(next < total ? { nextCursor: encodeCursor(next) } : {}) }
}
