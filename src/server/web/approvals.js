// Pending tool calls, each shown with what it would do before anyone decides: the command of a bash call, the
// diff of a file write or edit against the file as it is now, else the arguments (GET …/approvals/:callId/preview).
import { html } from './html.js'
import { useEffect, useState } from 'preact/hooks'
import { get, post } from './api.js'

// As unified diffs write it: an empty side of a hunk starts at the line before (a new file is `-0,0`).
function hunkStart(start, lines) {
  return lines === 0 ? start - 1 : start
}

function DiffView({ change }) {
  const what = change.file === 'new' ? 'new file' : change.file === 'unknown' ? 'current file unknown' : 'changes'
  return html`
    <div class="approval-diff">
      <div class="diff-head"><code>${change.path}</code> <span class="muted">${what} · </span><span class="diff-added">+${change.added}</span> <span class="diff-removed">−${change.removed}</span></div>
      ${change.note !== undefined ? html`<div class=${change.wouldFail ? 'diff-note would-fail' : 'diff-note'}>${change.note}</div>` : ''}
      ${change.tooLarge ? html`<div class="diff-note">The change is too large to show as a diff.</div>` : ''}
      ${change.hunks.length > 0
        ? html`<div class="diff-lines" aria-label=${`diff of ${change.path}`}>
            ${change.hunks.map((h) => [
              html`<div class="diff-hunk">@@ −${hunkStart(h.oldStart, h.oldLines)},${h.oldLines} +${hunkStart(h.newStart, h.newLines)},${h.newLines} @@</div>`,
              ...h.lines.map((line) => html`<div class=${line.startsWith('+') ? 'diff-add' : line.startsWith('-') ? 'diff-del' : 'diff-ctx'}>${line}</div>`),
            ])}
          </div>`
        : ''}
    </div>
  `
}

function Preview({ preview }) {
  if (preview === undefined) return html`<div class="muted">loading what it would do…</div>`
  if (preview.kind === 'command') return html`<pre class="block approval-command">$ ${preview.command}</pre>${preview.network ? html`<div class="diff-note">with network access</div>` : ''}`
  if (preview.kind === 'file') return html`<${DiffView} change=${preview.change} />`
  return html`<pre class="block clipped approval-args">${JSON.stringify(preview.args, null, 2)}</pre>`
}

function Approval({ sessionId, approval, onError }) {
  const [preview, setPreview] = useState(undefined)
  const base = `/api/sessions/${encodeURIComponent(sessionId)}/approvals/${encodeURIComponent(approval.callId)}`
  useEffect(() => {
    let active = true
    get(`${base}/preview`)
      .then((p) => active && setPreview(p))
      // Answered or withdrawn meanwhile: the list will drop it; show the arguments until then.
      .catch(() => active && setPreview({ kind: 'arguments', args: approval.args }))
    return () => {
      active = false
    }
  }, [base])
  const answer = (decision) => post(base, { decision }).catch(onError)
  // The permission plugin's reason repeats the tool and subject ("write_file a.md needs approval"): say it once,
  // and keep only what it adds (a request for network access).
  const network = /asks for network access/.test(approval.reason)
  return html`
    <div class="approval" data-call=${approval.callId}>
      <div class="approval-head">
        <span class="approval-text"><strong>${approval.tool}</strong>${approval.subject !== '' ? html` <code class="approval-subject">${approval.subject}</code>` : ''} ${network ? 'asks for network access' : 'needs your approval'}</span>
        <span class="spacer"></span>
        <button class="approve" onClick=${() => answer('allow')}>Approve</button>
        <button class="always" onClick=${() => answer('always')} title=${`allow every ${approval.tool} call for the rest of this session`}>Always</button>
        <button class="deny" onClick=${() => answer('deny')}>Deny</button>
      </div>
      <${Preview} preview=${preview} />
    </div>
  `
}

/** The banner of pending approvals (nothing when none waits). */
export function Approvals({ sessionId, approvals, onError }) {
  if (approvals.length === 0) return ''
  return html`<div class="approvals" role="alert">${approvals.map((a) => html`<${Approval} key=${a.callId} sessionId=${sessionId} approval=${a} onError=${onError} />`)}</div>`
}
