// Markdown in the model's answers, rendered for a terminal by `marked` with `marked-terminal`.
//
// Streaming: the answer arrives in deltas, but a markdown block's meaning is only settled once it ends (a line
// may turn out to continue a paragraph, a list may go on after a blank line, a fence may still be open), and
// lines already written to a terminal cannot be taken back without redrawing the scrollback. So a block is
// rendered once, when the lexer shows it is complete: another block has begun after it, or its closing fence
// arrived, or the answer ended. Nothing is ever rendered twice and nothing has to be erased.
import { Marked, type Token, type Tokens, type TokensList } from 'marked'
import { markedTerminal } from 'marked-terminal'

/** Renders markdown source for a terminal; see {@link MarkdownStream} for streamed text. */
export interface MarkdownRenderer {
  /** Splits source into top-level blocks (the lexer's tokens, with the document's link definitions). */
  lex(source: string): TokensList
  /** Renders complete blocks to terminal text. */
  render(blocks: TokensList): string
}

/**
 * The terminal renderer: headings, emphasis, lists, quotes, tables and links styled; code blocks between dim
 * fence lines with their language, each code line exactly as written (highlighted, never indented or boxed),
 * so what a person selects and copies is the code.
 */
export function terminalMarkdown(): MarkdownRenderer {
  const extension = markedTerminal({ reflowText: false, tab: CODE_INDENT.length, emoji: false })
  const renderer = extension.renderer as Record<string, (this: { parser: { parseInline(tokens: Token[]): string } }, token: unknown) => string>
  const code = renderer.code as (typeof renderer)['code']
  const text = renderer.text as (typeof renderer)['text']
  renderer.code = function (token) {
    const lang = (token as Tokens.Code).lang ?? ''
    // marked-terminal indents code lines; a copied line must not carry that indent.
    const body = code.call(this, token).replace(/\n+$/, '').split('\n').map((line) => (line.startsWith(CODE_INDENT) ? line.slice(CODE_INDENT.length) : line))
    return `${dim(`\`\`\`${lang}`)}\n${body.join('\n')}\n${dim('```')}\n\n`
  }
  renderer.text = function (token) {
    // A tight list item's text is a block token with inline children (bold, code spans): render those too.
    const children = typeof token === 'object' && token !== null ? (token as Tokens.Text).tokens : undefined
    return children !== undefined && children.length > 0 ? this.parser.parseInline(children) : text.call(this, token)
  }
  const marked = new Marked(extension)
  return {
    lex: (source) => marked.lexer(source),
    render: (blocks) => marked.parser(blocks),
  }
}

const CODE_INDENT = '  '

function dim(text: string): string {
  return `\x1b[2m${text}\x1b[22m`
}

/**
 * Streamed answer text in, rendered markdown out, one complete block at a time (see the file comment). Feed
 * deltas with {@link push}; {@link end} renders what is left when the text block ends.
 */
export class MarkdownStream {
  readonly #markdown: MarkdownRenderer
  #pending = ''
  #wroteBlock = false

  constructor(markdown: MarkdownRenderer) {
    this.#markdown = markdown
  }

  /** Adds a delta; returns the terminal text of the blocks it completed (often empty). */
  push(delta: string): string {
    this.#pending += delta
    // A block can only complete at a line end, and only whole lines are judged: the start of a line (`2` of a
    // coming `2. item`) must not pass for a new paragraph that would end the list before it.
    if (!delta.includes('\n')) return ''
    const tokens = this.#markdown.lex(this.#pending.slice(0, this.#pending.lastIndexOf('\n') + 1))
    let complete = lastContentIndex(tokens)
    const last = tokens[complete]
    if (last !== undefined && isClosedFence(last)) complete++
    if (complete <= 0) return ''
    const blocks = tokens.slice(0, complete)
    const consumed = blocks.map((t) => t.raw).join('')
    // The lexer's raw pieces spell the source back; if they ever do not, wait and render it all at the end.
    if (!this.#pending.startsWith(consumed)) return ''
    this.#pending = this.#pending.slice(consumed.length)
    return this.#emit(blocks, tokens.links)
  }

  /** Renders whatever is left (the answer ended, or was cut off); returns its terminal text. */
  end(): string {
    const source = this.#pending
    this.#pending = ''
    if (source.trim() === '') return ''
    const tokens = this.#markdown.lex(source)
    return this.#emit([...tokens], tokens.links)
  }

  #emit(blocks: Token[], links: TokensList['links']): string {
    const rendered = this.#markdown.render(Object.assign(blocks, { links })).replace(/\n+$/, '')
    if (rendered.trim() === '') return ''
    // Blocks are separated by one blank line, as marked-terminal separates them within a document.
    const text = `${this.#wroteBlock ? '\n' : ''}${rendered}\n`
    this.#wroteBlock = true
    return text
  }
}

/** Index of the last token that is not blank space: every block before it is complete. */
function lastContentIndex(tokens: readonly Token[]): number {
  for (let i = tokens.length - 1; i >= 0; i--) if ((tokens[i] as Token).type !== 'space') return i
  return -1
}

/** A fenced code block whose closing fence has arrived: complete even as the last block. */
function isClosedFence(token: Token): boolean {
  if (token.type !== 'code' || (token as Tokens.Code).codeBlockStyle === 'indented') return false
  const lines = token.raw.replace(/\n+$/, '').split('\n')
  const open = /^\s{0,3}(`{3,}|~{3,})/.exec(lines[0] ?? '')?.[1]
  const close = lines.length > 1 ? /^\s{0,3}(`{3,}|~{3,})\s*$/.exec(lines[lines.length - 1] ?? '')?.[1] : undefined
  return open !== undefined && close !== undefined && close[0] === open[0] && close.length >= open.length
}
