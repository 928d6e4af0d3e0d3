import type { Message } from './types.js'

/**
 * The model-visible history as its session hands it over: the frozen array of messages a request carries,
 * and whether any of them holds adapter replay state (`source.replayState`). The session keeps that answer in
 * its incremental fold; with `hasReplayState` false the registry skips the O(history) scan for another
 * adapter's replay state on every request that still carries exactly this array. The flag travels beside the
 * array, not on it: a named property on an array takes it off V8's fast paths for every reader.
 */
export interface HistoryView {
  /** The history, frozen (what the loop puts in `GenerateOptions.messages`). */
  readonly messages: readonly Message[]
  /** Whether some message is a model message with `source.replayState`. */
  readonly hasReplayState: boolean
}
