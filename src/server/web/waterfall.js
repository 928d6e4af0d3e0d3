// The waterfall: one row per turn, step, request attempt and tool call, bars on a shared time axis, coloured
// by end reason. Only the rows in view are rendered, so a session of thousands of rows scrolls smoothly.
import { html } from './html.js'
import { useEffect, useRef, useState } from 'preact/hooks'
import { duration, tokens, tone } from './figures.js'
import { placeFigures, textWidth } from './bar-figures.js'
import { wantsPageKeys } from './page-keys.js'

const ROW = 26
// The time axis sticks to the top of the scrolled rows (so it always has their width, scrollbar or not).
const AXIS = 27
const OVERSCAN = 12
// Room a tick label needs so neighbouring ticks never touch ("1 m 05 s" in 11.5px plus a gap).
const TICK_ROOM = 80

// As many evenly spaced ticks as fit: five on a wide track, down to the two ends on a narrow one.
function ticks(span, trackWidth) {
  const parts = Math.max(1, Math.min(4, Math.floor(trackWidth / TICK_ROOM) - 1))
  return Array.from({ length: parts + 1 }, (_, i) => ({ at: i / parts, label: duration((span * i) / parts) }))
}

/**
 * The word a row's status chip shows: a refused tool call is "denied" (as the terminal says), not "failed", and
 * a call waiting for a person's answer reads "waiting" rather than "open". `waiting` holds the call ids of pending approvals.
 */
export function shownStatus(row, waiting) {
  if (row.kind === 'tool' && row.status === 'failed' && row.detail.split(' · ')[0] === 'TOOL_DENIED') return 'denied'
  if (row.kind === 'tool' && row.status === 'open' && waiting?.has(row.callId)) return 'waiting'
  return row.status
}

// A failure named on its row without hovering: a failed request's code, a failed turn's code (its detail reads
// `error CODE: message`).
function failureCode(row) {
  if (row.failure !== undefined) return row.failure.code
  if (row.kind === 'turn' && row.status === 'error') return /^error (\S+?):/.exec(row.detail)?.[1]
  if (row.kind === 'tool' && (row.status === 'failed' || shownStatus(row) === 'denied')) return row.detail.split(' · ')[0]
  return undefined
}

function failureMessage(row) {
  if (row.failure !== undefined) return row.failure.message
  if (row.kind === 'turn' && row.status === 'error') return row.detail.replace(/^error \S+?: /, '')
  return undefined
}

// What may go beside a bar, longest first: the first that fits is shown (see placeFigures).
function figureTexts(row, end) {
  const time = duration(end - row.start)
  const code = failureCode(row)
  const message = failureMessage(row)
  if (code !== undefined) return [...(message !== undefined ? [`${time} · ${code}: ${message}`] : []), `${time} · ${code}`, code, time]
  const figures = row.usage !== undefined ? tokens(row.usage) : ''
  return figures !== '' ? [`${time} · ${figures}`, time] : [time]
}

export function Waterfall({ timeline, selected, onSelect, onOpen, waiting }) {
  const box = useRef(null)
  const axis = useRef(null)
  const [view, setView] = useState({ top: 0, height: 600 })
  const [trackWidth, setTrackWidth] = useState(0)
  const rows = timeline.rows
  const span = Math.max(1, timeline.end - timeline.start)

  useEffect(() => {
    const el = box.current
    const bar = axis.current
    if (el === null || bar === null) return
    const measure = () => {
      setView({ top: el.scrollTop, height: el.clientHeight })
      setTrackWidth(bar.clientWidth)
    }
    measure()
    const observer = new ResizeObserver(measure)
    observer.observe(el)
    observer.observe(bar)
    return () => observer.disconnect()
  }, [])

  // Keep the selected row in view when it is moved with the keyboard.
  useEffect(() => {
    const el = box.current
    if (el === null || selected < 0) return
    const y = selected * ROW
    if (y < el.scrollTop) el.scrollTop = y
    else if (AXIS + y + ROW > el.scrollTop + el.clientHeight) el.scrollTop = AXIS + y + ROW - el.clientHeight
  }, [selected])

  const onKey = (event) => {
    if (rows.length === 0) return false
    if (event.key === 'ArrowDown' || event.key === 'j') onSelect(Math.min(rows.length - 1, selected + 1))
    else if (event.key === 'ArrowUp' || event.key === 'k') onSelect(Math.max(0, selected - 1))
    else if (event.key === 'Home') onSelect(0)
    else if (event.key === 'End') onSelect(rows.length - 1)
    else if (event.key === 'PageDown') onSelect(Math.min(rows.length - 1, selected + Math.floor(view.height / ROW)))
    else if (event.key === 'PageUp') onSelect(Math.max(0, selected - Math.floor(view.height / ROW)))
    else if (event.key === 'Enter' && selected >= 0) onOpen(selected)
    else return false
    event.preventDefault()
    return true
  }

  // The keys work as soon as the page shows, without clicking into the rows first: a key pressed while focus is
  // on nothing in particular goes to the waterfall (typing in the message box or a filter keeps its keys).
  const keyRef = useRef(onKey)
  keyRef.current = onKey
  useEffect(() => {
    const onDocumentKey = (event) => {
      if (!wantsPageKeys(event) || box.current?.contains(event.target)) return
      if (keyRef.current(event)) box.current?.focus({ preventScroll: true })
    }
    document.addEventListener('keydown', onDocumentKey)
    return () => document.removeEventListener('keydown', onDocumentKey)
  }, [])

  const first = Math.max(0, Math.floor((view.top - AXIS) / ROW) - OVERSCAN)
  const last = Math.min(rows.length, Math.ceil((view.top + view.height) / ROW) + OVERSCAN)
  const visible = []
  for (let i = first; i < last; i++) visible.push(i)
  const turnsOpen = rows.some((r) => r.kind === 'turn' && r.end === undefined)

  return html`
    <div class="waterfall">
      <div class="rows" ref=${box} tabindex="0" role="tree" aria-label="timeline" onScroll=${(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })} onKeyDown=${onKey}>
        <div class="axis">
          <div class="axis-label">${timeline.turns} turn${timeline.turns === 1 ? '' : 's'}${turnsOpen ? ' (one running)' : ''} · ${timeline.requests} request${timeline.requests === 1 ? '' : 's'}</div>
          <div class="axis-bar" ref=${axis}>${ticks(span, trackWidth).map((t, i, all) => html`<span class=${`tick${i === 0 ? ' first' : i === all.length - 1 ? ' last' : ''}`} style=${`left:${t.at * 100}%`}>${t.label}</span>`)}</div>
        </div>
        <div class="spacer-rows" style=${`height:${rows.length * ROW}px`}>
          ${visible.map((i) => {
            const row = rows[i]
            const end = row.end ?? timeline.end
            const left = ((row.start - timeline.start) / span) * 100
            const width = Math.min(Math.max(0.3, ((end - row.start) / span) * 100), 100 - left)
            const status = shownStatus(row, waiting)
            const code = failureCode(row)
            const texts = figureTexts(row, end)
            const place = placeFigures(texts.map(textWidth), (left / 100) * trackWidth, (width / 100) * trackWidth, trackWidth)
            const continued = row.continues !== undefined ? `continues turn ${row.continues} after a crash` : undefined
            const title = [row.detail, ...(continued !== undefined ? [continued] : []), ...(row.failure !== undefined ? [`${row.failure.code}${row.failure.status !== undefined ? ` (HTTP ${row.failure.status})` : ''}: ${row.failure.message}`] : [])].join('\n')
            return html`
              <div
                class=${`row depth-${row.depth} kind-${row.kind}${i === selected ? ' selected' : ''}`}
                style=${`top:${i * ROW}px`}
                role="treeitem"
                aria-selected=${i === selected}
                data-kind=${row.kind}
                data-index=${i}
                title=${title}
                onClick=${() => {
                  onSelect(i)
                  onOpen(i)
                }}
              >
                <div class="row-label">
                  <span class=${`dot ${tone(status)}`}></span>
                  <span class="name">${row.label}</span>
                  ${continued !== undefined ? html`<span class="continues-mark" title=${continued} aria-label=${continued}>↻ ${row.continues}</span>` : ''}
                  <span class=${`status ${tone(status)}`}>${status}${code !== undefined && status !== 'denied' ? html` <span class="code">${code}</span>` : ''}</span>
                </div>
                <div class="row-track">
                  <div class=${`bar ${tone(status)}`} style=${`left:${left}%;width:${width}%`}></div>
                  ${place !== undefined ? html`<span class=${`bar-text ${place.side}${code !== undefined ? ' failed' : ''}`} style=${`left:${place.x}px`}>${texts[place.index]}</span>` : ''}
                </div>
              </div>
            `
          })}
        </div>
      </div>
    </div>
  `
}
