import type { ServerResponse } from 'node:http'
import type { SessionEvent } from '../session/events.js'
import type { PendingApproval, SessionEventFeed } from './session-ports.js'

/** Tuning of one Server-Sent Events tail. */
export interface EventStreamOptions {
  /** A comment line this often keeps proxies from closing an idle stream (ms, default 15000). */
  readonly heartbeatMs?: number
  /**
   * Bytes a slow client may leave unread before the server drops its connection (default 8 MiB). Memory per
   * client stays bounded; the client reconnects with `Last-Event-ID` and resumes from the log.
   */
  readonly maxBufferedBytes?: number
  /** Called once the session is found, right before the head is written (the HTTP framework lets go of the response). */
  readonly onReady?: () => void
}

/** The seq a tail starts after: `Last-Event-ID` wins over `?after=`; -1 (from the start) when neither is given. */
export function resumePoint(lastEventId: string | string[] | undefined, after: number | undefined): number {
  const header = Array.isArray(lastEventId) ? lastEventId[lastEventId.length - 1] : lastEventId
  if (header !== undefined && /^\d+$/.test(header.trim())) return Number(header.trim())
  return after ?? -1
}

/** One SSE frame for a session event: `id:` is its seq, `event:` its type, `data:` the event as JSON. */
export function eventFrame(event: SessionEvent): string {
  return `id: ${event.seq}\nevent: ${event.type.replace(/[\r\n]/g, ' ')}\ndata: ${JSON.stringify(event)}\n\n`
}

function approvalsFrame(pending: readonly PendingApproval[]): string {
  // No id: approvals are not log events, so they never move a client's resume point.
  return `event: approvals\ndata: ${JSON.stringify({ approvals: pending })}\n\n`
}

/**
 * Streams a session to one HTTP response: first every event after `afterSeq`, then each new event as it is
 * committed, with `approvals` frames when the pending approvals change. Subscribes before writing the head so
 * an unknown session fails as a normal error answer (the returned promise rejects and nothing was written).
 */
export async function streamSessionEvents(feed: SessionEventFeed, id: string, afterSeq: number, res: ServerResponse, options: EventStreamOptions = {}): Promise<void> {
  const maxBuffered = options.maxBufferedBytes ?? 8 * 1024 * 1024
  let ready = false
  let closed = false
  let ending = false
  let unsubscribe: (() => void) | undefined
  let heartbeat: NodeJS.Timeout | undefined
  const early: string[] = []
  const stop = (): void => {
    closed = true
    if (heartbeat !== undefined) clearInterval(heartbeat)
    unsubscribe?.()
  }
  // Registered first: a client may leave while the session is still being looked up.
  res.on('close', stop)
  // A write racing a closing socket must not take the server down.
  res.on('error', stop)
  const write = (frame: string): void => {
    if (closed) return
    if (!ready) {
      early.push(frame)
      return
    }
    res.write(frame)
    if (res.writableLength > maxBuffered) {
      // The client reads slower than the session writes: cut it loose rather than buffer without bound.
      stop()
      res.destroy()
    }
  }
  unsubscribe = await feed.follow(id, afterSeq, {
    event: (event) => write(eventFrame(event)),
    approvals: (pending) => write(approvalsFrame(pending)),
    error: (error) => {
      write(`event: error\ndata: ${JSON.stringify({ message: error.message })}\n\n`)
      ending = true
      if (ready && !closed) res.end()
    },
  })
  if (closed || res.destroyed) {
    stop()
    return
  }
  options.onReady?.()
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // Reverse proxies (nginx) would otherwise buffer the stream.
    'x-accel-buffering': 'no',
  })
  res.write('retry: 1000\n\n')
  ready = true
  for (const frame of early.splice(0)) write(frame)
  if (ending) {
    res.end()
    return
  }
  heartbeat = setInterval(() => write(': keep-alive\n\n'), options.heartbeatMs ?? 15_000)
  heartbeat.unref()
}
