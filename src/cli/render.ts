import type { StreamChunk, ToolResultBlock, TokenUsage } from '../llm/types.js'
import type { SessionEvent, TurnEndReason } from '../session/events.js'
import { Spinner } from './spinner.js'
import type { Style } from './style.js'
import { addUsage, clip, describeReason, emptyUsage, formatDuration, formatUsage, toolSubject, type UsageTotals } from './turn-outcome.js'

interface PendingTool {
  readonly name: string
  readonly subject: string
  readonly started: number
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
  #paused = false
  #footerNote: string | undefined

  constructor(out: NodeJS.WritableStream, style: Style) {
    this.#out = out
    this.#style = style
    this.#spinner = new Spinner(out)
  }

  /** A note shown at the end of every turn's footer (e.g. `sandbox: off`), or none with `undefined`. */
  setFooterNote(note: string | undefined): void {
    this.#footerNote = note
  }

  /** Renders one committed event. */
  handle(event: SessionEvent): void {
    const d = event.data as Record<string, unknown>
    switch (event.type) {
      case 'turn/start':
        this.#turn = { started: event.time, steps: 0, usage: emptyUsage() }
        break
      case 'step/start':
        if (this.#turn !== undefined) this.#turn.steps = d.step as number
        break
      case 'assistant/chunk':
        this.#chunk(d.chunk as StreamChunk)
        break
      case 'assistant/message':
        if (this.#turn !== undefined) addUsage(this.#turn.usage, d.usage as TokenUsage | undefined)
        this.#endReasoning()
        this.#newline()
        break
      case 'tool/call':
        this.#toolCall(event, d)
        break
      case 'tool/result':
        this.#toolResult(event, d)
        break
      case 'llm/retry':
        this.#line(this.#style.dim(`↻ ${String(d.code)}: ${clip(String(d.message), 100)} — retrying in ${formatDuration(d.delayMs as number)} (attempt ${String(d.attempt)} failed)`))
        break
      case 'turn/end':
        this.#footer(event, d.reason as TurnEndReason)
        break
    }
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
    if (chunk.type === 'block-start' && chunk.blockType === 'reasoning') {
      this.#newline()
      this.#inReasoning = true
      if (!this.#style.color) this.#write('thinking: ')
    } else if (chunk.type === 'reasoning-delta') {
      this.#write(this.#style.dim(chunk.text))
    } else if (chunk.type === 'block-end' && chunk.block.type === 'reasoning') {
      this.#endReasoning()
    } else if (chunk.type === 'text-delta') {
      this.#write(chunk.text)
    }
  }

  #endReasoning(): void {
    if (!this.#inReasoning) return
    this.#inReasoning = false
    this.#newline()
  }

  #toolCall(event: SessionEvent, d: Record<string, unknown>): void {
    this.#newline()
    this.#tools.set(d.callId as string, { name: d.name as string, subject: toolSubject(d.arguments as string), started: event.time })
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
    const took = pending !== undefined ? this.#style.dim(` (${formatDuration(event.time - pending.started)})`) : ''
    const outcome = clip(text.replace(/^Error: /, ''), 90)
    this.#spinner.stop()
    this.#line(`${mark} ${name}${took}${outcome !== '' ? ` ${this.#style.dim('→')} ${failed ? this.#style.red(outcome) : outcome}` : ''}`)
    this.#spin() // calls of the batch still running
  }

  #footer(event: SessionEvent, reason: TurnEndReason): void {
    this.#spinner.stop()
    this.#tools.clear()
    this.#endReasoning()
    const tally = this.#turn ?? { started: event.time, steps: 0, usage: emptyUsage() }
    const ok = reason.kind === 'completed'
    const head = ok ? this.#style.green(describeReason(reason)) : reason.kind === 'max-tokens' ? this.#style.yellow(describeReason(reason)) : this.#style.red(describeReason(reason))
    const parts = [head, `${tally.steps} step${tally.steps === 1 ? '' : 's'}`, `tokens ${formatUsage(tally.usage)}`, formatDuration(event.time - tally.started)]
    if (this.#footerNote !== undefined) parts.push(this.#footerNote)
    this.#line(`${this.#style.dim('──')} ${parts.join(this.#style.dim(' · '))}`)
    this.#turn = undefined
  }

  #spin(): void {
    // Redrawing needs ANSI cursor codes, which NO_COLOR rules out along with colour.
    if (!this.#style.color || this.#paused) return
    const pending = [...this.#tools.values()]
    const last = pending[pending.length - 1]
    if (last === undefined) return this.#spinner.stop()
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
