import { freezeChunk } from '../freeze-chunk.js'
import { normalizeLlmFailure } from '../llm-error.js'
import { failureFinish } from '../registry.js'
import type { LlmFailure, StreamChunk } from '../types.js'
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

/**
 * What every provider translator keeps about its stream besides blocks: who it is (for messages), the secrets
 * to keep out of provider-authored text, the response's request id (attached to every failure), and whether
 * the stream is over. Shared so each translator holds only its own wire format.
 */
export class WireStream {
  /** Set once a finish (success or failure) was emitted: later events are ignored. */
  done = false

  /**
   * @param provider - route name for messages
   * @param secrets - redacted from provider-authored text
   * @param requestId - the response's request id, attached to failures
   */
  constructor(
    readonly provider: string,
    readonly secrets: readonly string[],
    readonly requestId: string | undefined,
  ) {}

  /** A failure carrying the request id. */
  failure(message: string, code: string): LlmFailure {
    return { message, code, ...(this.requestId !== undefined ? { requestId: this.requestId } : {}) }
  }

  /** Ends the stream with an in-band error finish (the request id added when the failure lacks one). */
  fail(failure: LlmFailure): TranslatedEvent {
    this.done = true
    const withId = failure.requestId === undefined && this.requestId !== undefined ? { ...failure, requestId: this.requestId } : failure
    return { chunks: [{ type: 'finish', reason: { kind: 'error', failure: withId } }], done: true }
  }

  /** Parses one event's JSON; a malformed event ends the stream with `MALFORMED_RESPONSE`. */
  parse(data: string): { readonly value: unknown } | { readonly ended: TranslatedEvent } {
    try {
      return { value: JSON.parse(data) as unknown }
    } catch {
      return { ended: this.fail({ message: `${this.provider} sent an event that is not JSON: ${data.slice(0, 120)}`, code: 'MALFORMED_RESPONSE' }) }
    }
  }
}
