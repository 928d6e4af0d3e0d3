// The conversation view: a session read like a chat transcript, turn by turn — prompts, answers with their
// reasoning folded away, tool calls with their arguments, permission decision and result, retried requests, and
// how each turn ended (an error with its message and a hint). Drawn from GET …/conversation, a fold of the log,
// so a stored session reads exactly like one that is running.
import { html } from './html.js'
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks'
import { get } from './api.js'
import { duration, tone } from './figures.js'
import { prettyJson } from './json-text.js'
import { RestoreNote, RewindToHere, TurnFiles, useFileChanges } from './file-changes.js'

function Prompt({ item }) {
  return html`
    <div class="chat-item chat-prompt" data-seq=${item.seq}>
      <div class="chat-who">You</div>
      <div class="chat-text">${item.text}${item.images > 0 ? html`<span class="muted"> (+${item.images} image${item.images === 1 ? '' : 's'})</span>` : ''}</div>
    </div>
  `
}

function Answer({ item }) {
  return html`
    <div class="chat-item chat-answer" data-seq=${item.seq}>
      <div class="chat-who">Assistant${item.interrupted ? html` <span class="chat-note">cut off</span>` : ''}</div>
      ${item.reasoning !== undefined
        ? html`<details class="chat-reasoning"><summary>Reasoning <span class="muted">(${item.reasoning.length.toLocaleString('en-US')} characters)</span></summary><div class="chat-text reasoning-text">${item.reasoning}</div></details>`
        : ''}
      ${item.text !== '' ? html`<div class="chat-text answer-text">${item.text}</div>` : html`<div class="muted">(no text)</div>`}
    </div>
  `
}

// What a person reads in the status chip: "denied" for a refused call (as the terminal says it), not "failed".
// A call without a result in a session nobody runs is not running: its process stopped before it answered.
function toolState(item, waiting, orphaned) {
  if (item.status === 'running') return waiting ? 'waiting for approval' : orphaned ? 'no result' : 'running'
  return item.status
}

function decisionText(decision) {
  if (decision === undefined) return ''
  const verb = decision.decision === 'allow' ? 'allowed' : 'denied'
  const who = decision.by === 'user' ? 'by you' : decision.by === 'rule' ? `by rule ${decision.rule ?? ''}`.trim() : decision.by === 'remembered' ? 'by an earlier “always”' : `by ${decision.by}`
  return `${verb} ${who}${decision.answer === 'always' ? ' (always)' : ''}`
}

// A long session has hundreds of tool calls: past this many, calls show as one line each until opened, so the
// view stays quick to draw and to skim.
const OPEN_TOOLS_UP_TO = 30

function Tool({ item, waiting, orphaned, startOpen }) {
  const [open, setOpen] = useState(startOpen || waiting)
  const state = toolState(item, waiting, orphaned)
  const stateTone = state === 'waiting for approval' ? 'attention' : state === 'denied' || state === 'no result' ? 'warn' : tone(item.status === 'running' ? 'open' : item.status)
  return html`
    <div class=${`chat-item chat-tool status-${item.status}${open ? ' open' : ''}`} data-call=${item.callId} data-seq=${item.seq}>
      <button class="chat-tool-head" aria-expanded=${open} onClick=${() => setOpen(!open)}>
        <span class=${`badge ${stateTone}`}>${state}</span>
        <strong class="tool-name">${item.name}</strong>
        ${item.subject !== '' ? html`<code class="tool-subject">${item.subject}</code>` : ''}
        <span class="spacer"></span>
        ${item.decision !== undefined ? html`<span class="muted tool-decision">${decisionText(item.decision)}</span>` : ''}
      </button>
      ${open
        ? html`<div class="chat-label">Arguments</div>
            <pre class="block clipped tool-args">${prettyJson(item.arguments)}</pre>
            ${item.result !== undefined
              ? html`<div class="chat-label">Result${item.code !== undefined ? html` <code class="reason bad">${item.code}</code>` : ''}</div>
                  <pre class=${`block clipped tool-result-text${item.status !== 'ok' ? ' error' : ''}`}>${item.result !== '' ? item.result : '(empty)'}</pre>`
              : ''}`
        : ''}
      ${item.hint !== undefined ? html`<div class="chat-hint">${item.hint}</div>` : ''}
    </div>
  `
}

function Retry({ item }) {
  return html`
    <div class="chat-item chat-retry" data-seq=${item.seq}>
      <span class="reason warn">request ${item.attempt} failed</span> <code>${item.code}</code> ${item.message}
      <span class="muted"> · retried after ${duration(item.delayMs)}</span>
      ${item.hint !== undefined ? html`<div class="chat-hint">${item.hint}</div>` : ''}
    </div>
  `
}

// Why a turn ended the way it did, in the reader's words (the turn's detail says what; this says why).
function endNote(turn) {
  if (turn.status === 'interrupted') return 'The process running this session stopped during the turn (it crashed, was killed, or its worker lost the lease); the next process to open the session closed it. Tool calls that may have run are marked as such.'
  return undefined
}

function TurnEnd({ turn }) {
  if (turn.status === 'open') return ''
  const note = endNote(turn)
  if (turn.error !== undefined) {
    return html`
      <div class="chat-item chat-error" role="note">
        <div><strong>Turn failed</strong> <code>${turn.error.code}${turn.error.status !== undefined ? ` · HTTP ${turn.error.status}` : ''}</code></div>
        <div class="chat-error-message">${turn.error.message}</div>
        ${turn.error.hint !== undefined ? html`<div class="chat-hint">${turn.error.hint}</div>` : ''}
      </div>
    `
  }
  if (turn.status === 'completed') return ''
  return html`<div class=${`chat-item chat-end ${tone(turn.status)}`}><span class=${`reason ${tone(turn.status)}`}>${turn.detail}</span>${note !== undefined ? html`<div class="chat-hint">${note}</div>` : ''}</div>`
}

function Turn({ turn, waiting, live, orphaned, openTools, sessionId, files }) {
  return html`
    <section class="chat-turn" data-turn=${turn.turn} data-status=${turn.status}>
      <div class="chat-turn-head">
        <span class=${`dot ${tone(turn.status)}`}></span>
        <strong>Turn ${turn.turn}</strong>
        ${turn.continues !== undefined ? html`<span class="muted continues">continues turn ${turn.continues} after a crash</span>` : ''}
        <span class="spacer"></span>
        <span class=${`reason ${tone(turn.status)}`}>${turn.status !== 'open' ? turn.status : orphaned ? 'open, not running' : 'running'}</span>
      </div>
      ${turn.items.map((item) => {
        switch (item.kind) {
          case 'prompt':
            return html`<${Prompt} item=${item} />`
          case 'answer':
            return html`<${Answer} item=${item} />`
          case 'tool':
            return html`<${Tool} key=${item.callId} item=${item} waiting=${waiting.has(item.callId)} orphaned=${orphaned && turn.status === 'open'} startOpen=${openTools} />`
          case 'retry':
            return html`<${Retry} item=${item} />`
          default:
            return ''
        }
      })}
      ${turn.status === 'open' && !live.committed && (live.text !== '' || live.reasoning !== '')
        ? html`<div class="chat-item chat-answer streaming"><div class="chat-who">Assistant <span class="chat-note">streaming</span></div>${live.reasoning !== '' ? html`<details class="chat-reasoning"><summary>Reasoning</summary><div class="chat-text reasoning-text">${live.reasoning}</div></details>` : ''}<div class="chat-text answer-text">${live.text}</div></div>`
        : ''}
      <${TurnEnd} turn=${turn} />
      <${TurnFiles} sessionId=${sessionId} changes=${files.changes} />
      ${files.rewind !== undefined ? html`<${RewindToHere} sessionId=${sessionId} turn=${turn.turn} laterFiles=${files.rewind.laterFiles} disabled=${files.rewind.disabled} />` : ''}
      ${files.restores.map((r) => html`<${RestoreNote} key=${r.seq} restore=${r} />`)}
    </section>
  `
}

/**
 * The conversation of one session; `version` changes whenever the session's log may have grown, `status` is the
 * session's run status (a `stored` session's open turn is one no process runs).
 */
export function ConversationView({ sessionId, version, approvals, live, status }) {
  const [conversation, setConversation] = useState(undefined)
  const [error, setError] = useState(undefined)
  const fileChanges = useFileChanges(sessionId, version)
  const box = useRef(null)
  // Like a chat: it opens at the latest turn and follows new output, unless the reader scrolled up to read.
  const pinned = useRef(true)
  useLayoutEffect(() => {
    const el = box.current
    if (el !== null && pinned.current) el.scrollTop = el.scrollHeight
  }, [conversation, live.text, live.reasoning])
  useEffect(() => {
    let active = true
    get(`/api/sessions/${encodeURIComponent(sessionId)}/conversation`)
      .then((c) => active && (setConversation(c), setError(undefined)))
      .catch((e) => active && setError(e.message))
    return () => {
      active = false
    }
  }, [sessionId, version])
  if (error !== undefined) return html`<div class="conversation"><p class="error">${error}</p></div>`
  if (conversation === undefined) return html`<div class="conversation"><p class="muted">loading the conversation…</p></div>`
  const waiting = new Set(approvals.map((a) => a.callId))
  let tools = 0
  for (const turn of conversation.turns) for (const item of turn.items) if (item.kind === 'tool') tools++
  const files = turnFiles(conversation.turns, fileChanges, status)
  return html`
    <div
      class="conversation"
      ref=${box}
      tabindex="0"
      aria-label="conversation"
      onScroll=${(e) => {
        const el = e.currentTarget
        pinned.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 24
      }}
    >
      ${conversation.turns.length === 0 ? html`<p class="muted empty">No turns yet: send a message below.</p>` : conversation.turns.map((turn) => html`<${Turn} key=${turn.startSeq} turn=${turn} waiting=${waiting} live=${live} orphaned=${status === 'stored'} openTools=${tools <= OPEN_TOOLS_UP_TO} sessionId=${sessionId} files=${files.get(turn.startSeq)} />`)}
    </div>
  `
}

// Per turn (by its start seq): its file changes, the rewinds logged after it, and "Rewind to here" — on every
// ended turn but the last (rewinding to the last one would change nothing), disabled while a turn runs.
function turnFiles(turns, { byTurn, restores }, status) {
  const last = turns.findLast((t) => t.status !== 'open')?.turn
  const running = status === 'running' || status === 'awaiting-approval'
  const out = new Map()
  for (const turn of turns) {
    const later = new Set()
    for (const [n, changes] of byTurn) if (n > turn.turn) for (const file of changes.files) later.add(`${file.root}\0${file.path}`)
    const rewindable = turn.status !== 'open' && last !== undefined && turn.turn < last
    out.set(turn.startSeq, {
      changes: byTurn.get(turn.turn),
      restores: restores.filter((r) => r.afterTurn === turn.turn),
      ...(rewindable ? { rewind: { laterFiles: later.size, disabled: running } } : {}),
    })
  }
  return out
}
