// The sessions list: status, last reason, turns, tokens and cost, filterable by title and by content (with each
// match's snippet), keyboard navigable.
import { html } from './html.js'
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, get, post } from './api.js'
import { MatchSnippet, SEARCH_DEBOUNCE_MS, SEARCH_MAX_LENGTH, useDebounced } from './content-match.js'
import { count, money, tone, when } from './figures.js'
import { wantsPageKeys } from './page-keys.js'

const STATUSES = ['', 'running', 'awaiting-approval', 'idle', 'stored']
const PAGE = 100

export function SessionList({ navigate, onError }) {
  const [rows, setRows] = useState(undefined)
  const [total, setTotal] = useState(0)
  const [q, setQ] = useState('')
  const [status, setStatus] = useState('')
  // Content search: what is typed, what was last sent (after a pause in typing), and why it failed if it did.
  const [grepInput, setGrepInput] = useState('')
  const grep = useDebounced(grepInput.trim(), SEARCH_DEBOUNCE_MS)
  const [searched, setSearched] = useState('')
  const [searchError, setSearchError] = useState(undefined)
  const [limit, setLimit] = useState(PAGE)
  const [focus, setFocus] = useState(0)
  const table = useRef(null)

  useEffect(() => {
    let live = true
    const load = async () => {
      const params = new URLSearchParams({ limit: String(limit) })
      if (q.trim() !== '') params.set('q', q.trim())
      if (status !== '') params.set('status', status)
      if (grep !== '') params.set('grep', grep)
      try {
        const page = await get(`/api/sessions?${params}`)
        if (!live) return
        setRows(page.sessions)
        setTotal(page.total)
        setSearched(grep)
        setSearchError(undefined)
      } catch (error) {
        if (!live) return
        // A failed search is the search box's problem (shown beside it, the list emptied so no stale rows
        // pass for matches); a missing token or a failed plain listing is the page's.
        if (grep !== '' && !(error instanceof ApiError && error.status === 401)) {
          setRows([])
          setTotal(0)
          setSearched(grep)
          setSearchError(error)
        } else onError(error)
      }
    }
    void load()
    // The list is a summary: a refresh every few seconds keeps running sessions' figures current.
    const timer = setInterval(load, 3000)
    return () => {
      live = false
      clearInterval(timer)
    }
  }, [q, status, grep, limit])

  const create = async () => {
    try {
      const { id } = await post('/api/sessions', {})
      navigate(`#/s/${id}`)
    } catch (error) {
      onError(error)
    }
  }

  const onKey = (event) => {
    if (rows === undefined || rows.length === 0) return false
    if (event.key === 'ArrowDown' || event.key === 'j') setFocus((f) => Math.min(rows.length - 1, f + 1))
    else if (event.key === 'ArrowUp' || event.key === 'k') setFocus((f) => Math.max(0, f - 1))
    else if (event.key === 'Home') setFocus(0)
    else if (event.key === 'End') setFocus(rows.length - 1)
    else if (event.key === 'Enter') navigate(`#/s/${rows[Math.min(focus, rows.length - 1)].id}`)
    else return false
    event.preventDefault()
    return true
  }

  // ↑/↓ and Enter work as soon as the list shows, without clicking into the table first (the filter box keeps
  // its own keys).
  const keyRef = useRef(onKey)
  keyRef.current = onKey
  useEffect(() => {
    const onDocumentKey = (event) => {
      if (!wantsPageKeys(event) || table.current?.contains(event.target)) return
      if (keyRef.current(event)) table.current?.focus({ preventScroll: true })
    }
    document.addEventListener('keydown', onDocumentKey)
    return () => document.removeEventListener('keydown', onDocumentKey)
  }, [])

  useEffect(() => {
    table.current?.querySelector(`[data-index="${focus}"]`)?.scrollIntoView({ block: 'nearest' })
  }, [focus])

  return html`
    <section class="list">
      <div class="toolbar">
        <input class="filter" type="search" placeholder="Filter by title or id" value=${q} onInput=${(e) => setQ(e.currentTarget.value)} aria-label="filter sessions" />
        <input class="filter content-search" type="search" placeholder="Search prompts, answers, tool output" maxlength=${SEARCH_MAX_LENGTH} value=${grepInput} onInput=${(e) => setGrepInput(e.currentTarget.value)} aria-label="search session content" />
        <select value=${status} onChange=${(e) => setStatus(e.currentTarget.value)} aria-label="status">
          ${STATUSES.map((s) => html`<option value=${s}>${s === '' ? 'any status' : s}</option>`)}
        </select>
        <span class="muted list-count">${rows === undefined ? 'loading…' : grepInput.trim() !== searched ? 'searching…' : `${count(total)} session${total === 1 ? '' : 's'}${searched !== '' ? ` containing “${searched}”` : ''}`}</span>
        <span class="spacer"></span>
        <button class="primary" onClick=${create}>New session</button>
      </div>
      <div class="table-scroll">
      <table class="sessions" ref=${table} tabindex="0" onKeyDown=${onKey} aria-label="sessions">
        <thead>
          <tr><th>Session</th><th>Status</th><th>Last reason</th><th class="num">Turns</th><th class="num">Tokens in</th><th class="num">Cached</th><th class="num">Tokens out</th><th class="num">Cost</th><th>Updated</th></tr>
        </thead>
        <tbody>
          ${(rows ?? []).map(
            (row, i) => html`
              <tr data-index=${i} data-id=${row.id} class=${i === focus ? 'focused' : ''} onClick=${() => navigate(`#/s/${row.id}`)}>
                <td class="title-cell">
                  <a href=${`#/s/${row.id}`}>${row.problem !== undefined ? `(unreadable: ${row.problem})` : row.title === '' ? '(no prompt yet)' : row.title}</a>
                  <div class="id">${row.id}${row.parentSession !== undefined ? ` · fork of ${row.parentSession.slice(0, 8)}` : ''}</div>
                  ${row.match !== undefined ? html`<${MatchSnippet} match=${row.match} needle=${searched} />` : ''}
                </td>
                <td>
                  <span class=${`badge ${tone(row.status)}`}>${row.status}</span>
                  ${row.quarantine !== undefined ? html` <span class="badge bad quarantined" title=${row.quarantine.reason}>quarantined</span>` : ''}
                  ${row.owner !== undefined ? html`<div class="id owner" title="the worker holding the lease">${row.owner}</div>` : ''}
                </td>
                <td><span class=${`reason ${tone(row.lastReason ?? '')}`}>${row.lastReason ?? '—'}</span></td>
                <td class="num">${row.turns}${row.status === 'running' || row.status === 'awaiting-approval' ? html`<span class="muted running-turn" title="the turns that ended, and the one running now"> +1 running</span>` : ''}</td>
                <td class="num">${count(row.usage?.input)}</td>
                <td class="num">${count(row.usage?.cacheRead)}</td>
                <td class="num">${count(row.usage?.output)}</td>
                <td class="num" title=${row.cost?.asOf !== undefined ? `prices as of ${row.cost.asOf}` : 'no prices for this model'}>${money(row.cost)}</td>
                <td class="muted">${when(row.updatedAt)}</td>
              </tr>
            `,
          )}
        </tbody>
      </table>
      </div>
      ${searchError !== undefined
        ? html`<p class="search-error" role="alert">Search for “${searched}” failed: ${searchError.message}</p>`
        : rows !== undefined && rows.length === 0 && searched !== ''
          ? html`<p class="empty search-empty">No session's prompts, answers or tool output contain “${searched}”${q !== '' || status !== '' ? ' (with the other filters)' : ''}. <button onClick=${() => setGrepInput('')}>Clear search</button></p>`
          : rows !== undefined && rows.length === 0
            ? html`<p class="empty">No sessions${q !== '' || status !== '' ? ' match' : ' yet: start one with New session'}.</p>`
            : ''}
      ${rows !== undefined && rows.length < total ? html`<button class="more" onClick=${() => setLimit(limit + PAGE)}>Show more</button>` : ''}
    </section>
  `
}
