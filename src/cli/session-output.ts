import type { Harness } from '../harness/harness.js'
import type { SessionEvent } from '../session/events.js'
import type { Session } from '../session/session.js'
import { terminalMarkdown } from './markdown.js'
import { retryCause, TranscriptRenderer } from './render.js'
import type { Style } from './style.js'
import { formatDuration } from '../views/turn-outcome.js'
import type { PricingCatalogue } from '../views/cost.js'
import { costCapOf } from '../views/cost-cap.js'

/** Where a running session's events go: a transcript for people, or JSONL for scripts. */
export interface SessionOutput {
  /** The transcript renderer (absent in `--json` and `--print` mode). */
  readonly renderer: TranscriptRenderer | undefined
  /** Writes a notice line: into the transcript, or to stderr in `--json`/`--print` mode (stdout stays clean). */
  notice(text: string): void
  /** Stops listening. */
  dispose(): void
}

/** How a running session is shown. */
export interface SessionOutputOptions {
  /** `transcript` (people), `json` (one event per line, as logged) or `print` (only the final answer). */
  readonly mode: 'transcript' | 'json' | 'print'
  /** Off a terminal, write one status line per request and retry to stderr. */
  readonly verbose?: boolean
  /** Attempts in all per request, shown as `attempt n/max`. */
  readonly maxAttempts?: number
  /** The cost figure of a finished turn's events for the footer (undefined = not priced). */
  readonly turnCost?: (events: readonly SessionEvent[]) => string | undefined
  /** With a cost cap: the session's spend against it for the footer (see {@link spendAgainstCap}). */
  readonly costCap?: () => string | undefined
  /** The host requests go to, named while a request waits (`waiting for deepseek-flash at api.deepseek.com`). */
  readonly endpoint?: string
  /** Render the answers' markdown (a colour terminal without `--raw`). */
  readonly markdown?: boolean
}

/** The `costCap` option of a run or chat with `--max-cost` (none without a cap), reading the live session. */
export function costCapOption(maxUsd: number | undefined, catalogue: PricingCatalogue, session: () => Session | undefined): Pick<SessionOutputOptions, 'costCap'> {
  if (maxUsd === undefined) return {}
  return {
    costCap: () => {
      const current = session()
      return current !== undefined ? spendAgainstCap(current.events, catalogue, maxUsd) : undefined
    },
  }
}

/**
 * `spent $0.0123 of $0.5000 cap`: what the session was billed (every attempt included, as the cost budget counts
 * it) against its cap, with the count of responses that had no USD price — the sentence `inspect` and the page
 * show. The cap is the one the log records (a session created with its own cap keeps it), else `maxUsd`.
 */
export function spendAgainstCap(events: readonly SessionEvent[], catalogue: PricingCatalogue, maxUsd: number): string {
  return (costCapOf(events, catalogue, maxUsd) as { summary: string }).summary
}

/**
 * Follows the committed events of the session `currentId()` names (it changes when chat forks) and writes them
 * to `out`: as a transcript, as JSONL, or (print mode) only the text of the final answer. While a request waits
 * for its first token the transcript shows a spinner with the model and the seconds waited; off a terminal
 * `verbose` writes the same facts as status lines on stderr.
 */
export function attachSessionOutput(harness: Harness, currentId: () => string | undefined, out: NodeJS.WritableStream, style: Style, options: SessionOutputOptions): SessionOutput {
  const renderer =
    options.mode === 'transcript'
      ? new TranscriptRenderer(out, style, {
          ...(options.turnCost !== undefined ? { turnCost: options.turnCost } : {}),
          ...(options.costCap !== undefined ? { costCap: options.costCap } : {}),
          ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
          ...(options.markdown === true ? { markdown: terminalMarkdown() } : {}),
        })
      : undefined
  renderer?.setMaxAttempts(options.maxAttempts)
  const statusLines = options.verbose === true && (renderer === undefined || !style.tty)
  const status = (text: string): void => {
    process.stderr.write(`ledgerloop: ${text}\n`)
  }
  let finalText = ''
  const write = (event: SessionEvent): void => {
    if (renderer !== undefined) renderer.handle(event)
    else if (options.mode === 'json') out.write(`${JSON.stringify(event)}\n`)
    else printMode(event)
    if (statusLines && event.type === 'llm/retry') {
      const d = event.data as { code: string; message: string; delayMs: number; attempt: number }
      status(`↻ ${retryCause(d)}, retrying in ${formatDuration(d.delayMs)} (attempt ${d.attempt + 1}${options.maxAttempts !== undefined ? `/${options.maxAttempts}` : ''})`)
    }
  }
  // --print: the text of the turn's last model message, written once the turn has ended.
  const printMode = (event: SessionEvent): void => {
    if (event.type === 'assistant/message') {
      const message = (event.data as unknown as { message: { content: readonly { type: string; text?: string }[] } }).message
      const text = message.content.filter((b) => b.type === 'text').map((b) => b.text ?? '').join('')
      if (text.trim() !== '') finalText = text
    } else if (event.type === 'turn/end') {
      if (finalText !== '') out.write(finalText.endsWith('\n') ? finalText : `${finalText}\n`)
      finalText = ''
    }
  }
  const offEvents = harness.hooks.on('session/event', ({ session, event }) => {
    if (session.id === currentId()) write(event)
  })
  const offRequest = harness.hooks.on('agent/request', async ({ agent }, next) => {
    const config = await next()
    if (agent.id === currentId()) {
      renderer?.requestStarted(config.model)
      if (statusLines) status(`waiting for ${config.provider} · ${config.model}${options.endpoint !== undefined ? ` at ${options.endpoint}` : ''}`)
    }
    return config
  })
  return {
    renderer,
    notice(text) {
      if (renderer !== undefined) renderer.line(text)
      else process.stderr.write(`${text}\n`)
    },
    dispose() {
      offEvents()
      offRequest()
      renderer?.dispose()
    },
  }
}
