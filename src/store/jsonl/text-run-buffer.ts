import { chunkEvent } from '../../session/event-log.js'
import type { SessionEvent } from '../../session/events.js'
import { MAX_CHUNK_RUN, MIN_CHUNK_RUN, type TextChunkRun } from '../chunk-runs.js'

/** A text or reasoning delta given as its parts (a `TextRecord` of `SessionWriter.append`). */
type TextType = 'text-delta' | 'reasoning-delta'

interface OpenRun {
  readonly seq0: number
  readonly time0: number
  last: number
  readonly turn: number
  readonly step: number
  readonly type: TextType
  readonly index: number
  readonly dt: number[]
  readonly texts: string[]
}

/**
 * Collects consecutive text deltas of one block straight into the packed row a file store writes for them, so
 * a streamed delta costs an array push instead of an event object that the packer takes apart again at flush.
 * What it hands on (`emit`) is exactly what packing the same chunk events would give: one packed row for a run
 * of at least {@link MIN_CHUNK_RUN} (at most {@link MAX_CHUNK_RUN}), the chunk events themselves for a shorter
 * one. A run is handed on when something else is appended, at every flush, and once it spans more than
 * `maxAgeMs` (so a long stream reaches the store's commit as often as its timer writes).
 * @internal
 */
export class TextRunBuffer {
  readonly #maxAgeMs: number
  readonly #emitEvent: (event: SessionEvent) => void
  readonly #emitRun: (run: TextChunkRun, count: number) => void
  #open: OpenRun | undefined

  /**
   * @param maxAgeMs - hand a run on once its members span more than this
   * @param emitEvent - receives a short run's chunk events, in seq order
   * @param emitRun - receives a packed run and how many events it stands for
   */
  constructor(maxAgeMs: number, emitEvent: (event: SessionEvent) => void, emitRun: (run: TextChunkRun, count: number) => void) {
    this.#maxAgeMs = maxAgeMs
    this.#emitEvent = emitEvent
    this.#emitRun = emitRun
  }

  /** The seq after the open run's last member, or undefined when no run is open. */
  get nextSeq(): number | undefined {
    const run = this.#open
    return run === undefined ? undefined : run.seq0 + run.texts.length
  }

  /** Adds a delta (its seq must follow what was appended before: the caller checks). */
  add(seq: number, time: number, turn: number, step: number, type: TextType, index: number, text: string): void {
    const run = this.#open
    if (
      run !== undefined &&
      run.seq0 + run.texts.length === seq &&
      run.turn === turn &&
      run.step === step &&
      run.type === type &&
      run.index === index &&
      run.texts.length < MAX_CHUNK_RUN &&
      Number.isSafeInteger(time - run.last) &&
      time - run.time0 <= this.#maxAgeMs
    ) {
      run.dt.push(time - run.last)
      run.last = time
      run.texts.push(text)
      return
    }
    this.close()
    this.#open = { seq0: seq, time0: time, last: time, turn, step, type, index, dt: [], texts: [text] }
  }

  /** Hands the open run on, if any. */
  close(): void {
    const run = this.#open
    if (run === undefined) return
    this.#open = undefined
    const { seq0, time0, turn, step, type, index, dt, texts } = run
    if (texts.length >= MIN_CHUNK_RUN) {
      this.#emitRun({ type: type === 'text-delta' ? 'text-chunks' : 'reasoning-chunks', seq0, time0, data: { turn, step, index, dt, texts } }, texts.length)
      return
    }
    let time = time0
    for (let k = 0; k < texts.length; k++) {
      if (k > 0) time += dt[k - 1] as number
      this.#emitEvent(chunkEvent(seq0 + k, time, turn, step, Object.freeze({ type, index, text: texts[k] as string })))
    }
  }
}
