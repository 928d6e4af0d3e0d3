import { afterEach } from 'vitest'
import { readFileSync } from 'node:fs'
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { fileURLToPath } from 'node:url'

/** One scripted HTTP answer of the loopback server. */
export interface LoopbackReply {
  readonly status?: number
  readonly headers?: Record<string, string>
  /** Body pieces, each written with its own `write` (separated by `gapMs` so they arrive as separate reads). */
  readonly chunks?: readonly (string | Buffer)[]
  /** Pause between pieces (default 2 ms). */
  readonly gapMs?: number
  /** After the pieces: end the response (default), destroy the socket mid-stream, or hang forever. */
  readonly after?: 'end' | 'destroy' | 'hang'
}

/** What the server received for one request. */
export interface ReceivedRequest {
  readonly method: string
  readonly url: string
  readonly headers: IncomingHttpHeaders
  readonly body: string
  /** The body parsed as JSON (undefined when it is not JSON). */
  readonly json: unknown
  /** Resolves when this request's socket closes (how a test sees that a cancel really hung up). */
  readonly socketClosed: Promise<void>
}

/** A running loopback server on 127.0.0.1 with a random port. */
export interface Loopback {
  readonly baseURL: string
  readonly requests: ReceivedRequest[]
  close(): Promise<void>
}

/**
 * Starts an HTTP server on 127.0.0.1:0 that answers each request with the next scripted reply. Every socket is
 * tracked so `close()` never waits on a hanging stream.
 */
export async function startLoopback(replies: readonly LoopbackReply[] | ((index: number) => LoopbackReply)): Promise<Loopback> {
  const requests: ReceivedRequest[] = []
  const sockets = new Set<Socket>()
  const server: Server = createServer((req, res) => {
    const index = requests.length
    const socket = req.socket
    const socketClosed = new Promise<void>((resolve) => {
      if (socket.destroyed) resolve()
      else socket.once('close', () => resolve())
    })
    const parts: Buffer[] = []
    req.on('data', (part: Buffer) => parts.push(part))
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8')
      let json: unknown
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, json, socketClosed })
      const reply = typeof replies === 'function' ? replies(index) : (replies[index] ?? { status: 500, chunks: ['{"error":{"message":"no scripted reply"}}'] })
      void play(reply, res, socket)
    })
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

async function play(reply: LoopbackReply, res: ServerResponse, socket: Socket): Promise<void> {
  const status = reply.status ?? 200
  const headers = reply.headers ?? (status === 200 ? { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } : { 'content-type': 'application/json' })
  res.writeHead(status, headers)
  res.flushHeaders()
  const gap = reply.gapMs ?? 2
  for (const chunk of reply.chunks ?? []) {
    if (socket.destroyed) return
    res.write(chunk)
    await sleep(gap)
  }
  const after = reply.after ?? 'end'
  if (after === 'end') res.end()
  else if (after === 'destroy') socket.destroy()
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Reads a fixture from `test/llm/adapters/fixtures/`. */
export function fixture(name: string): string {
  return readFileSync(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url)), 'utf8')
}

/** Splits text into byte pieces at the given byte offsets (so a cut can fall inside a UTF-8 character). */
export function splitBytes(text: string, offsets: readonly number[]): Buffer[] {
  const bytes = Buffer.from(text, 'utf8')
  const cuts = [...new Set(offsets)].filter((o) => o > 0 && o < bytes.length).sort((a, b) => a - b)
  const out: Buffer[] = []
  let start = 0
  for (const cut of cuts) {
    out.push(bytes.subarray(start, cut))
    start = cut
  }
  out.push(bytes.subarray(start))
  return out
}

/** Byte offset just inside the first occurrence of `needle` (plus `into` bytes). */
export function byteOffsetInside(text: string, needle: string, into: number): number {
  const at = Buffer.from(text, 'utf8').indexOf(Buffer.from(needle, 'utf8'))
  if (at < 0) throw new Error(`fixture has no ${JSON.stringify(needle)}`)
  return at + into
}

/** Splits into pieces of `size` bytes. */
export function bytesEvery(text: string, size: number): Buffer[] {
  const bytes = Buffer.from(text, 'utf8')
  const out: Buffer[] = []
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size))
  return out
}

/** A `fetch` that answers with a stream whose chunks are exactly `pieces` (byte boundaries we control). */
export function fetchWithExactChunks(pieces: readonly Uint8Array[], init?: ResponseInit): typeof fetch {
  return async () => {
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const piece of pieces) controller.enqueue(piece)
        controller.close()
      },
    })
    return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' }, ...init })
  }
}

/**
 * Registers an `afterEach` that closes whatever server the test started, and returns the function that starts
 * one (a test file calls this once at top level).
 */
export function servePerTest(): (replies: readonly LoopbackReply[]) => Promise<Loopback> {
  let server: Loopback | undefined
  afterEach(async () => {
    await server?.close()
    server = undefined
  })
  return async (replies) => {
    server = await startLoopback(replies)
    return server
  }
}

/**
 * Turns a `.chunks.txt` recording (one event's JSON per line, as the Vercel AI SDK keeps them) back into the SSE
 * body the provider sent: each line becomes one `data:` event. No `[DONE]` is added — the recording holds none.
 */
export function sseFromChunkLines(text: string): string {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => `data: ${line}\n\n`)
    .join('')
}
