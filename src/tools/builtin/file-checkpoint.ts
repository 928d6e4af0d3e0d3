// Checkpoints of the one-file tools (write_file, edit_file): the file's bytes before the change are stored
// through the session's sink before a byte is written, and the change is logged once it happened.
import type { FileHandle } from 'node:fs/promises'
import { HarnessError } from '../../errors/harness-error.js'
import { sha256, type CheckpointSink, type CheckpointSlot } from '../checkpoint.js'
import type { ToolContext } from '../types.js'
import { openBeneath, type OpenedBeneath } from './open-beneath.js'
import type { Workspace } from './workspace-path.js'

/** What a file held before a change: its bytes, `null` when it did not exist, `'untracked'` when too large to keep. */
export type PreImage = Buffer | null | 'untracked'

/**
 * Logs the change once it happened: `rel` is where the file really is (links inside the workspace resolved, as
 * the tool's descriptor found it), `after` the bytes it holds now (`null`: it is gone).
 */
export type RecordChange = (rel: string, after: Buffer | null) => void

/**
 * Stores `before` (the file's bytes before this call changes it) through the sink that keeps the calling
 * session's checkpoints, and returns how to log the change; undefined when no sink takes the session.
 * Resolves only once the blob is durable: the change may start then.
 */
export async function checkpointBeforeChange(
  sink: CheckpointSink | undefined,
  ctx: ToolContext,
  tool: string,
  workspace: Workspace,
  before: PreImage,
): Promise<RecordChange | undefined> {
  if (sink === undefined) return undefined
  const sessionId = ctx.agent.id
  const beforeHash = before === null || before === 'untracked' ? null : sha256(before)
  if (before !== null && before !== 'untracked') await sink.saveBlobs(sessionId, new Map([[beforeHash as string, before]]))
  return (rel, after) => {
    const afterHash = after === null ? null : sha256(after)
    if (after !== null && afterHash !== null) sink.keepAhead?.(sessionId, new Map([[afterHash, after]]))
    if (afterHash === beforeHash && before !== 'untracked') return
    sink.record(sessionId, {
      callId: ctx.callId,
      tool,
      root: workspace.root,
      files: [{ path: rel, before: beforeHash, after: afterHash, ...(before === 'untracked' ? { untracked: true as const } : {}) }],
    })
  }
}

/** The sink of `slot` for the calling session, if checkpoints are on and one takes it. */
export function sinkOf(slot: CheckpointSlot | undefined, ctx: ToolContext): CheckpointSink | undefined {
  return slot?.sinkFor(ctx.agent.id)
}

/**
 * The current bytes of `given` for a checkpoint, read through a descriptor opened beneath the root: `null`
 * when there is no file, `'untracked'` over `maxBytes`. Anything that is not a regular file is left to the
 * write that follows to refuse (it does, with its own error), so it reads as `null` here.
 */
export async function readPreImage(workspace: Workspace, given: string, maxBytes: number): Promise<PreImage> {
  let opened
  try {
    opened = await openBeneath(workspace, given, 'read')
  } catch (error) {
    if (error instanceof HarnessError && (error.code === 'FILE_NOT_FOUND' || error.code === 'NOT_A_DIRECTORY')) return null
    throw error
  }
  try {
    const info = await opened.handle.stat()
    if (!info.isFile()) return null
    if (info.size > maxBytes) return 'untracked'
    return await opened.handle.readFile()
  } finally {
    await opened.handle.close()
  }
}

/**
 * Opens `given` for reading and writing when it is an existing regular file, and reads its pre-image through that
 * descriptor: one walk beneath the root serves both the checkpoint and the write that follows (a second walk
 * and read cost ~0.5 ms of CPU a call). Undefined for anything else (a missing file, a folder, an error): the
 * caller then takes the general path, which reports those as it always did.
 */
export async function openWithPreImage(workspace: Workspace, given: string, maxBytes: number): Promise<{ opened: OpenedBeneath; before: PreImage } | undefined> {
  let opened: OpenedBeneath
  try {
    opened = await openBeneath(workspace, given, 'update')
  } catch {
    return undefined
  }
  try {
    const info = await opened.handle.stat()
    if (info.isFile() && info.size > maxBytes) return { opened, before: 'untracked' }
    const bytes = info.isFile() ? await readWhole(opened.handle) : null
    if (bytes !== null) return { opened, before: bytes }
  } catch {
    // Fall through: the general path reads again and reports what is wrong.
  }
  await opened.handle.close().catch(() => undefined)
  return undefined
}

/** Every byte of an open file from offset 0, whatever the descriptor's position (null when it cannot be read). */
export async function readWhole(handle: FileHandle): Promise<Buffer | null> {
  try {
    const { size } = await handle.stat()
    const buffer = Buffer.alloc(size)
    let read = 0
    while (read < size) {
      const { bytesRead } = await handle.read(buffer, read, size - read, read)
      if (bytesRead === 0) break
      read += bytesRead
    }
    return buffer.subarray(0, read)
  } catch {
    return null
  }
}
