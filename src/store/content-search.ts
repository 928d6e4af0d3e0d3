// Content search (`list({ grep })`): what text of a session is searchable, how a match is decided, and the
// snippet a match shows. Every store applies these same rules, whatever index it keeps, so `--grep` means one
// thing on memory, JSONL, SQLite and PostgreSQL.
import { HarnessError } from '../errors/harness-error.js'
import type { ContentBlock } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionSummary } from './types.js'

/** Which kind of text a match was found in: a user's prompt, the model's answer, or a tool's output. */
export type ContentPart = 'prompt' | 'answer' | 'tool-output'

/** Where `grep` matched in a listed session: the first matching event and a short excerpt around the match. */
export interface ContentMatch {
  /** Seq of the event whose text matched (the earliest such event of the session). */
  readonly seq: number
  readonly part: ContentPart
  /**
   * The matched text with some context, one line (whitespace collapsed), at most {@link SNIPPET_MAX}
   * characters; `…` marks a cut at either end.
   */
  readonly snippet: string
}

/** One searchable text of a session: the event it is logged in, its kind, and the text. */
export interface IndexedText {
  readonly seq: number
  readonly part: ContentPart
  readonly text: string
}

/** The longest snippet, in characters (UTF-16 code units), the `…` marks included. */
export const SNIPPET_MAX = 160
/** The longest `grep` text accepted. */
export const GREP_MAX = 100

/**
 * Checks a `grep` option: a string of 1..{@link GREP_MAX} characters after trimming surrounding whitespace
 * (the trimmed text is what is searched for).
 * @returns the text to search for, or undefined for an absent or blank option (no content search)
 * @throws HarnessError `INVALID_INPUT` for anything else
 */
export function grepNeedle(grep: unknown): string | undefined {
  if (grep === undefined) return undefined
  if (typeof grep !== 'string') throw new HarnessError(`grep must be a string, got ${typeof grep}`, 'INVALID_INPUT')
  const needle = grep.trim()
  if (needle === '') return undefined
  if (needle.length > GREP_MAX) throw new HarnessError(`grep is ${needle.length} characters long; at most ${GREP_MAX} are searched for`, 'INVALID_INPUT')
  return needle
}

// The text blocks of a content array, joined by newlines (images, tool calls and reasoning are not searched).
function textBlocks(content: unknown): string {
  if (!Array.isArray(content)) return ''
  const out: string[] = []
  for (const block of content as ContentBlock[]) if (block !== null && typeof block === 'object' && block.type === 'text' && typeof block.text === 'string') out.push(block.text)
  return out.join('\n')
}

/**
 * The searchable text an event carries, or undefined: a `user/message` a user sent (its text blocks), an
 * `assistant/message` (its visible text, never its reasoning) and a `tool/result` (the text of its result).
 * Nothing else is searched: not tool-call arguments, system prompts, request headers or errors, so an index
 * holds only text the log already holds, and no more of it than these three kinds.
 */
export function indexedTextOf(event: Pick<SessionEvent, 'type' | 'seq' | 'data'>): IndexedText | undefined {
  const data = event.data as Record<string, unknown> | null
  if (data === null || typeof data !== 'object') return undefined
  let part: ContentPart
  let text: string
  if (event.type === 'user/message') {
    if ((data.source as { kind?: unknown } | undefined)?.kind !== 'user') return undefined
    part = 'prompt'
    text = textBlocks(data.content)
  } else if (event.type === 'assistant/message') {
    part = 'answer'
    text = textBlocks((data.message as { content?: unknown } | undefined)?.content)
  } else if (event.type === 'tool/result') {
    part = 'tool-output'
    const blocks = (data.message as { content?: unknown } | undefined)?.content
    text = Array.isArray(blocks) ? blocks.map((b) => textBlocks((b as { content?: unknown } | null)?.content)).filter((t) => t !== '').join('\n') : ''
  } else return undefined
  return text === '' ? undefined : { seq: event.seq, part, text }
}

/** The searchable texts of `events`, in their order. */
export function indexedTexts(events: Iterable<Pick<SessionEvent, 'type' | 'seq' | 'data'>>): IndexedText[] {
  const out: IndexedText[] = []
  for (const event of events) {
    const text = indexedTextOf(event)
    if (text !== undefined) out.push(text)
  }
  return out
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * A case-insensitive matcher of `needle` (Unicode simple case folding, as a `/iu` regular expression): finds
 * the first occurrence at or after a position, or -1. Substring semantics, like grep: `port` finds `export`.
 */
export function needleMatcher(needle: string): (text: string, from?: number) => number {
  const pattern = new RegExp(escapeRegExp(needle), 'giu')
  return (text, from = 0) => {
    pattern.lastIndex = from
    const found = pattern.exec(text)
    return found === null ? -1 : found.index
  }
}

/**
 * The snippet of a match of `length` characters at `at` in `text`: whitespace collapsed to single spaces,
 * context on both sides, at most {@link SNIPPET_MAX} characters with `…` where it was cut. The matched text is
 * always whole in it (a needle is at most {@link GREP_MAX} characters, shorter than a snippet).
 */
export function snippetAt(text: string, at: number, length: number): string {
  const hit = collapse(text.slice(at, at + length)).slice(0, SNIPPET_MAX - 2)
  const windowStart = Math.max(0, at - SNIPPET_MAX)
  const windowEnd = Math.min(text.length, at + length + SNIPPET_MAX)
  const lead = collapse(text.slice(windowStart, at)).replace(windowStart === 0 ? /^ / : /$^/, '')
  const after = collapse(text.slice(at + length, windowEnd)).replace(windowEnd === text.length ? / $/ : /$^/, '')
  // Two characters kept for the `…` marks; the context is split evenly, one side's unused share going to the other.
  const room = SNIPPET_MAX - 2 - hit.length
  let left = Math.min(lead.length, Math.floor(room / 2))
  const right = Math.min(after.length, room - left)
  left = Math.min(lead.length, room - right)
  const cutLeft = left < lead.length || windowStart > 0
  const cutRight = right < after.length || windowEnd < text.length
  // A cut never splits a surrogate pair (half a character would show as garbage).
  const head = lead.slice(lead.length - left).replace(/^[\udc00-\udfff]/, '')
  const tail = after.slice(0, right).replace(/[\ud800-\udbff]$/, '')
  return `${cutLeft ? '…' : ''}${head}${hit}${tail}${cutRight ? '…' : ''}`
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ')
}

/**
 * The first match of `needle` among `texts` (in their order), with its snippet; undefined when none matches.
 * `find` is {@link needleMatcher}'s matcher of the same needle (made once per search).
 */
export function firstMatch(texts: Iterable<IndexedText>, needle: string, find: (text: string, from?: number) => number = needleMatcher(needle)): ContentMatch | undefined {
  for (const t of texts) {
    const match = matchInText(t, needle, find)
    if (match !== undefined) return match
  }
  return undefined
}

/** The match of `needle` in one indexed text, with its snippet, or undefined. */
export function matchInText(t: IndexedText, needle: string, find: (text: string, from?: number) => number = needleMatcher(needle)): ContentMatch | undefined {
  const at = find(t.text)
  if (at < 0) return undefined
  return { seq: t.seq, part: t.part, snippet: snippetAt(t.text, at, matchLength(t.text, at, needle)) }
}

// How long the matched text is: the needle's length, except where case folding changed it (rare: 'ß', 'İ').
function matchLength(text: string, at: number, needle: string): number {
  const exact = new RegExp(escapeRegExp(needle), 'iuy')
  exact.lastIndex = at
  return exact.exec(text)?.[0].length ?? needle.length
}

/** A listing row with its content match. */
export function withMatch(summary: SessionSummary, match: ContentMatch): SessionSummary {
  return { ...summary, match }
}
