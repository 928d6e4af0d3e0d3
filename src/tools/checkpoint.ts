// The checkpoint seam. Built-in tools that change the workspace (write_file, edit_file, bash) keep the bytes
// they are about to overwrite or delete and say afterwards which paths a call changed; where those bytes go
// and where the record is logged is not theirs to know (tools sit below the stores and the harness). So a tool
// declares a `CheckpointSlot` on its definition, like a delegating tool declares its `delegation`, and the
// harness binds a sink over its store to the slot of every tool it offers. A tool whose slot has no sink that
// takes the calling session (a harness over a store without blobs, a tool used on its own) checkpoints nothing.
import { createHash } from 'node:crypto'

/** One path a call changed, by content: the SHA-256 (hex) of its bytes before and after, `null` for "no file". */
export interface FileChange {
  /** Workspace-relative, `/`-separated. */
  readonly path: string
  /** Hash of the bytes before the call (their blob was stored before the change), or null: the file did not exist. */
  readonly before: string | null
  /** Hash of the bytes after the call, or null: the call deleted the file. */
  readonly after: string | null
  /**
   * Set when the bytes before were not kept (a file over the size limit for checkpoints): a rewind cannot
   * restore this path and reports it as a conflict instead.
   */
  readonly untracked?: true
}

/** What one tool call changed in the workspace (logged as `checkpoint/files`). */
export interface CheckpointRecord {
  /** The tool call's id. */
  readonly callId: string
  /** The tool's name. */
  readonly tool: string
  /** Real absolute path of the workspace root the paths are relative to. */
  readonly root: string
  /** Every path whose bytes differ after the call, sorted by path. */
  readonly files: readonly FileChange[]
  /** Set when a scan stopped at its file limit: changes beyond it were not seen (bash). */
  readonly incomplete?: true
}

/** Where a session's checkpoints go: implemented by the harness over its store. */
export interface CheckpointSink {
  /** Whether this sink keeps checkpoints for `sessionId` (the harness runs that session's agent, and its store has blobs). */
  accepts(sessionId: string): boolean
  /** Stores blobs keyed by {@link sha256}; resolves once durable. Called before the change they guard. */
  saveBlobs(sessionId: string, blobs: ReadonlyMap<string, Buffer>): Promise<void>
  /** Logs what a call changed, in the session's log. */
  record(sessionId: string, record: CheckpointRecord): void
  /**
   * Starts storing blobs that will be pre-images of a later change (the bytes a tool just wrote), without
   * waiting: a later {@link CheckpointSink.saveBlobs} of the same hash then waits for that write instead of
   * starting its own, so the next change of the file rarely waits for the disk at all.
   */
  keepAhead?(sessionId: string, blobs: ReadonlyMap<string, Buffer>): void
}

/**
 * The place on a tool's definition a harness binds its {@link CheckpointSink} to. One tool set may serve
 * several harnesses; each binds its own sink and takes only its own sessions.
 */
export class CheckpointSlot {
  readonly #sinks = new Set<CheckpointSink>()

  /** Binds `sink` (again: no change); returns a disposer that unbinds it. */
  bind(sink: CheckpointSink): () => void {
    this.#sinks.add(sink)
    return () => this.#sinks.delete(sink)
  }

  /** The bound sink that keeps checkpoints for `sessionId`, if any. */
  sinkFor(sessionId: string): CheckpointSink | undefined {
    for (const sink of this.#sinks) if (sink.accepts(sessionId)) return sink
    return undefined
  }
}

/** A tool definition that checkpoints the files it changes. */
export interface CheckpointingTool {
  /** Where the harness binds its checkpoint sink. */
  readonly checkpoints: CheckpointSlot
}

/** The checkpoint slot `tool` declares, if it checkpoints. */
export function checkpointSlotOf(tool: object | undefined): CheckpointSlot | undefined {
  const slot = (tool as Partial<CheckpointingTool> | undefined)?.checkpoints
  return slot instanceof CheckpointSlot ? slot : undefined
}

/** Lower-case hex SHA-256 of `bytes`: a checkpoint blob's key. */
export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}
