import type { StreamChunk, ToolResultBlock, TokenUsage } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'
import { MarkdownStream, type MarkdownRenderer } from './markdown.js'
import { Spinner } from './spinner.js'
import type { Style } from './style.js'
import { addUsage, emptyUsage, type UsageTotals } from '../llm/token-usage.js'
import { clip, describeReason, formatDuration, formatUsage, toolSubject } from '../views/turn-outcome.js'

interface PendingTool {
  readonly name: string
  readonly subject: string
  readonly started: number
  /** Time the call's permission question waited for an answer: a person's time, not the tool's. */
  waitedMs: number
}

/** A wait for an answer shorter than this is not worth a mention beside the call's own duration. */
const WAIT_WORTH_SHOWING_MS = 1000

/** What failed, as people know it: the HTTP status when the provider answered with one (`429`), else the code. */
export function retryCause(data: Record<string, unknown>): string {
  const status = /\bHTTP (\d{3})\b/.exec(String(data.message))?.[1]
  return status ?? String(data.code)
}

/**
 * A failure message shortened for one line, keeping its trailing `(cause)` whole: the cause (`connect
 * ECONNREFUSED 127.0.0.1:8000`) is the part that says what to fix, and it comes last.
 */
export function clipKeepingCause(message: string, max: number): string {
  const line = message.replace(/\s+/g, ' ').trim()
  if (line.length <= max) return line
  const cause = /\s*(\([^()]*\))$/.exec(line)
  if (cause === null || (cause[1] as string).length > max / 2) return clip(line, max)
  const tail = cause[1] as string
  return `${clip(line.slice(0, cause.index), max - tail.length - 1)} ${tail}`
}

/**
 * A call's own duration, without the time its permission question waited for a person (`5 ms`), and that wait
 * beside it when it is long enough to matter (`5 ms; 2.9 s waiting for approval`).
 */
export function toolTime(elapsedMs: number, waitedMs: number): string {
  const own = formatDuration(Math.max(0, elapsedMs - waitedMs))
  return waitedMs >= WAIT_WORTH_SHOWING_MS ? `${own}; ${formatDuration(waitedMs)} waiting for approval` : own
}

/** What the model is doing while no token has arrived yet: the first request, or a wait before a retry. */
interface Waiting {
  readonly label: string
  readonly since: number
}

interface TurnTally {
  readonly started: number
  steps: number
  readonly usage: UsageTotals
}

/**
 * The terminal transcript: assistant text streamed as it arrives, reasoning dimmed, one compact line per tool
 * call (a spinner while it runs, on a terminal only) and a footer per turn with its reason, steps, tokens and
 * time. It is fed committed session events, so what it shows is exactly what the log holds.
 */
export class TranscriptRenderer {
  readonly #out: NodeJS.WritableStream
  readonly #style: Style
  readonly #spinner: Spinner
  readonly #tools = new Map<string, PendingTool>()
  #turn: TurnTally | undefined
  #atLineStart = true
  #inReasoning = false
  /** Attempts in all, for `attempt 2/4` (unknown when the retry policy is the adapter's). */
  #maxAttempts: number | undefined
  #paused = false
  #waiting: Waiting | undefined
  #turnCost: ((events: readonly SessionEvent[]) => string | undefined) | undefined
  #costCap: (() => string | undefined) | undefined
  readonly #turnEvents: SessionEvent[] = []
  #footerNote: string | undefined
  readonly #endpoint: string | undefined
  readonly #describe: (reason: TurnEndReason) => string
  readonly #markdown: MarkdownRenderer | undefined
  /** The answer block being rendered as markdown, while its text streams. */
  #answer: MarkdownStream | undefined

  constructor(
    out: NodeJS.WritableStream,
    style: Style,
    options: {
      readonly turnCost?: (events: readonly SessionEvent[]) => string | undefined
      readonly costCap?: () => string | undefined
      /** The host requests go to, named by the waiting spinner. */
      readonly endpoint?: string
      /** Renders the answers' markdown, one complete block at a time (off: the text exactly as streamed). */
      readonly markdown?: MarkdownRenderer
      /** How the footer words a turn end (default {@link describeReason}). */
      readonly describeReason?: (reason: TurnEndReason) => string
    } = {},
  ) {
    this.#out = out
    this.#style = style
    this.#spinner = new Spinner(out)
    this.#turnCost = options.turnCost
    this.#costCap = options.costCap
    this.#endpoint = options.endpoint
    this.#describe = options.describeReason ?? describeReason
    this.#markdown = options.markdown
  }

  /**
   * A request was sent and nothing has streamed back yet: shows the model and the seconds waited, so a slow
   * first token does not look like a hang.
   */
  requestStarted(model: string): void {
    // Says what is awaited: this model's answer from this host (a dead host and a slow model look alike otherwise).
    const awaited = `waiting for ${model}${this.#endpoint !== undefined ? ` at ${this.#endpoint}` : ''}`
    if (this.#waiting?.label.startsWith('↻') === true) {
      // The retry's own wait is over; the new attempt waits for its first token under the same spinner.
      this.#waiting = { label: `${awaited} (retry)`, since: Date.now() }
    } else {
      this.#waiting = { label: awaited, since: Date.now() }
    }
    this.#spin()
  }

  /** A note shown at the end of every turn's footer (e.g. `sandbox: off`), or none with `undefined`. */
  setFooterNote(note: string | undefined): void {
    this.#footerNote = note
  }

  /** Renders one committed event. */
  handle(event: SessionEvent): void {
    const d = event.data as Record<string, unknown>
    if (this.#turnCost !== undefined) this.#turnEvents.push(event)
    switch (event.type) {
      case 'turn/start':
        this.#turn = { started: event.time, steps: 0, usage: emptyUsage() }
        this.#turnEvents.splice(0, this.#turnEvents.length - 1)
        break
      case 'step/start':
        if (this.#turn !== undefined) this.#turn.steps = d.step as number
        break
      case 'assistant/chunk':
        if (this.#waiting !== undefined) {
          this.#waiting = undefined
          this.#spinner.stop()
        }
        this.#chunk(d.chunk as StreamChunk)
        break
      case 'assistant/message':
        if (this.#turn !== undefined) addUsage(this.#turn.usage, d.usage as TokenUsage | undefined)
        this.#endAnswer() // a cut-off answer has no block-end
        this.#endReasoning()
        this.#newline()
        break
      case 'tool/call':
        this.#toolCall(event, d)
        break
      case 'tool/result':
        this.#toolResult(event, d)
        break
      case 'permission/decision': {
        const pending = this.#tools.get(d.callId as string)
        if (pending !== undefined && typeof d.waitedMs === 'number') pending.waitedMs += d.waitedMs
        break
      }
      case 'llm/retry': {
        const next = `attempt ${(d.attempt as number) + 1}${this.#maxAttempts !== undefined ? `/${this.#maxAttempts}` : ''}`
        this.#line(this.#style.dim(`↻ ${String(d.code)}: ${clipKeepingCause(String(d.message), 160)} — retrying in ${formatDuration(d.delayMs as number)} (${next})`))
        this.#waiting = { label: `↻ ${retryCause(d)}, retrying in ${formatDuration(d.delayMs as number)} (${next})`, since: Date.now() }
        this.#spin()
        break
      }
      case 'budget/exceeded':
        if (d.budget === 'cost') this.#line(this.#style.yellow(`⛔ cost budget: $${String(d.used)} spent of $${String(d.limit)}${d.per === 'turn' ? ' this turn' : ''}; no further request is sent`))
        break
      case 'cost-budget/unpriced':
        this.#line(
          this.#style.yellow(
            `⚠ cost budget: ${d.reason === 'currency' ? 'the price of' : 'no price for'} ${String(d.provider)}/${String(d.model)}${d.reason === 'currency' ? ' is not in USD' : ''}: its requests do not count against the cap (add one under "pricing" in the config file)`,
          ),
        )
        break
      case 'compaction/end':
        this.#line(this.#style.dim(`⇣ compaction: ${String(d.outcome)} (~${String(d.tokensBefore)} → ~${String(d.tokensAfter)} tokens)${d.error !== undefined ? ` — ${String((d.error as { code?: string }).code)}` : ''}`))
        break
      case 'turn/end':
        this.#footer(event, d.reason as TurnEndReason)
        break
    }
  }

  /** Sets the retry budget shown in `↻ … (attempt n/max)`. */
  setMaxAttempts(max: number | undefined): void {
    this.#maxAttempts = max
  }

  /** Writes a line of its own (notices, labels), keeping the spinner out of its way. */
  line(text: string): void {
    this.#line(text)
  }

  /** Hides the spinner while something else owns the terminal (a permission prompt). */
  pause(): void {
    this.#paused = true
    this.#spinner.stop()
    this.#newline()
  }

  /** Shows the spinner again after {@link pause}. */
  resume(): void {
    this.#paused = false
    this.#spin()
  }

  /** Stops the spinner for good. */
  dispose(): void {
    this.#spinner.stop()
  }

  #chunk(chunk: StreamChunk): void {
    if (chunk.type === 'block-start' && chunk.blockType !== 'reasoning') {
      // The answer (or a tool call) starts: the reasoning line ends here, not at the message's end.
      this.#endReasoning()
    }
    if (chunk.type === 'block-start' && chunk.blockType === 'reasoning') {
      this.#newline()
      this.#inReasoning = true
      if (!this.#style.color) this.#write('thinking: ')
    } else if (chunk.type === 'reasoning-delta') {
      this.#write(this.#style.dim(chunk.text))
    } else if (chunk.type === 'block-end' && chunk.block.type === 'reasoning') {
      this.#endReasoning()
    } else if (chunk.type === 'text-delta') {
      if (this.#markdown === undefined) return this.#write(chunk.text)
      this.#answer ??= new MarkdownStream(this.#markdown)
      this.#write(this.#answer.push(chunk.text))
    } else if (chunk.type === 'block-end' && chunk.block.type === 'text') {
      this.#endAnswer()
    }
  }

  /** Renders what is left of a markdown answer block. */
  #endAnswer(): void {
    const answer = this.#answer
    if (answer === undefined) return
    this.#answer = undefined
    this.#write(answer.end())
  }

  #endReasoning(): void {
    if (!this.#inReasoning) return
    this.#inReasoning = false
    this.#newline()
  }

  #toolCall(event: SessionEvent, d: Record<string, unknown>): void {
    this.#newline()
    this.#tools.set(d.callId as string, { name: d.name as string, subject: toolSubject(d.arguments as string), started: event.time, waitedMs: 0 })
    this.#spin()
  }

  #toolResult(event: SessionEvent, d: Record<string, unknown>): void {
    const block = (d.message as { content: ToolResultBlock[] }).content[0]
    const callId = block?.toolCallId ?? ''
    const pending = this.#tools.get(callId)
    this.#tools.delete(callId)
    const code = (d.error as { code?: string } | undefined)?.code
    const text = (block?.content ?? []).map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join(' ')
    const failed = block?.isError === true
    const mark = failed ? this.#style.red(code === 'TOOL_DENIED' ? '⊘' : '✗') : this.#style.green('✓')
    const name = pending !== undefined ? `${this.#style.bold(pending.name)}${pending.subject !== '' ? ` ${pending.subject}` : ''}` : callId
    const took = pending !== undefined ? this.#style.dim(` (${toolTime(event.time - pending.started, pending.waitedMs)})`) : ''
    const outcome = clip(text.replace(/^Error: /, ''), 90)
    this.#spinner.stop()
    this.#line(`${mark} ${name}${took}${outcome !== '' ? ` ${this.#style.dim('→')} ${failed ? this.#style.red(outcome) : outcome}` : ''}`)
    this.#spin() // calls of the batch still running
  }

  #footer(event: SessionEvent, reason: TurnEndReason): void {
    this.#waiting = undefined
    this.#spinner.stop()
    this.#endAnswer()
    this.#tools.clear()
    this.#endReasoning()
    const tally = this.#turn ?? { started: event.time, steps: 0, usage: emptyUsage() }
    const ok = reason.kind === 'completed'
    const described = this.#describe(reason)
    const head = ok ? this.#style.green(described) : reason.kind === 'max-tokens' ? this.#style.yellow(described) : this.#style.red(described)
    const cost = this.#turnCost?.(this.#turnEvents)
    this.#turnEvents.length = 0
    const parts = [
      head,
      `${tally.steps} step${tally.steps === 1 ? '' : 's'}`,
      `tokens ${formatUsage(tally.usage)}`,
      ...(cost !== undefined ? [cost] : []),
      ...(this.#costCap !== undefined ? [this.#costCap()].filter((figure): figure is string => figure !== undefined) : []),
      formatDuration(event.time - tally.started),
    ]
    if (this.#footerNote !== undefined) parts.push(this.#footerNote)
    this.#line(`${this.#style.dim('──')} ${parts.join(this.#style.dim(' · '))}`)
    this.#turn = undefined
  }

  #spin(): void {
    // Redrawing in place needs a terminal.
    if (!this.#style.tty || this.#paused) return
    const pending = [...this.#tools.values()]
    const last = pending[pending.length - 1]
    if (last === undefined) {
      const waiting = this.#waiting
      if (waiting === undefined) return this.#spinner.stop()
      this.#newline()
      return this.#spinner.start(() => `${waiting.label} ${this.#style.dim(`· ${((Date.now() - waiting.since) / 1000).toFixed(0)} s`)}`)
    }
    const more = pending.length > 1 ? this.#style.dim(` (+${pending.length - 1} more)`) : ''
    this.#spinner.start(`${last.name}${last.subject !== '' ? ` ${last.subject}` : ''}${more}`)
  }

  #line(text: string): void {
    const spinning = this.#spinner.active
    this.#spinner.stop()
    this.#newline()
    this.#write(`${text}\n`)
    if (spinning) this.#spin()
  }

  #newline(): void {
    if (!this.#atLineStart) this.#write('\n')
  }

  #write(text: string): void {
    if (text === '') return
    this.#out.write(text)
    this.#atLineStart = text.endsWith('\n')
  }
}
