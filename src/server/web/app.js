// The ledgerloop page: a sessions list and one session's timeline or conversation, over the `serve` API only.
import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { ApiError, hasToken, setToken } from './api.js'
import { html } from './html.js'
import { SessionList } from './session-list.js'
import { SessionView } from './session-view.js'
import { CompareView, compareRoute } from './compare.js'

function route() {
  const compare = compareRoute(location.hash)
  if (compare !== undefined) return { page: 'compare', ...compare }
  const match = /^#\/s\/([A-Za-z0-9._-]+)(\/conversation)?/.exec(location.hash)
  return match !== null ? { page: 'session', id: match[1], view: match[2] !== undefined ? 'conversation' : 'timeline' } : { page: 'list' }
}

// No token and a wrong token are different problems: the first needs the printed URL, the second says the
// one given is not (or no longer) this server's — a restarted `serve` prints a new one.
function TokenForm({ onDone }) {
  const [value, setValue] = useState('')
  const wrong = hasToken()
  return html`
    <form class="token-form" onSubmit=${(e) => {
      e.preventDefault()
      setToken(value)
      onDone()
    }}>
      ${wrong
        ? html`<p class="token-problem" role="alert"><strong>That token is not valid for this server.</strong></p>
            <p>Paste the token from the URL <code>ledgerloop serve</code> printed when it started (a restart prints a new one unless <code>--token</code> is given).</p>`
        : html`<p class="token-problem"><strong>This server needs its access token.</strong> Open the URL <code>ledgerloop serve</code> printed (it ends in <code>?token=…</code>), or paste the token here.</p>`}
      <input type="password" autocomplete="off" placeholder="token" value=${value} onInput=${(e) => setValue(e.currentTarget.value)} aria-label="token" />
      <button class="primary" type="submit">Use token</button>
    </form>
  `
}

function App() {
  const [where, setWhere] = useState(route())
  const [error, setError] = useState(undefined)
  const [generation, setGeneration] = useState(0)
  useEffect(() => {
    const onHash = () => {
      setWhere(route())
      setError(undefined)
    }
    addEventListener('hashchange', onHash)
    return () => removeEventListener('hashchange', onHash)
  }, [])
  const navigate = (hash) => {
    location.hash = hash
  }
  const onError = (e) => setError(e)
  const needsToken = error instanceof ApiError && error.status === 401
  return html`
    <header class="top">
      <a class="brand" href="#/">ledgerloop</a>
      ${where.page === 'session' ? html`<span class="crumb">/ session ${where.id.slice(0, 8)}</span>` : where.page === 'compare' ? html`<span class="crumb">/ compare</span>` : html`<span class="crumb">/ sessions</span>`}
      <span class="spacer"></span>
      <span class="muted keys">↑↓ move · Enter open · Ctrl+Enter send</span>
    </header>
    <main key=${generation}>
      ${needsToken
        ? html`<${TokenForm} onDone=${() => {
            setError(undefined)
            setGeneration((g) => g + 1)
          }} />`
        : html`
            ${error !== undefined ? html`<div class="error-banner" role="alert">${error.message}<button onClick=${() => setError(undefined)}>dismiss</button></div>` : ''}
            ${where.page === 'session'
              ? html`<${SessionView} id=${where.id} view=${where.view} onError=${onError} />`
              : where.page === 'compare'
                ? html`<${CompareView} key=${`${where.a} ${where.b}`} a=${where.a} b=${where.b} ignoreText=${where.ignoreText} onError=${onError} />`
                : html`<${SessionList} navigate=${navigate} onError=${onError} />`}
          `}
    </main>
  `
}

render(html`<${App} />`, document.getElementById('app'))
