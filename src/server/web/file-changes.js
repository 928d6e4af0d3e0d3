// Each turn's file changes and "Rewind to here", in the conversation view. The list of changed paths comes from
// GET …/file-changes (a fold of the log's checkpoints, cheap to read again as the session grows); a turn's diffs
// from GET …/file-changes/:turn once someone opens one of its files. "Rewind to here" asks first, then runs
// POST …/rewind: it shows what was restored, deleted or left as a conflict (with "force" for the conflicts) and
// opens the fork it continued in.
import { html } from './html.js'
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks'
import { get, post } from './api.js'

/** The session's file changes, read again whenever `version` changes: `{ byTurn: Map, restores }`. */
export function useFileChanges(sessionId, version) {
  const [changes, setChanges] = useState({ byTurn: new Map(), restores: [] })
  useEffect(() => {
    let active = true
    get(`/api/sessions/${encodeURIComponent(sessionId)}/file-changes`)
      .then((c) => active && setChanges({ byTurn: new Map(c.turns.map((t) => [t.turn, t])), restores: c.restores }))
      // A server without the route, or a failed read: the conversation shows without file changes.
      .catch(() => active && setChanges({ byTurn: new Map(), restores: [] }))
    return () => {
      active = false
    }
  }, [sessionId, version])
  return changes
}

const KIND_TONE = { created: 'good', deleted: 'bad', modified: 'info', unchanged: 'plain' }

// As unified diffs write it: an empty side of a hunk starts at the line before (a new file is `-0,0`).
function hunkStart(start, lines) {
  return lines === 0 ? start - 1 : start
}

function DiffLines({ file }) {
  if (file === undefined) return html`<div class="diff-note">loading the diff…</div>`
  return html`
    ${file.note !== undefined ? html`<div class="diff-note">${file.note}</div>` : ''}
    ${file.hunks !== undefined && file.hunks.length > 0
      ? html`<div class="diff-lines" aria-label=${`diff of ${file.path}`}>
          ${file.hunks.map((h) => [
            html`<div class="diff-hunk">@@ −${hunkStart(h.oldStart, h.oldLines)},${h.oldLines} +${hunkStart(h.newStart, h.newLines)},${h.newLines} @@</div>`,
            ...h.lines.map((line) => html`<div class=${line.startsWith('+') ? 'diff-add' : line.startsWith('-') ? 'diff-del' : 'diff-ctx'}>${line}</div>`),
          ])}
        </div>`
      : ''}
  `
}

function FileRow({ file, diff, onOpen }) {
  const [open, setOpen] = useState(false)
  const toggle = () => {
    if (!open) onOpen()
    setOpen(!open)
  }
  return html`
    <div class=${`turn-file file-${file.change}${open ? ' open' : ''}`} data-path=${file.path}>
      <button class="turn-file-head" aria-expanded=${open} onClick=${toggle}>
        <span class=${`badge ${KIND_TONE[file.change] ?? 'plain'} file-kind`}>${file.change}</span>
        <code class="file-path">${file.path}</code>
        ${diff?.added !== undefined ? html`<span class="diff-added">+${diff.added}</span> <span class="diff-removed">−${diff.removed}</span>` : ''}
        ${diff?.binary ? html`<span class="muted">binary</span>` : ''}
        <span class="spacer"></span>
        <span class="muted file-calls">${file.calls.map((c) => c.tool).join(', ')}</span>
      </button>
      ${open ? html`<div class="turn-file-diff"><${DiffLines} file=${diff} /></div>` : ''}
    </div>
  `
}

/** The files a turn changed, each opening to its diff (all closed at first). */
export function TurnFiles({ sessionId, changes }) {
  const [diffs, setDiffs] = useState(undefined)
  const [problem, setProblem] = useState(undefined)
  // What the turn's list says now: a turn still running may change more files, and its diffs are read again.
  const signature = changes === undefined ? '' : changes.files.map((f) => `${f.path}:${f.after}`).join('|')
  useEffect(() => setDiffs(undefined), [sessionId, signature])
  if (changes === undefined || changes.files.length === 0) return ''
  const load = () => {
    if (diffs !== undefined) return
    get(`/api/sessions/${encodeURIComponent(sessionId)}/file-changes/${changes.turn}`)
      .then((d) => setDiffs(new Map(d.files.map((f) => [`${f.root}\0${f.path}`, f]))))
      .catch((e) => setProblem(e.message))
  }
  const n = changes.files.length
  return html`
    <div class="chat-item turn-files" aria-label=${`files changed in turn ${changes.turn}`}>
      <div class="chat-label">Files changed <span class="muted">(${n} file${n === 1 ? '' : 's'}${changes.incomplete ? '; a scan stopped at its file limit, there may be more' : ''})</span></div>
      ${changes.files.map((file) => html`<${FileRow} key=${`${file.root}\0${file.path}`} file=${file} diff=${diffs?.get(`${file.root}\0${file.path}`)} onOpen=${load} />`)}
      ${problem !== undefined ? html`<div class="diff-note would-fail">${problem}</div>` : ''}
    </div>
  `
}

/** A rewind logged in this session (the one that started a fork, or a files-only one): what it put back. */
export function RestoreNote({ restore }) {
  const parts = [
    restore.restored.length > 0 ? `restored ${restore.restored.join(', ')}` : '',
    restore.deleted.length > 0 ? `deleted ${restore.deleted.join(', ')}` : '',
    restore.conflicts.length > 0 ? `left ${restore.conflicts.map((c) => c.path).join(', ')} as ${restore.conflicts.length === 1 ? 'it was' : 'they were'} (conflict)` : '',
  ].filter((p) => p !== '')
  return html`<div class="chat-item restore-note" data-seq=${restore.seq} role="note">
    <strong>Files rewound</strong> to the end of turn ${restore.toTurn} of <a href=${`#/s/${restore.session}/conversation`}>${restore.session.slice(0, 8)}</a>: ${parts.length > 0 ? parts.join('; ') : 'nothing needed restoring'}.
  </div>`
}

function ResultList({ result }) {
  const empty = result.restored.length + result.deleted.length + result.conflicts.length === 0
  return html`<ul class="rewind-paths">
    ${result.restored.map((p) => html`<li class="rewind-restored"><span class="badge good">restored</span> <code>${p}</code></li>`)}
    ${result.deleted.map((p) => html`<li class="rewind-deleted"><span class="badge bad">deleted</span> <code>${p}</code></li>`)}
    ${result.conflicts.map((c) => html`<li class="rewind-conflict"><span class="badge warn">conflict</span> <code>${c.path}</code> <span class="muted">${c.reason}</span></li>`)}
    ${empty ? html`<li class="muted">No file needed restoring.</li>` : ''}
  </ul>`
}

/**
 * "Rewind to here" on turn `turn`: a confirmation, the rewind, its result, "force" when paths were left as
 * conflicts (a rewind again, from the same session, with force: a new fork), and the fork to open.
 */
export function RewindToHere({ sessionId, turn, laterFiles, disabled }) {
  const [stage, setStage] = useState('idle') // idle | confirm | busy | done
  const [result, setResult] = useState(undefined)
  const [problem, setProblem] = useState(undefined)
  // The button to press next gets the focus when the panel changes stage (Enter confirms, Escape closes).
  // Closing the panel gives it back to "Rewind to here" (never on first showing the button: that would take the
  // focus from wherever the reader is). A layout effect: the focus moves in the same task as the panel appears,
  // so an Escape or Enter pressed the moment it shows reaches it (a plain effect ran after the paint, and a key
  // pressed in between went to the page).
  const next = useRef(null)
  const opened = useRef(false)
  useLayoutEffect(() => {
    if (stage !== 'idle') opened.current = true
    if (opened.current) next.current?.focus()
  }, [stage])
  useEffect(() => {
    setStage('idle')
    setResult(undefined)
    setProblem(undefined)
  }, [sessionId, turn])
  const rewind = async (force) => {
    setStage('busy')
    setProblem(undefined)
    try {
      setResult(await post(`/api/sessions/${encodeURIComponent(sessionId)}/rewind`, force ? { toTurn: turn, force: true } : { toTurn: turn }))
      setStage('done')
    } catch (error) {
      setProblem(`${error.code !== undefined ? `${error.code}: ` : ''}${error.message}`)
      setStage(result !== undefined ? 'done' : 'confirm')
    }
  }
  const close = () => {
    setStage('idle')
    setResult(undefined)
    setProblem(undefined)
  }
  const onKeyDown = (e) => {
    if (e.key === 'Escape' && stage !== 'busy') {
      e.stopPropagation()
      close()
    }
  }
  if (stage === 'idle') {
    return html`<div class="rewind-row"><button class="rewind-here" ref=${next} disabled=${disabled} title=${disabled ? 'the session is running a turn' : `put the files back as they were at the end of turn ${turn} and continue from there in a fork`} onClick=${() => setStage('confirm')}>Rewind to here</button></div>`
  }
  return html`
    <div class="rewind-panel" role="dialog" aria-label=${`rewind to turn ${turn}`} onKeyDown=${onKeyDown}>
      ${stage === 'confirm' || (stage === 'busy' && result === undefined)
        ? html`<p><strong>Rewind to the end of turn ${turn}?</strong> ${laterFiles > 0 ? `The ${laterFiles} file${laterFiles === 1 ? '' : 's'} the agent changed after it go back as they were then` : 'The agent changed no files after it'}, and the conversation continues in a new session forked here. This session stays as it is. A file changed outside the agent since is left alone and listed as a conflict.</p>
            <div class="form-buttons">
              <button class="primary rewind-confirm" disabled=${stage === 'busy'} onClick=${() => rewind(false)} ref=${next}>${stage === 'busy' ? 'Rewinding…' : 'Rewind'}</button>
              <button class="rewind-cancel" disabled=${stage === 'busy'} onClick=${close}>Cancel</button>
            </div>`
        : html`<p class="rewind-summary"><strong>${result.conflicts.length > 0 ? `Rewound to turn ${turn}, with ${result.conflicts.length} conflict${result.conflicts.length === 1 ? '' : 's'}` : `Rewound to turn ${turn}`}</strong>: the conversation continues in <code>${result.sessionId.slice(0, 8)}</code>.</p>
            <${ResultList} result=${result} />
            ${result.conflicts.length > 0 ? html`<p class="muted">Conflicting files were changed outside the agent after its last change and are left as they are. Force restores them too (a new fork, from this session again).</p>` : ''}
            <div class="form-buttons">
              <button class="primary rewind-open" onClick=${() => (location.hash = `#/s/${result.sessionId}/conversation`)} ref=${next}>Open the fork</button>
              ${result.conflicts.length > 0 ? html`<button class="rewind-force" disabled=${stage === 'busy'} onClick=${() => rewind(true)}>${stage === 'busy' ? 'Forcing…' : 'Force: restore them too'}</button>` : ''}
              <button class="rewind-close" onClick=${close}>Close</button>
            </div>`}
      ${problem !== undefined ? html`<p class="form-problem" role="alert">${problem}</p>` : ''}
    </div>
  `
}
