import { createParser, type EventSourceMessage } from 'eventsource-parser'

/** One frame as a test client received it. */
export interface ReceivedFrame {
  readonly id: string | undefined
  readonly event: string | undefined
  readonly data: string
}

/**
 * Reads a Server-Sent Events response until `done(frames)` says so (then disconnects), or the stream ends.
 * Resolves to the frames received, in order.
 */
export async function readSse(
  url: string,
  options: { headers?: Record<string, string>; done: (frames: readonly ReceivedFrame[]) => boolean; timeoutMs?: number },
): Promise<{ status: number; contentType: string | null; frames: ReceivedFrame[] }> {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(new Error('SSE read timed out')), options.timeoutMs ?? 15_000)
  const frames: ReceivedFrame[] = []
  try {
    const response = await fetch(url, { headers: options.headers ?? {}, signal: controller.signal })
    if (response.status !== 200 || response.body === null) return { status: response.status, contentType: response.headers.get('content-type'), frames }
    let finished = false
    const parser = createParser({
      onEvent: (message: EventSourceMessage) => {
        if (finished) return
        frames.push({ id: message.id, event: message.event, data: message.data })
        if (options.done(frames)) finished = true
      },
    })
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
    while (!finished) {
      const { value, done } = await reader.read()
      if (done) break
      parser.feed(value)
    }
    controller.abort()
    return { status: 200, contentType: response.headers.get('content-type'), frames }
  } catch (error) {
    if (controller.signal.aborted && frames.length > 0) return { status: 200, contentType: 'text/event-stream', frames }
    throw error
  } finally {
    clearTimeout(timer)
  }
}

/** The session events among received frames (approval frames and comments left out). */
export function sessionEvents(frames: readonly ReceivedFrame[]): { seq: number; type: string }[] {
  return frames.filter((f) => f.id !== undefined).map((f) => JSON.parse(f.data) as { seq: number; type: string })
}
