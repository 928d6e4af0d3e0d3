// The request panel, like a network inspector's: headers (config and tools), body (system and messages, with
// the prompt-cache stable prefix marked) and the diff from the previous request.
import { html } from './html.js'
import { useEffect, useState } from 'preact/hooks'
import { get } from './api.js'

function Block({ block }) {
  switch (block.type) {
    case 'text':
      return html`<pre class="block text">${block.text}</pre>`
    case 'reasoning':
      return html`<pre class="block reasoning"><span class="tag">reasoning</span>${block.text}</pre>`
    case 'tool-call':
      return html`<pre class="block tool-call"><span class="tag">tool call ${block.name} · ${block.id}</span>${block.arguments}</pre>`
    case 'tool-result':
      return html`<div class=${`block tool-result${block.isError ? ' error' : ''}`}>
        <span class="tag">result of ${block.toolCallId}${block.isError ? ' · error' : ''}</span>
        ${(block.content ?? []).map((b) => html`<${Block} block=${b} />`)}
      </div>`
    case 'image':
      return html`<div class="block"><span class="tag">image</span></div>`
    default:
      return html`<pre class="block">${JSON.stringify(block, null, 2)}</pre>`
  }
}

/** One message of a request. */
export function MessageView({ message, index, mark }) {
  const source = message.source?.kind ?? ''
  return html`
    <div class=${`message role-${message.role}${mark !== undefined ? ` ${mark}` : ''}`} data-index=${index}>
      <div class="message-head"><span class="role">${message.role}</span><span class="muted">#${index + 1}${source !== '' ? ` · ${source}` : ''}</span>${mark === 'cached' ? html`<span class="cache-tag">stable prefix</span>` : ''}${mark === 'added' ? html`<span class="added-tag">new</span>` : ''}</div>
      ${message.content.map((b) => html`<${Block} block=${b} />`)}
    </div>
  `
}

function Headers({ request }) {
  const config = request.config ?? {}
  return html`
    <div class="headers">
      <h4>General</h4>
      <table class="kv">
        <tr><th>Request</th><td>${request.n} of ${request.count} · turn ${request.turn} step ${request.step}</td></tr>
        <tr><th>Built from</th><td>seq 0 … ${request.firstSeq - 1} (streamed seq ${request.firstSeq}–${request.lastSeq})</td></tr>
        <tr><th>Finish</th><td class=${request.failure !== undefined ? 'reason bad' : ''}>${request.finish ?? 'none (cancelled or still streaming)'}</td></tr>
        ${request.failure !== undefined ? html`<tr><th>Failure</th><td class="reason bad request-failure">${request.failure.code}${request.failure.status !== undefined ? ` (HTTP ${request.failure.status})` : ''}: ${request.failure.message}</td></tr>` : ''}
        ${Object.entries(config).map(([k, v]) => html`<tr><th>${k}</th><td>${typeof v === 'string' ? v : JSON.stringify(v)}</td></tr>`)}
      </table>
      <h4>Tools (${request.tools.length})</h4>
      <ul class="tools">${request.tools.map((t) => html`<li><strong>${t.name}</strong> <span class="muted">${t.description}</span></li>`)}</ul>
      <h4>System prompt</h4>
      <pre class="block system">${request.system ?? '(none)'}</pre>
    </div>
  `
}

function Body({ request }) {
  const stable = request.diff?.stablePrefix?.messages ?? 0
  return html`
    <div class="body">
      ${request.diff !== null ? html`<p class="muted">The first ${stable} message${stable === 1 ? '' : 's'} ${request.diff.stablePrefix.system ? 'and the tools and system prompt ' : ''}repeat the previous request exactly: a provider's prompt cache can reuse them.</p>` : ''}
      ${request.messages.map((m, i) => html`<${MessageView} message=${m} index=${i} mark=${i < stable ? 'cached' : request.diff !== null ? 'added' : undefined} />`)}
    </div>
  `
}

function Diff({ request }) {
  const diff = request.diff
  if (diff === null) return html`<p class="muted diff">The first request of the session: nothing to compare with.</p>`
  const p = diff.stablePrefix
  return html`
    <div class="diff">
      <table class="kv">
        <tr><th>Compared</th><td>request ${diff.from} → ${diff.to}</td></tr>
        <tr><th>Stable prefix</th><td class="stable-prefix">tools ${p.tools ? 'same' : 'changed'} · system ${p.system ? 'same' : 'changed'} · ${p.messages} message${p.messages === 1 ? '' : 's'}</td></tr>
        <tr><th>Messages</th><td>${diff.commonMessages} kept · ${diff.removedMessages} dropped · ${diff.addedMessages.length} added</td></tr>
        <tr><th>System prompt</th><td>${diff.systemChanged ? 'changed' : 'unchanged'}</td></tr>
        <tr><th>Tools</th><td>${[...diff.tools.added.map((n) => `+${n}`), ...diff.tools.removed.map((n) => `−${n}`), ...diff.tools.changed.map((n) => `~${n}`)].join(' ') || 'unchanged'}</td></tr>
        ${diff.config.map((c) => html`<tr><th>${c.key}</th><td><del>${JSON.stringify(c.before)}</del> → <ins>${JSON.stringify(c.after)}</ins></td></tr>`)}
      </table>
      <h4>Added messages</h4>
      ${diff.addedMessages.map((m, i) => html`<${MessageView} message=${m} index=${diff.commonMessages + i} mark="added" />`)}
    </div>
  `
}

const TABS = ['Headers', 'Messages', 'Diff']

/** The panel of one request (fetched by number). */
export function RequestPanel({ sessionId, n, version }) {
  const [request, setRequest] = useState(undefined)
  const [error, setError] = useState(undefined)
  const [tab, setTab] = useState('Messages')
  useEffect(() => {
    let live = true
    get(`/api/sessions/${encodeURIComponent(sessionId)}/requests/${n}`)
      .then((r) => live && (setRequest(r), setError(undefined)))
      .catch((e) => live && setError(e.message))
    return () => {
      live = false
    }
  }, [sessionId, n, version])
  if (error !== undefined) return html`<div class="panel"><p class="error">${error}</p></div>`
  if (request === undefined) return html`<div class="panel"><p class="muted">loading request ${n}…</p></div>`
  return html`
    <div class="panel request-panel" data-request=${n}>
      <div class="tabs" role="tablist">
        <span class="panel-title">Request ${n}</span>
        ${TABS.map((t) => html`<button role="tab" class=${t === tab ? 'tab active' : 'tab'} aria-selected=${t === tab} onClick=${() => setTab(t)}>${t}</button>`)}
      </div>
      ${request.failure !== undefined ? html`<div class="request-failed" role="note">This request failed: <code>${request.failure.code}${request.failure.status !== undefined ? ` · HTTP ${request.failure.status}` : ''}</code> ${request.failure.message}</div>` : ''}
      <div class="tab-body">
        ${tab === 'Headers' ? html`<${Headers} request=${request} />` : tab === 'Messages' ? html`<${Body} request=${request} />` : html`<${Diff} request=${request} />`}
      </div>
    </div>
  `
}
