// Drives a real `ledgerloop acp` process (the built CLI) with the ACP SDK's own client side over its stdio:
// a `ClientApp` connected through `ndJsonStream`. Every line the agent writes to stdout is also kept raw, so a
// test can check that stdout carries JSON-RPC and nothing else, and see answers the SDK does not surface
// (the `id: null` error for a garbage line).
import { PassThrough, Readable, Writable } from 'node:stream'
import { client, ndJsonStream, RequestError, type ClientConnection, type ReadTextFileRequest, type RequestPermissionRequest, type RequestPermissionResponse, type SessionNotification } from '@agentclientprotocol/sdk'
import { startCli } from '../cli/cli-process.js'

/** How the test answers one permission question (the signal aborts when the agent withdraws it). */
export type PermissionAnswerer = (request: RequestPermissionRequest, signal: AbortSignal) => Promise<RequestPermissionResponse>

/** A live agent process and the client connected to it. */
export interface AcpProcess {
  readonly child: ReturnType<typeof startCli>
  readonly connection: ClientConnection
  /** Every `session/update` received, in order. */
  readonly updates: SessionNotification[]
  /** Every permission question received, in order. */
  readonly questions: RequestPermissionRequest[]
  /** Every stdout line, parsed (a line that is not JSON is kept as a string: a test failure). */
  readonly lines: unknown[]
  /** Answers the next questions (replaced by the test as it goes). */
  answer: PermissionAnswerer
  /** Every `fs/read_text_file` request received, in order. */
  readonly reads: ReadTextFileRequest[]
  /** The editor's buffers by absolute path, served to `fs/read_text_file` (a missing one is a -32002 error). */
  readonly buffers: Map<string, string>
  /** Writes raw text to the agent's stdin (a garbage line). */
  writeRaw(text: string): void
  /** Resolves once the updates of `sessionId` since `from` satisfy `until`. */
  waitForUpdate(sessionId: string, until: (n: SessionNotification) => boolean, timeoutMs?: number): Promise<SessionNotification>
  /**
   * Resolves once the client has handled every `session/update` that reached stdout so far. The SDK's client
   * may resolve a request before it has run the handlers of notifications that came before the response on the
   * wire, so a test that just got a prompt's response settles first: then it sees every update the agent sent
   * before answering (which is what ACP asks of the agent; the raw line order is what is checked).
   */
  settle(timeoutMs?: number): Promise<void>
  /** Ends stdin (the client goes away) and resolves with the exit code. */
  end(timeoutMs?: number): Promise<number | null>
}

/** Starts `ledgerloop acp ARGS` with `env` and connects the SDK's client to it. */
export function startAcp(args: readonly string[], env: NodeJS.ProcessEnv): AcpProcess {
  const child = startCli(['acp', ...args], { env })
  // Spawned with every stdio piped, so both are there.
  const stdout = child.stdout as Readable
  const stdin = child.stdin as Writable
  stdout.removeAllListeners('data')
  const updates: SessionNotification[] = []
  const questions: RequestPermissionRequest[] = []
  const lines: unknown[] = []
  const reads: ReadTextFileRequest[] = []
  const buffers = new Map<string, string>()
  const tap = new PassThrough()
  let partial = ''
  stdout.on('data', (data: Buffer | string) => {
    const text = data.toString()
    child.out.stdout += text
    tap.write(text)
    partial += text
    const parts = partial.split('\n')
    partial = parts.pop() ?? ''
    for (const line of parts) {
      if (line === '') continue
      try {
        lines.push(JSON.parse(line) as unknown)
      } catch {
        lines.push(line)
      }
    }
  })
  stdout.on('end', () => tap.end())
  const process: AcpProcess = {
    child,
    updates,
    questions,
    lines,
    reads,
    buffers,
    answer: async () => ({ outcome: { outcome: 'cancelled' } }),
    connection: undefined as unknown as ClientConnection,
    writeRaw: (text) => void stdin.write(text),
    async waitForUpdate(sessionId, until, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const found = updates.find((n) => n.sessionId === sessionId && until(n))
        if (found !== undefined) return found
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no such update for ${sessionId}\nstderr:\n${child.out.stderr}`)
        await new Promise((r) => setTimeout(r, 10))
      }
    },
    async settle(timeoutMs = 5_000) {
      const sent = lines.filter((l) => typeof l === 'object' && l !== null && (l as { method?: unknown }).method === 'session/update').length
      const deadline = Date.now() + timeoutMs
      while (updates.length < sent) {
        if (Date.now() > deadline) throw new Error(`the client handled ${updates.length} of ${sent} updates`)
        await new Promise((r) => setTimeout(r, 5))
      }
    },
    end(timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        if (child.exitCode !== null) return resolve(child.exitCode)
        const timer = setTimeout(() => {
          child.kill('SIGKILL')
          reject(new Error(`the agent did not exit after stdin closed\nstderr:\n${child.out.stderr}`))
        }, timeoutMs)
        child.once('close', (code) => {
          clearTimeout(timer)
          resolve(code)
        })
        stdin.end()
      })
    },
  }
  const app = client({ name: 'ledgerloop-test' })
    .onRequest('session/request_permission', ({ params, signal }) => {
      questions.push(params)
      return process.answer(params, signal)
    })
    .onRequest('fs/read_text_file', ({ params }) => {
      reads.push(params)
      const text = buffers.get(params.path)
      if (text === undefined) throw RequestError.resourceNotFound(params.path)
      return { content: text }
    })
    .onNotification('session/update', ({ params }) => {
      updates.push(params)
    })
  const stream = ndJsonStream(Writable.toWeb(stdin) as WritableStream<Uint8Array>, Readable.toWeb(tap) as unknown as ReadableStream<Uint8Array>)
  ;(process as { connection: ClientConnection }).connection = app.connect(stream)
  return process
}

/** Answers with the option of `kind` (allow_once, allow_always, reject_once). */
export function choose(kind: 'allow_once' | 'allow_always' | 'reject_once'): PermissionAnswerer {
  return async (request) => {
    const option = request.options.find((o) => o.kind === kind)
    if (option === undefined) throw new Error(`no ${kind} option offered`)
    return { outcome: { outcome: 'selected', optionId: option.optionId } }
  }
}

/** The text of a session's chunks of one kind, joined, from `updates[from..]`. */
export function chunkText(updates: readonly SessionNotification[], sessionId: string, kind: 'agent_message_chunk' | 'agent_thought_chunk' | 'user_message_chunk', from = 0): string {
  return updates
    .slice(from)
    .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === kind)
    .map((n) => {
      const u = n.update as { content: { type: string; text?: string } }
      return u.content.type === 'text' ? (u.content.text ?? '') : ''
    })
    .join('')
}
