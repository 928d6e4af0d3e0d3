// One session: totals, pending approvals, the waterfall, the selected row's details, the streaming reply and
// the input box. Follows the session live over the SSE tail and redraws from the server's views.
import { html } from './html.js'
import { useEffect, useRef, useState } from 'preact/hooks'
import { follow, get, post } from './api.js'
import { count, duration, money, tokens, tone } from './figures.js'
import { MessageView, RequestPanel } from './request-panel.js'
import { shownStatus, Waterfall } from './waterfall.js'
import { ConversationView } from './conversation.js'
import { Approvals } from './approvals.js'
import { prettyJson } from './json-text.js'
import { RerunOf, SessionActions } from './session-actions.js'
import { CostCap } from './cost-cap.js'

const REFRESH_MS = 300

function ToolPanel({ sessionId, row, version }) {
  const [events, setEvents] = useState(undefined)
  useEffect(() => {
    let live = true
    const last = row.lastSeq ?? row.firstSeq
    get(`/api/sessions/${encodeURIComponent(sessionId)}/events?after=${row.firstSeq - 1}&limit=${last - row.firstSeq + 1}`).then((r) => live && setEvents(r.events))
    return () => {
      live = false
    }
  }, [sessionId, row.firstSeq, row.lastSeq, version])
  const call = events?.find((e) => e.type === 'tool/call' && e.data.callId === row.callId)
  const result = events?.find((e) => e.type === 'tool/result' && e.data.message?.content?.[0]?.toolCallId === row.callId)
  const decision = events?.find((e) => e.type === 'permission/decision' && e.data.callId === row.callId)
  return html`
    <div class="panel tool-panel">
      <div class="tabs"><span class="panel-title">${row.label}</span></div>
      <div class="tab-body">
        <table class="kv">
          <tr><th>Call</th><td>${row.callId} · seq ${row.firstSeq}${row.lastSeq !== undefined ? `–${row.lastSeq}` : ''}</td></tr>
          <tr><th>Outcome</th><td class=${`reason ${tone(shownStatus(row))}`}>${shownStatus(row)}${row.detail !== row.status ? ` · ${row.detail}` : ''}</td></tr>
          <tr><th>Duration</th><td>${row.end !== undefined ? duration(row.end - row.start) : 'running'}</td></tr>
          ${decision !== undefined ? html`<tr><th>Permission</th><td>${decision.data.decision} by ${decision.data.by}${decision.data.rule ? ` (rule ${decision.data.rule})` : ''}</td></tr>` : ''}
        </table>
        <h4>Arguments</h4>
        <pre class="block">${call !== undefined ? prettyJson(call.data.arguments) : '…'}</pre>
        <h4>Result</h4>
        ${result !== undefined ? html`<${MessageView} message=${result.data.message} index=${0} />` : html`<p class="muted">no result yet</p>`}
      </div>
    </div>
  `
}

function RowPanel({ row }) {
  return html`
    <div class="panel">
      <div class="tabs"><span class="panel-title">${row.label}</span></div>
      <div class="tab-body">
        <table class="kv">
          <tr><th>Status</th><td class=${`reason ${tone(row.status)}`}>${row.detail}</td></tr>
          ${row.failure !== undefined ? html`<tr><th>Failure</th><td class="reason bad">${row.failure.code}${row.failure.status !== undefined ? ` (HTTP ${row.failure.status})` : ''}: ${row.failure.message}</td></tr>` : ''}
          <tr><th>Duration</th><td>${row.end !== undefined ? duration(row.end - row.start) : 'running'}</td></tr>
          <tr><th>Seqs</th><td>${row.firstSeq}${row.lastSeq !== undefined ? `–${row.lastSeq}` : ''}</td></tr>
          ${row.usage !== undefined ? html`<tr><th>Tokens</th><td>${tokens(row.usage)}</td></tr>` : ''}
        </table>
      </div>
    </div>
  `
}

// Unsent text per session, so switching between the timeline and the conversation (each has its own box)
// or to another session and back keeps what was typed.
const drafts = new Map()

function Composer({ sessionId, running, onError }) {
  const [text, setDraft] = useState(drafts.get(sessionId) ?? '')
  const setText = (value) => {
    drafts.set(sessionId, value)
    setDraft(value)
  }
  const send = async (kind) => {
    if (text.trim() === '') return
    try {
      await post(`/api/sessions/${encodeURIComponent(sessionId)}/${kind}`, { text })
      setText('')
    } catch (error) {
      onError(error)
    }
  }
  const cancel = () => post(`/api/sessions/${encodeURIComponent(sessionId)}/cancel`).catch(onError)
  return html`
    <div class="composer">
      <textarea
        placeholder=${running ? 'Steer the running turn, or queue a followup…' : 'Ask something (Ctrl+Enter sends)'}
        value=${text}
        onInput=${(e) => setText(e.currentTarget.value)}
        onKeyDown=${(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault()
            void send(running ? 'steer' : 'followup')
          }
        }}
        aria-label="message"
      ></textarea>
      <div class="composer-buttons">
        <button class="primary send" onClick=${() => send('followup')}>Send</button>
        <button class="steer" onClick=${() => send('steer')} title="add to the running turn's next step">Steer</button>
        <button class="cancel" onClick=${cancel} disabled=${!running}>Cancel turn</button>
      </div>
    </div>
  `
}

// The reply as it streams. `committed` turns true once its assistant/message is in the log: from then on the
// conversation view shows it from the log, and must not show it a second time as streaming text.
function liveReply(state, event) {
  if (event.type === 'step/start') return { text: '', reasoning: '', committed: false }
  if (event.type === 'assistant/message' || event.type === 'turn/end') return state.committed ? state : { ...state, committed: true }
  if (event.type !== 'assistant/chunk') return state
  const chunk = event.data.chunk
  if (chunk.type === 'text-delta') return { ...state, text: state.text + chunk.text }
  if (chunk.type === 'reasoning-delta') return { ...state, reasoning: state.reasoning + chunk.text }
  return state
}

export function SessionView({ id, view, onError }) {
  const [session, setSession] = useState(undefined)
  const [timeline, setTimeline] = useState(undefined)
  const [approvals, setApprovals] = useState([])
  const [selected, setSelected] = useState(-1)
  const [opened, setOpened] = useState(-1)
  const [live, setLive] = useState({ text: '', reasoning: '', committed: false })
  const [version, setVersion] = useState(0)
  const [connected, setConnected] = useState(false)
  const [check, setCheck] = useState(undefined)
  const pending = useRef(undefined)

  const refresh = async () => {
    try {
      const [s, t] = await Promise.all([get(`/api/sessions/${encodeURIComponent(id)}`), get(`/api/sessions/${encodeURIComponent(id)}/timeline`)])
      setSession(s)
      setTimeline(t)
      setVersion((v) => v + 1)
    } catch (error) {
      onError(error)
    }
  }

  useEffect(() => {
    let stop = () => {}
    let active = true
    setSession(undefined)
    setTimeline(undefined)
    setSelected(-1)
    setOpened(-1)
    setCheck(undefined)
    const schedule = () => {
      // Many events arrive per second while a reply streams: redraw the views at most every REFRESH_MS.
      if (pending.current !== undefined) return
      pending.current = setTimeout(() => {
        pending.current = undefined
        if (active) void refresh()
      }, REFRESH_MS)
    }
    ;(async () => {
      try {
        const s = await get(`/api/sessions/${encodeURIComponent(id)}`)
        if (!active) return
        setSession(s)
        setTimeline(await get(`/api/sessions/${encodeURIComponent(id)}/timeline`))
        setApprovals((await get(`/api/sessions/${encodeURIComponent(id)}/approvals`)).approvals)
        stop = follow(id, s.events - 1, {
          onEvent: (event) => {
            setLive((state) => liveReply(state, event))
            schedule()
          },
          onApprovals: (list) => {
            setApprovals(list)
            schedule()
          },
          onConnected: setConnected,
        })
      } catch (error) {
        onError(error)
      }
    })()
    return () => {
      active = false
      stop()
      if (pending.current !== undefined) clearTimeout(pending.current)
      pending.current = undefined
    }
  }, [id])

  if (session === undefined || timeline === undefined) return html`<p class="muted">loading session ${id}…</p>`
  const running = session.status === 'running' || session.status === 'awaiting-approval'
  const openedRow = opened >= 0 ? timeline.rows[opened] : undefined
  // A step opens the request that counted (its last attempt): what the model was sent for that step.
  const stepRequest = openedRow?.kind === 'step' ? timeline.rows.filter((r) => r.kind === 'request' && r.turn === openedRow.turn && r.step === openedRow.step).at(-1) : undefined
  const row = stepRequest ?? openedRow
  const verify = async () => setCheck(await get(`/api/sessions/${encodeURIComponent(id)}/verify`).catch((e) => ({ ok: false, problems: [e.message] })))

  return html`
    <section class="session" data-status=${session.status}>
      <div class="session-head">
        <div>
          <h2>${session.title !== '' ? session.title : '(no prompt yet)'}</h2>
          <div class="id">${id}${session.provider !== undefined ? ` · ${session.provider}/${session.model}` : ''}${connected && session.status !== 'stored' ? ' · live' : ''}</div>
          <${RerunOf} id=${id} header=${session.header} />
          ${session.activity !== undefined ? html`<div class=${`activity activity-${session.activity.kind}`} role="status">${session.activity.summary}</div>` : ''}
          ${session.owner !== undefined ? html`<div class="id owner">run by worker ${session.owner}</div>` : ''}
          ${session.quarantine !== undefined ? html`<${Quarantine} sessionId=${id} quarantine=${session.quarantine} onError=${onError} />` : ''}
        </div>
        <span class="spacer"></span>
        <div class="totals">
          <span class=${`badge ${tone(session.status)}`}>${session.status}</span>
          ${session.quarantine !== undefined ? html`<span class="badge bad quarantined">quarantined</span>` : ''}
          <span class="turn-count"><strong>${count(timeline.turns)}</strong> turn${timeline.turns === 1 ? '' : 's'}</span>
          <span><strong>${count(timeline.requests)}</strong> request${timeline.requests === 1 ? '' : 's'}</span>
          <span title="input tokens (cache hits) · output tokens">${tokens(session.usage)}</span>
          <span title=${session.cost?.asOf !== undefined ? `from logged usage, prices as of ${session.cost.asOf}` : 'no prices for this model'}>cost ${money(session.cost)}</span>
          <${CostCap} cap=${session.costCap} />
          <span><strong>${count(session.events)}</strong> event${session.events === 1 ? '' : 's'}</span>
          <button onClick=${verify}>Verify</button>
        </div>
      </div>
      <${SessionActions} id=${id} session=${session} />
      ${check !== undefined ? html`<div class=${`check ${check.ok ? 'good' : 'bad'}`}>${check.ok ? `log ok: ${check.events} events, ${check.requests} requests rebuilt` : check.problems.map((p) => html`<div>${p}</div>`)}</div>` : ''}
      <${Approvals} sessionId=${id} approvals=${approvals} onError=${onError} />
      <nav class="view-tabs" role="tablist" aria-label="view">
        <a role="tab" class=${view === 'timeline' ? 'view-tab active' : 'view-tab'} aria-selected=${view === 'timeline'} href=${`#/s/${id}`}>Timeline</a>
        <a role="tab" class=${view === 'conversation' ? 'view-tab active' : 'view-tab'} aria-selected=${view === 'conversation'} href=${`#/s/${id}/conversation`}>Conversation</a>
      </nav>
      ${view === 'conversation'
        ? html`<div class="conversation-body">
            <${ConversationView} sessionId=${id} version=${version} approvals=${approvals} live=${live} status=${session.status} />
            <${Composer} sessionId=${id} running=${running} onError=${onError} />
          </div>`
        : html`<div class="session-body">
        <div class="timeline-column">
          <${Waterfall} timeline=${timeline} selected=${selected} onSelect=${setSelected} onOpen=${setOpened} waiting=${new Set(approvals.map((a) => a.callId))} />
          ${running || live.text !== '' ? html`<div class="live-reply" aria-live="polite"><div class="live-head">${running ? 'streaming' : 'last reply'}</div>${live.reasoning !== '' ? html`<pre class="block reasoning">${live.reasoning}</pre>` : ''}<pre class="block text live-text">${live.text}</pre></div>` : ''}
          <${Composer} sessionId=${id} running=${running} onError=${onError} />
        </div>
        <div class="detail-column">
          ${row === undefined
            ? html`<div class="panel"><p class="muted hint">Select a row (click, or ↑/↓ and Enter) to see its request, diff or tool call.</p></div>`
            : row.kind === 'request'
              ? html`<${RequestPanel} sessionId=${id} n=${row.request} version=${row.end === undefined ? version : 0} />`
              : row.kind === 'tool'
                ? html`<${ToolPanel} sessionId=${id} row=${row} version=${row.end === undefined ? version : 0} />`
                : html`<${RowPanel} row=${row} />`}
        </div>
      </div>`}
    </section>
  `
}

// A quarantined session: why, and "resume anyway" (POST …/resume with force: a local session resumes here, a
// fleet's is released for the next worker). The session's own refresh then shows it un-quarantined.
function Quarantine({ sessionId, quarantine, onError }) {
  const [busy, setBusy] = useState(false)
  const resume = async () => {
    setBusy(true)
    try {
      await post(`/api/sessions/${encodeURIComponent(sessionId)}/resume`, { force: true })
    } catch (error) {
      onError(error)
    } finally {
      setBusy(false)
    }
  }
  return html`<div class="quarantine" role="alert">
    <strong>Quarantined:</strong> ${quarantine.reason}. No worker picks it up until someone resumes it.
    <button class="resume-anyway" disabled=${busy} onClick=${resume}>Resume anyway</button>
  </div>`
}
