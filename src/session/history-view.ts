import type { Message } from '../llm/types.js'

/**
 * The model-visible history as the session hands it to the loop: one frozen array of messages, which also says
 * whether any of them carries adapter replay state. The adapter boundary strips another adapter's replay state
 * from a request; with `hasReplayState` false it can skip that O(history) scan on every request, and the
 * session knows the answer from its incremental fold at no cost.
 */
export interface HistoryView extends ReadonlyArray<Message> {
  /** Whether some message of the history is a model message with `source.replayState`. */
  readonly hasReplayState: boolean
}

// The flag's two descriptors, made once: a view is made on every history change (once per step).
const CARRIES_REPLAY_STATE: PropertyDescriptor = Object.freeze({ value: true })
const NO_REPLAY_STATE: PropertyDescriptor = Object.freeze({ value: false })

/**
 * Freezes `messages` (a fresh array the caller hands over) into a {@link HistoryView}. The flag is a
 * non-enumerable own property: the view still compares, prints and serialises as the plain array of messages.
 */
export function historyView(messages: Message[], hasReplayState: boolean): HistoryView {
  Object.defineProperty(messages, 'hasReplayState', hasReplayState ? CARRIES_REPLAY_STATE : NO_REPLAY_STATE)
  return Object.freeze(messages) as unknown as HistoryView
}
