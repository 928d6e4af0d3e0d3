// Two sessions side by side, turn by turn (`#/compare?a=ID&b=ID`): the same facts as `ledgerloop diff`, from
// `GET /api/compare`. A turn that behaved differently is marked, and so is what differs in it: the words of the
// final text only one side has, the tool calls that are not the same call at the same place, the end reason.
import { html } from './html.js'
import { useEffect, useState } from 'preact/hooks'
import { get } from './api.js'
import { count, duration, money, tone } from './figures.js'

/** The ids of `#/compare?a=…&b=…`, or undefined when the hash is not a compare route. */
export function compareRoute(hash) {
  const match = /^#\/compare(?:\?(.*))?$/.exec(hash)
  if (match === null) return undefined
  const params = new URLSearchParams(match[1] ?? '')
  return { a: params.get('a') ?? '', b: params.get('b') ?? '', ignoreText: params.get('ignoreText') === 'true' }
}

/** The hash of the compare view of `a` and `b`. */
export function compareHash(a, b, ignoreText = false) {
  return `#/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}${ignoreText ? '&ignoreText=true' : ''}`
}

// How a turn ended, as `inspect` says it: the kind, an error's code, a cancel's cause.
function reasonText(reason) {
  if (reason.kind === 'error') return `error ${reason.error?.code ?? ''}`.trim()
  if (reason.kind === 'aborted') return `aborted (${reason.reason?.kind ?? 'cancel'})`
  return reason.kind
}

function shortArguments(text) {
  return text.length > 160 ? `${text.slice(0, 157)}…` : text
}

// One side's final text, with the words only this side has marked (`removed` on A, `added` on B).
function MarkedText({ facts, parts, side }) {
  if (facts.text === '') return html`<p class="muted">(no final text)</p>`
  if (parts === undefined) return html`<div class="cmp-text">${facts.text}</div>`
  const own = side === 'a' ? 'removed' : 'added'
  const shown = parts.filter((p) => p.op === 'same' || p.op === own)
  return html`<div class="cmp-text">${shown.map((p, i) => html`${i > 0 ? ' ' : ''}${p.op === 'same' ? p.text : html`<mark class=${`cmp-${own}`}>${p.text}</mark>`}`)}</div>`
}

function Side({ facts, other, parts, side, reasonDiffers }) {
  if (facts === undefined) return html`<div class="cmp-side cmp-missing"><p class="muted">no ended turn here</p></div>`
  return html`
    <div class="cmp-side">
      <${MarkedText} facts=${facts} parts=${parts} side=${side} />
      ${facts.toolCalls.length > 0
        ? html`<ol class="cmp-calls">
            ${facts.toolCalls.map((c, i) => {
              const twin = other?.toolCalls[i]
              const same = twin !== undefined && twin.name === c.name && twin.arguments === c.arguments
              return html`<li class=${same ? 'cmp-call' : 'cmp-call cmp-changed'} title=${same ? '' : 'not the same call at this place in the other session'}><code>${c.name}</code> <span class="cmp-args">${shortArguments(c.arguments)}</span></li>`
            })}
          </ol>`
        : html`<p class="muted cmp-no-calls">no tool calls</p>`}
      <div class="cmp-figures">
        <span class=${`reason ${tone(facts.reason.kind)}${reasonDiffers ? ' cmp-changed' : ''}`}>${reasonText(facts.reason)}</span>
        <span>${facts.steps} step${facts.steps === 1 ? '' : 's'}</span>
        <span>${count(facts.usage.inputTokens + (facts.usage.cacheReadTokens ?? 0))} in · ${count(facts.usage.outputTokens)} out</span>
        ${facts.cost !== undefined ? html`<span>${money(facts.cost)}</span>` : ''}
        <span>${duration(facts.durationMs)}</span>
      </div>
    </div>
  `
}

function TurnRow({ t }) {
  const reasonDiffers = t.a !== undefined && t.b !== undefined && t.differences.some((d) => d.startsWith('ended '))
  return html`
    <section class=${`cmp-turn ${t.same ? 'cmp-same' : 'cmp-differs'}`} data-turn=${t.turn} aria-label=${`turn ${t.turn}`}>
      <div class="cmp-turn-head">
        <strong>turn ${t.turn}</strong>
        <span class=${`badge ${t.same ? 'good' : 'bad'}`}>${t.same ? 'same' : 'differs'}</span>
        ${t.differences.length > 0 ? html`<ul class="cmp-differences">${t.differences.map((d) => html`<li>${d}</li>`)}</ul>` : ''}
      </div>
      <div class="cmp-sides">
        <${Side} facts=${t.a} other=${t.b} parts=${t.textParts} side="a" reasonDiffers=${reasonDiffers} />
        <${Side} facts=${t.b} other=${t.a} parts=${t.textParts} side="b" reasonDiffers=${reasonDiffers} />
      </div>
    </section>
  `
}

function SessionHead({ label, s }) {
  return html`
    <div class="cmp-session">
      <span class="cmp-label">${label}</span>
      <a href=${`#/s/${s.id}`}>${s.title !== '' ? s.title : '(no prompt)'}</a>
      <div class="id">${s.id}${s.provider !== undefined ? ` · ${s.provider}/${s.model}` : ''} · ${s.turns} turn${s.turns === 1 ? '' : 's'}${s.forkedFrom !== undefined ? ` · rerun of ${s.forkedFrom.slice(0, 8)}` : ''}</div>
    </div>
  `
}

/** The compare view. */
export function CompareView({ a, b, ignoreText, onError }) {
  const [comparison, setComparison] = useState(undefined)
  const [problem, setProblem] = useState(undefined)
  useEffect(() => {
    let live = true
    setComparison(undefined)
    setProblem(undefined)
    if (a === '' || b === '') {
      setProblem('Name two sessions to compare: #/compare?a=ID&b=ID (or use "Compare with…" on a session).')
      return undefined
    }
    get(`/api/compare?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}${ignoreText ? '&ignoreText=true' : ''}`)
      .then((c) => live && setComparison(c))
      .catch((error) => {
        if (!live) return
        if (error.status === 401) onError(error)
        else setProblem(error.message)
      })
    return () => {
      live = false
    }
  }, [a, b, ignoreText])

  if (problem !== undefined) return html`<p class="cmp-problem" role="alert">${problem}</p>`
  if (comparison === undefined) return html`<p class="muted">comparing ${a.slice(0, 8)} with ${b.slice(0, 8)}…</p>`
  const differing = comparison.turns.filter((t) => !t.same).map((t) => t.turn)
  return html`
    <section class="compare">
      <div class="cmp-head">
        <${SessionHead} label="A" s=${comparison.a} />
        <${SessionHead} label="B" s=${comparison.b} />
      </div>
      <div class="cmp-toolbar">
        <span class=${`cmp-verdict ${comparison.same ? 'good' : 'bad'}`} role="status">
          ${comparison.same ? 'same behaviour' : `behaviour differs in turn${differing.length === 1 ? '' : 's'} ${differing.join(', ')}`}
        </span>
        <label><input type="checkbox" checked=${ignoreText} onChange=${(e) => (location.hash = compareHash(a, b, e.currentTarget.checked))} /> ignore final texts</label>
        <a href=${compareHash(b, a, ignoreText)}>swap A and B</a>
        <span class="muted">steps, tokens, cost and duration are shown, never compared</span>
      </div>
      ${comparison.turns.length === 0 ? html`<p class="muted">Neither session has an ended turn.</p>` : comparison.turns.map((t) => html`<${TurnRow} key=${t.turn} t=${t} />`)}
    </section>
  `
}
