// The page's only way to the server: the JSON API and its Server-Sent Events tails, with the access token.
import { createParser } from 'eventsource-parser'

const TOKEN_KEY = 'ledgerloop-token'

/** Takes the token from `?token=` (then removes it from the address bar) or from this tab's storage. */
function initialToken() {
  const params = new URLSearchParams(location.search)
  const fromUrl = params.get('token')
  if (fromUrl !== null) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl)
    params.delete('token')
    const query = params.toString()
    history.replaceState(null, '', `${location.pathname}${query !== '' ? `?${query}` : ''}${location.hash}`)
    return fromUrl
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? ''
}

let token = initialToken()

/** True when the page has a token to send (from the URL, this tab's storage, or typed in). */
export function hasToken() {
  return token !== ''
}

/** Replaces the token (typed into the page after a 401). */
export function setToken(value) {
  token = value.trim()
  sessionStorage.setItem(TOKEN_KEY, token)
}

/** An API failure with the server's error code. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message)
    this.status = status
    this.code = code
  }
}

function headers(extra = {}) {
  return token !== '' ? { authorization: `Bearer ${token}`, ...extra } : extra
}

/** GET a JSON route. */
export async function get(path) {
  const res = await fetch(path, { headers: headers() })
  return answer(res)
}

/** POST a JSON body to a route. */
export async function post(path, body = {}) {
  const res = await fetch(path, { method: 'POST', headers: headers({ 'content-type': 'application/json' }), body: JSON.stringify(body) })
  return answer(res)
}

async function answer(res) {
  const text = await res.text()
  const body = text === '' ? {} : JSON.parse(text)
  if (!res.ok) throw new ApiError(res.status, body.error?.code ?? 'HTTP', body.error?.message ?? `HTTP ${res.status}`)
  return body
}

/**
 * Follows a session live from after `afterSeq`: each event once and in order, reconnecting with
 * `Last-Event-ID` after a drop. Returns a function that stops following.
 */
export function follow(id, afterSeq, { onEvent, onApprovals, onConnected }) {
  let last = afterSeq
  let stopped = false
  let controller
  const run = async () => {
    while (!stopped) {
      controller = new AbortController()
      try {
        const extra = last >= 0 ? { 'last-event-id': String(last) } : {}
        const res = await fetch(`/api/sessions/${encodeURIComponent(id)}/stream`, { headers: headers(extra), signal: controller.signal })
        if (!res.ok || res.body === null) throw new ApiError(res.status, 'STREAM', `stream answered ${res.status}`)
        onConnected?.(true)
        const parser = createParser({
          onEvent(message) {
            if (message.event === 'approvals') {
              onApprovals?.(JSON.parse(message.data).approvals)
              return
            }
            if (message.id === undefined) return
            const event = JSON.parse(message.data)
            if (event.seq <= last) return
            last = event.seq
            onEvent(event)
          },
        })
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
        for (;;) {
          const { value, done } = await reader.read()
          if (done) break
          parser.feed(value)
        }
      } catch (error) {
        if (stopped) return
        if (error instanceof ApiError && error.status === 404) return
      }
      onConnected?.(false)
      if (!stopped) await new Promise((r) => setTimeout(r, 1000))
    }
  }
  void run()
  return () => {
    stopped = true
    controller?.abort()
  }
}
