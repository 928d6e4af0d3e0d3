// The waterfall: one row per turn, step, request attempt and tool call, bars on a shared time axis, coloured
// by end reason. Only the rows in view are rendered, so a session of thousands of rows scrolls smoothly.
import { html } from './html.js'
import { useEffect, useRef, useState } from 'preact/hooks'
import { duration, tokens, tone } from './figures.js'

const ROW = 26
const OVERSCAN = 12

function ticks(span) {
  return [0, 0.25, 0.5, 0.75, 1].map((f) => ({ at: f, label: duration(span * f) }))
}

// A bar's figures go after it when there is room, else before it, else over it.
function textPlace(left, width) {
  if (left + width <= 62) return 'after'
  return left >= 32 ? 'before' : 'over'
}

function textStyle(left, width) {
  const place = textPlace(left, width)
  if (place === 'after') return `left:${left + width}%`
  if (place === 'before') return `right:${100 - left}%`
  return `left:${left}%`
}

export function Waterfall({ timeline, selected, onSelect, onOpen }) {
  const box = useRef(null)
  const [view, setView] = useState({ top: 0, height: 600 })
  const rows = timeline.rows
  const span = Math.max(1, timeline.end - timeline.start)

  useEffect(() => {
    const el = box.current
    if (el === null) return
    const measure = () => setView({ top: el.scrollTop, height: el.clientHeight })
    measure()
    const observer = new ResizeObserver(measure)
    observer.observe(el)
    return () => observer.disconnect()
  }, [])

  // Keep the selected row in view when it is moved with the keyboard.
  useEffect(() => {
    const el = box.current
    if (el === null || selected < 0) return
    const y = selected * ROW
    if (y < el.scrollTop) el.scrollTop = y
    else if (y + ROW > el.scrollTop + el.clientHeight) el.scrollTop = y + ROW - el.clientHeight
  }, [selected])

  const onKey = (event) => {
    if (rows.length === 0) return
    if (event.key === 'ArrowDown' || event.key === 'j') onSelect(Math.min(rows.length - 1, selected + 1))
    else if (event.key === 'ArrowUp' || event.key === 'k') onSelect(Math.max(0, selected - 1))
    else if (event.key === 'Home') onSelect(0)
    else if (event.key === 'End') onSelect(rows.length - 1)
    else if (event.key === 'PageDown') onSelect(Math.min(rows.length - 1, selected + Math.floor(view.height / ROW)))
    else if (event.key === 'PageUp') onSelect(Math.max(0, selected - Math.floor(view.height / ROW)))
    else if (event.key === 'Enter') onOpen(selected)
    else return
    event.preventDefault()
  }

  const first = Math.max(0, Math.floor(view.top / ROW) - OVERSCAN)
  const last = Math.min(rows.length, Math.ceil((view.top + view.height) / ROW) + OVERSCAN)
  const visible = []
  for (let i = first; i < last; i++) visible.push(i)

  return html`
    <div class="waterfall">
      <div class="axis">
        <div class="axis-label">${timeline.turns} turn${timeline.turns === 1 ? '' : 's'} · ${timeline.requests} request${timeline.requests === 1 ? '' : 's'}</div>
        <div class="axis-bar">${ticks(span).map((t) => html`<span class="tick" style=${`left:${t.at * 100}%`}>${t.label}</span>`)}</div>
      </div>
      <div class="rows" ref=${box} tabindex="0" role="tree" aria-label="timeline" onScroll=${(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })} onKeyDown=${onKey}>
        <div class="spacer-rows" style=${`height:${rows.length * ROW}px`}>
          ${visible.map((i) => {
            const row = rows[i]
            const end = row.end ?? timeline.end
            const left = ((row.start - timeline.start) / span) * 100
            const width = Math.max(0.3, ((end - row.start) / span) * 100)
            const figures = row.usage !== undefined ? tokens(row.usage) : ''
            return html`
              <div
                class=${`row depth-${row.depth} kind-${row.kind}${i === selected ? ' selected' : ''}`}
                style=${`top:${i * ROW}px`}
                role="treeitem"
                aria-selected=${i === selected}
                data-kind=${row.kind}
                data-index=${i}
                onClick=${() => {
                  onSelect(i)
                  onOpen(i)
                }}
              >
                <div class="row-label" title=${row.detail}>
                  <span class=${`dot ${tone(row.status)}`}></span>
                  <span class="name">${row.label}</span>
                  <span class="status">${row.status}</span>
                </div>
                <div class="row-track">
                  <div class=${`bar ${tone(row.status)}`} style=${`left:${left}%;width:${Math.min(width, 100 - left)}%`}></div>
                  <span class=${`bar-text ${textPlace(left, width)}`} style=${textStyle(left, width)}>${duration(end - row.start)}${figures !== '' ? ` · ${figures}` : ''}</span>
                </div>
              </div>
            `
          })}
        </div>
      </div>
    </div>
  `
}
