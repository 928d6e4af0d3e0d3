import { createConnection } from 'node:net'

/** What a raw request got back: the parsed status line, headers and body, and how the connection ended. */
export interface RawAnswer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
  /** The socket error the client saw (`ECONNRESET`, `EPIPE`), if any: a reset instead of a clean close. */
  readonly error?: string
}

/**
 * Sends `request` byte for byte over a fresh TCP connection (nothing normalises it: not the Host, not the
 * encoding of the path, not a header's size) and reads until the server closes. `more`, when given, is written
 * once the answer's first bytes arrived — a client still sending while the server answers. Requests should say
 * `Connection: close`, so that the server ends the connection after its answer.
 */
export function rawHttp(port: number, request: string | Buffer, options: { more?: string | Buffer } = {}): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    const chunks: Buffer[] = []
    let error: string | undefined
    let sentMore = false
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      if (options.more !== undefined && !sentMore) {
        sentMore = true
        socket.write(options.more)
      }
    })
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message))
    socket.on('close', () => resolve({ ...parse(Buffer.concat(chunks).toString('utf8')), ...(error !== undefined ? { error } : {}) }))
    // No end() here: the client's side closes when the server's does (allowHalfOpen is off), so a server that
    // half-closes after its answer and reads on sees the client leave, not a client that left first.
    socket.write(request)
  })
}

function parse(text: string): { status: number; headers: Record<string, string>; body: string } {
  const split = text.indexOf('\r\n\r\n')
  const head = split < 0 ? text : text.slice(0, split)
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0), headers, body: split < 0 ? '' : text.slice(split + 4) }
}
