// Content search on the sessions list: the debounced search text, and each matching session's snippet with
// the searched text marked. Snippets are rendered as text nodes (Preact escapes them), never as HTML: they are
// prompts, answers and tool output, which may hold markup of their own.
import { html } from './html.js'
import { useEffect, useState } from 'preact/hooks'

/** How long typing must pause before a search is sent (each search reads the store's content index). */
export const SEARCH_DEBOUNCE_MS = 250

/** The server's limit on the `grep` parameter (longer text is refused with INVALID_INPUT). */
export const SEARCH_MAX_LENGTH = 100

const PART_LABELS = { prompt: 'prompt', answer: 'answer', 'tool-output': 'tool output' }

/** `value`, but only once it has stayed the same for `ms` (so each keystroke does not send a request). */
export function useDebounced(value, ms) {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    // Clearing the box takes effect at once: the full list is what the user asked for.
    if (value === '') {
      setSettled('')
      return undefined
    }
    const timer = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(timer)
  }, [value, ms])
  return settled
}

function escapeForRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * Splits `snippet` into plain and matched pieces: the store matches case-insensitively, so the marks do too.
 * Returns `[{ text, hit }]`; a needle the snippet does not hold (it was cut) yields one plain piece.
 */
export function markMatches(snippet, needle) {
  const trimmed = needle.trim()
  if (trimmed === '') return [{ text: snippet, hit: false }]
  const pieces = []
  let last = 0
  for (const found of snippet.matchAll(new RegExp(escapeForRegExp(trimmed), 'giu'))) {
    if (found.index > last) pieces.push({ text: snippet.slice(last, found.index), hit: false })
    pieces.push({ text: found[0], hit: true })
    last = found.index + found[0].length
  }
  if (last < snippet.length) pieces.push({ text: snippet.slice(last), hit: false })
  return pieces
}

/** Where a listed session matched: the part (prompt, answer, tool output), its seq, and the snippet marked. */
export function MatchSnippet({ match, needle }) {
  return html`
    <div class="content-match" data-part=${match.part} data-seq=${match.seq}>
      <span class="match-part">${PART_LABELS[match.part] ?? match.part}</span>
      <span class="match-snippet">${markMatches(match.snippet, needle).map((piece) => (piece.hit ? html`<mark>${piece.text}</mark>` : piece.text))}</span>
    </div>
  `
}
