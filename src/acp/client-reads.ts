// Reads of files the editor has open, as the person sees them: when the client offers `fs/read_text_file`, a
// successful `read_file` is answered from the client's buffer (unsaved edits included) instead of the disk.
// The built-in tool still runs first, so everything it checks still holds — the path is confined to the tool
// root (links and `..` refused), the file exists, is text and not too large — and only then is its content
// asked of the client, for the same lines, in the same numbered form. The log records what the model read.
import type { AgentContext } from '@agentclientprotocol/sdk'
import type { Harness } from '../harness/harness.js'
import { READ_DEFAULT_LINES, READ_MAX_BYTES, READ_MAX_LINE_CHARS } from '../tools/builtin/read-file.js'
import { clipLine, LINE_BREAK } from '../tools/builtin/text-file.js'
import { absoluteIn } from './tool-call-view.js'

/** What a built-in `read_file` result says about what it read (its `meta`). */
interface ReadMeta {
  readonly path: string
}

/**
 * Answers the session's successful `read_file` calls from `client`'s buffers. A client read that fails leaves
 * the tool's own result (from the disk) as it was, with a warning. Returns the disposer.
 */
export function readThroughClient(harness: Harness, sessionId: string, root: string, client: AgentContext, warn: (line: string) => void): () => void {
  return harness.hooks.on('tools/post-execute', async (payload, next) => {
    const result = await next()
    if (payload.agent.id !== sessionId || payload.call.name !== 'read_file' || result.isError) return result
    const meta = result.meta as ReadMeta | undefined
    const args = payload.call.arguments as { offset?: unknown; limit?: unknown }
    if (meta === undefined || typeof meta !== 'object' || typeof meta.path !== 'string') return result
    const offset = typeof args.offset === 'number' ? args.offset : 1
    const limit = typeof args.limit === 'number' ? args.limit : READ_DEFAULT_LINES
    const path = absoluteIn(root, meta.path)
    let text: string
    try {
      ;({ content: text } = await client.request('fs/read_text_file', { sessionId, path }, { cancellationSignal: payload.signal, stopWaitingOnCancel: true }))
    } catch (error) {
      if (payload.signal.aborted) throw error
      warn(`ledgerloop acp: reading ${path} through the client failed (${error instanceof Error ? error.message : String(error)}); the call read it from disk`)
      return result
    }
    return { ...result, content: [{ type: 'text', text: numberedPage(text, meta.path, offset, limit) }], meta: { ...meta, source: 'client' } }
  })
}

/**
 * The lines `offset`… of `text` as `read_file` shows a file: numbered, long lines cut, at most `limit` lines and
 * {@link READ_MAX_BYTES} of text, with a note saying where the rest starts.
 */
export function numberedPage(text: string, path: string, offset: number, limit: number): string {
  if (text === '') return `(${path} is empty)`
  const all = text.split(LINE_BREAK)
  if (all[all.length - 1] === '') all.pop()
  const lines: string[] = []
  let bytes = 0
  let clipped = 0
  let stoppedBy: 'bytes' | 'limit' | undefined
  for (let i = offset - 1; i < all.length; i++) {
    if (lines.length === limit) {
      stoppedBy = 'limit'
      break
    }
    const line = clipLine(all[i] as string, READ_MAX_LINE_CHARS)
    if (line.clipped) clipped++
    bytes += Buffer.byteLength(line.text) + 1
    if (bytes > READ_MAX_BYTES && lines.length > 0) {
      stoppedBy = 'bytes'
      break
    }
    lines.push(line.text)
  }
  if (lines.length === 0) return `(offset ${offset} is past the end of ${path} in the editor, which has ${all.length} lines)`
  const last = offset + lines.length - 1
  const notes: string[] = []
  if (clipped > 0) notes.push(`${clipped} line(s) longer than ${READ_MAX_LINE_CHARS} characters were cut`)
  if (stoppedBy === 'bytes') notes.push(`stopped at the ${READ_MAX_BYTES / 1024} KiB output cap after line ${last}; the file continues — call read_file with offset=${last + 1} to read more`)
  else if (stoppedBy === 'limit') notes.push(`showing lines ${offset}-${last}; the file continues — call read_file with offset=${last + 1} to read more`)
  const body = lines.map((line, i) => `${String(offset + i).padStart(5)}\t${line}`).join('\n')
  return notes.length === 0 ? body : `${body}\n\n[${notes.join('; ')}]`
}
