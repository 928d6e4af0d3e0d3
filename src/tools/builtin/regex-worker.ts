import { Worker } from 'node:worker_threads'
import { HarnessError } from '../../errors/harness-error.js'

/** One matching line: 1-based number, its first characters, and its full length (for the "cut" note). */
export type LineHit = readonly [line: number, head: string, length: number]

// Run with `eval: true`: no file to locate, so it works the same from src/ under vitest and from dist/. It
// avoids both `require` and `import` because eval code is CommonJS or an ES module depending on the flags
// the host process was started with. It only matches; reading files stays on the main thread behind the
// confinement checks.
const MATCHER_SOURCE = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads')
const regex = new RegExp(workerData.source, workerData.flags)
parentPort.on('message', ({ text, max, headChars }) => {
  const lines = text.split(/\\r\\n|\\n|\\r/)
  // A final line break ends the last line; it does not start an empty one that ^$ would match.
  if (lines.length > 0 && lines[lines.length - 1] === '') lines.pop()
  const hits = []
  for (let i = 0; i < lines.length && hits.length < max; i++) {
    regex.lastIndex = 0
    if (regex.test(lines[i])) hits.push([i + 1, lines[i].slice(0, headChars), lines[i].length])
  }
  parentPort.postMessage(hits)
})
`

/**
 * Runs a regular expression over text in a worker thread, so a catastrophic pattern (`(a+)+$` on a long
 * line) burns a worker, not the event loop. All calls share one time budget; when it runs out, or `signal`
 * fires, the worker is terminated mid-match and the call fails. Call {@link RegexWorker.close} when done.
 */
export class RegexWorker {
  readonly #worker: Worker
  readonly #signal: AbortSignal
  readonly #totalMs: number
  #budgetMs: number
  #closed = false

  /**
   * @param regex - compiled on the main thread first, so syntax errors are reported there
   * @param budgetMs - total matching time allowed across all {@link RegexWorker.match} calls
   * @param signal - the turn's signal: cancelling terminates the worker
   */
  constructor(regex: RegExp, budgetMs: number, signal: AbortSignal) {
    this.#signal = signal
    this.#totalMs = budgetMs
    this.#budgetMs = budgetMs
    // execArgv: the host's loaders and flags (tsx, --input-type) mean nothing to this plain script.
    this.#worker = new Worker(MATCHER_SOURCE, { eval: true, execArgv: [], workerData: { source: regex.source, flags: regex.flags } })
    // A crash inside the worker surfaces on the next match as an error result, never as an unhandled event.
    this.#worker.on('error', () => undefined)
  }

  /**
   * The lines of `text` the regex matches, at most `max`, each with its first `headChars` characters.
   * @throws HarnessError `TOOL_TIMEOUT` when the budget runs out; `ABORTED` when the signal fires
   */
  async match(text: string, max: number, headChars: number): Promise<LineHit[]> {
    if (this.#closed) throw new Error('RegexWorker used after close')
    const started = Date.now()
    try {
      return await new Promise<LineHit[]>((resolve, reject) => {
        const done = (): void => {
          clearTimeout(timer)
          this.#signal.removeEventListener('abort', onAbort)
          this.#worker.off('message', onMessage)
          this.#worker.off('error', onError)
        }
        const onMessage = (hits: LineHit[]): void => {
          done()
          resolve(hits)
        }
        const onError = (error: Error): void => {
          done()
          reject(new HarnessError(`grep's matcher failed: ${error.message}`, 'GREP_FAILED', { cause: error }))
        }
        const onAbort = (): void => {
          done()
          void this.close()
          reject(new HarnessError('the tool call was cancelled', 'ABORTED', { cause: this.#signal.reason }))
        }
        const timer = setTimeout(() => {
          done()
          void this.close()
          reject(
            new HarnessError(
              `grep stopped: matching took longer than its ${this.#totalMs} ms budget (limits.grepTimeoutMs). ` +
                'The pattern probably backtracks catastrophically (nested quantifiers such as (a+)+); simplify it or narrow path/glob.',
              'TOOL_TIMEOUT',
            ),
          )
        }, this.#budgetMs)
        if (this.#signal.aborted) return onAbort()
        this.#signal.addEventListener('abort', onAbort, { once: true })
        this.#worker.on('message', onMessage)
        this.#worker.on('error', onError)
        this.#worker.postMessage({ text, max, headChars })
      })
    } finally {
      this.#budgetMs = Math.max(0, this.#budgetMs - (Date.now() - started))
    }
  }

  /** Terminates the worker (idempotent). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#worker.terminate()
  }
}
