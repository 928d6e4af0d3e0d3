import { freezeChunk } from '../freeze-chunk.js'
import { normalizeLlmFailure } from '../llm-error.js'
import { failureFinish } from '../registry.js'
import type { StreamChunk } from '../types.js'
import { openEventStream, type EventStreamRequest } from './sse.js'

/** The result of feeding one event: chunks to emit and whether the stream is over. */
export interface TranslatedEvent {
  readonly chunks: StreamChunk[]
  readonly done: boolean
}

/** A stateful pass over one provider's SSE events, turning them into stream chunks. */
export interface EventTranslator {
  /** Translates one event's `data`. */
  accept(data: string): TranslatedEvent
  /** What to emit when the body ends without the provider's own end marker. */
  endOfStream(): TranslatedEvent
}

/**
 * POSTs the request, feeds every SSE event through a fresh translator, and yields its chunks. Any failure
 * (HTTP status, transport, idle watchdog, cancel) ends the stream with one in-band failure finish; returning
 * early closes the socket.
 */
export async function* streamTranslatedEvents(
  request: EventStreamRequest,
  makeTranslator: (requestId: string | undefined) => EventTranslator,
): AsyncGenerator<StreamChunk> {
  try {
    const stream = await openEventStream(request)
    const translator = makeTranslator(stream.requestId)
    try {
      for await (const event of stream.events) {
        const result = translator.accept(event.data)
        for (const chunk of result.chunks) yield freezeChunk(chunk)
        if (result.done) return
      }
      for (const chunk of translator.endOfStream().chunks) yield freezeChunk(chunk)
    } finally {
      // Stops reading and closes the socket when we return early (after the end marker, or when the consumer stops).
      await stream.events.return()
    }
  } catch (error) {
    yield failureFinish(normalizeLlmFailure(error), request.signal)
  }
}
