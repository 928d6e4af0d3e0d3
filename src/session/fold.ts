import type { Message } from '../llm/types.js'
import type { RequestHeader, SessionEvent } from './events.js'
import { foldRequestHeader } from './request-header.js'
import { foldMessages } from './surface.js'

/**
 * What a request built right after `events` sees: the model-visible history and the latest request header.
 * A pure full fold (no caching), the reference the incremental `Session.deriveMessages()` must agree with.
 */
export function foldSession(events: readonly SessionEvent[]): { messages: Message[]; header?: RequestHeader } {
  const header = foldRequestHeader(events)
  return header === undefined ? { messages: foldMessages(events) } : { messages: foldMessages(events), header }
}
