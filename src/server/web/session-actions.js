// A session's "Compare with…" and "Rerun on…" actions, and the "rerun of …" line of its header. Compare opens
// the compare view against a session picked from the list (the original of a rerun first); rerun starts
// `POST /api/sessions/:id/rerun` with `ledgerloop rerun`'s options and opens the new session.
import { html } from './html.js'
import { useEffect, useState } from 'preact/hooks'
import { get, post } from './api.js'
import { compareHash } from './compare.js'

/** `rerun of 1a2b3c4d` under a rerun's title, linking the original and the comparison with it. */
export function RerunOf({ id, header }) {
  if (header?.forkedFrom === undefined) return ''
  return html`<div class="rerun-of">rerun of <a href=${`#/s/${header.forkedFrom}`}>${header.forkedFrom.slice(0, 8)}</a> · <a href=${compareHash(header.forkedFrom, id)}>compare with it</a></div>`
}

function CompareForm({ id, header, onClose }) {
  const [sessions, setSessions] = useState(undefined)
  const [other, setOther] = useState(header?.forkedFrom ?? header?.parentSession ?? '')
  const [problem, setProblem] = useState(undefined)
  useEffect(() => {
    get('/api/sessions?limit=200')
      .then((page) => {
        const rows = page.sessions.filter((s) => s.id !== id)
        setSessions(rows)
        setOther((current) => (current !== '' ? current : (rows[0]?.id ?? '')))
      })
      .catch((error) => setProblem(error.message))
  }, [id])
  const submit = (e) => {
    e.preventDefault()
    if (other === '') return
    location.hash = compareHash(other, id)
  }
  return html`
    <form class="action-form compare-form" onSubmit=${submit} aria-label="compare with">
      <label>Compare this session (B) with (A)
        <select value=${other} onChange=${(e) => setOther(e.currentTarget.value)} aria-label="session to compare with">
          ${(sessions ?? []).map((s) => html`<option value=${s.id}>${s.id.slice(0, 8)} · ${s.title !== '' ? s.title : '(no prompt)'}${s.id === header?.forkedFrom ? ' (its original)' : ''}</option>`)}
        </select>
      </label>
      ${problem !== undefined ? html`<p class="form-problem" role="alert">${problem}</p>` : ''}
      <div class="form-buttons">
        <button class="primary" type="submit" disabled=${other === ''}>Compare</button>
        <button type="button" onClick=${onClose}>Close</button>
      </div>
    </form>
  `
}

function RerunForm({ id, session, onClose }) {
  const [provider, setProvider] = useState('')
  const [model, setModel] = useState('')
  const [system, setSystem] = useState('')
  const [tools, setTools] = useState('recorded')
  const [fromTurn, setFromTurn] = useState('1')
  const [problem, setProblem] = useState(undefined)
  const [busy, setBusy] = useState(false)
  const submit = async (e) => {
    e.preventDefault()
    const turn = Number(fromTurn)
    if (!Number.isInteger(turn) || turn < 1) return setProblem('From turn must be a turn number from 1.')
    const body = {
      tools,
      ...(provider.trim() !== '' ? { provider: provider.trim() } : {}),
      ...(model.trim() !== '' ? { model: model.trim() } : {}),
      ...(system.trim() !== '' ? { system } : {}),
      ...(turn > 1 ? { fromTurn: turn } : {}),
    }
    setBusy(true)
    setProblem(undefined)
    try {
      const { id: rerun } = await post(`/api/sessions/${encodeURIComponent(id)}/rerun`, body)
      location.hash = `#/s/${rerun}`
    } catch (error) {
      setProblem(`${error.code !== undefined ? `${error.code}: ` : ''}${error.message}`)
      setBusy(false)
    }
  }
  const recorded = session.provider !== undefined ? `${session.provider}/${session.model}` : 'the server default'
  return html`
    <form class="action-form rerun-form" onSubmit=${submit} aria-label="rerun on">
      <p class="muted">Feeds this session's recorded user inputs, turn by turn, to the agent as the server runs it now, into a new session. Empty fields keep the recording's (${recorded}).</p>
      <div class="form-grid">
        <label>Provider <input value=${provider} placeholder=${session.provider ?? ''} onInput=${(e) => setProvider(e.currentTarget.value)} aria-label="provider" /></label>
        <label>Model <input value=${model} placeholder=${session.model ?? ''} onInput=${(e) => setModel(e.currentTarget.value)} aria-label="model" /></label>
        <label>Tools
          <select value=${tools} onChange=${(e) => setTools(e.currentTarget.value)} aria-label="tools">
            <option value="recorded">recorded (nothing runs)</option>
            <option value="live">live (the server's tools run)</option>
          </select>
        </label>
        <label>From turn <input type="number" min="1" value=${fromTurn} onInput=${(e) => setFromTurn(e.currentTarget.value)} aria-label="from turn" /></label>
      </div>
      <label>System prompt <span class="muted">(replaces the server's persona; empty keeps it)</span>
        <textarea value=${system} onInput=${(e) => setSystem(e.currentTarget.value)} aria-label="system prompt"></textarea>
      </label>
      ${problem !== undefined ? html`<p class="form-problem" role="alert">${problem}</p>` : ''}
      <div class="form-buttons">
        <button class="primary" type="submit" disabled=${busy}>${busy ? 'Starting…' : 'Start rerun'}</button>
        <button type="button" onClick=${onClose}>Close</button>
      </div>
    </form>
  `
}

/** The two buttons and, when one is open, its form. */
export function SessionActions({ id, session }) {
  const [open, setOpen] = useState(undefined)
  useEffect(() => setOpen(undefined), [id])
  const toggle = (name) => setOpen((current) => (current === name ? undefined : name))
  return html`
    <div class="session-actions">
      <button onClick=${() => toggle('compare')} aria-expanded=${open === 'compare'}>Compare with…</button>
      <button onClick=${() => toggle('rerun')} aria-expanded=${open === 'rerun'}>Rerun on…</button>
      ${open === 'compare' ? html`<${CompareForm} id=${id} header=${session.header} onClose=${() => setOpen(undefined)} />` : ''}
      ${open === 'rerun' ? html`<${RerunForm} id=${id} session=${session} onClose=${() => setOpen(undefined)} />` : ''}
    </div>
  `
}
