const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏']

/** A one-line spinner redrawn in place; only ever started on a terminal. */
export class Spinner {
  readonly #out: NodeJS.WritableStream
  #timer: NodeJS.Timeout | undefined
  #label: () => string = () => ''
  #frame = 0

  constructor(out: NodeJS.WritableStream) {
    this.#out = out
  }

  /** Whether the spinner line is on screen. */
  get active(): boolean {
    return this.#timer !== undefined
  }

  /** Shows (or relabels) the spinner; a function label is re-read on every frame (elapsed seconds). */
  start(label: string | (() => string)): void {
    this.#label = typeof label === 'string' ? () => label : label
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#draw(), 80)
      // A spinner must never keep the process alive on its own.
      this.#timer.unref()
    }
    this.#draw()
  }

  /** Removes the spinner line, leaving the cursor at the start of an empty line. */
  stop(): void {
    if (this.#timer === undefined) return
    clearInterval(this.#timer)
    this.#timer = undefined
    this.#out.write('\r\x1b[2K')
  }

  #draw(): void {
    this.#frame = (this.#frame + 1) % FRAMES.length
    this.#out.write(`\r\x1b[2K${FRAMES[this.#frame] as string} ${this.#label()}`)
  }
}
