// What each turn did to the workspace files, read back from the log and the checkpoint blobs: the page's
// per-turn diffs and `GET /api/sessions/:id/file-changes`. The log says which call changed which path (a
// `checkpoint/files` event with the hashes of the bytes before and after); the blobs hold those bytes. A turn's
// change of a path is its net change over the turn: the "before" of its first change in the turn, the "after" of
// its last, as `harness.rewind` plans a restore over several turns.
import type { SessionEvent } from '../session/events.js'
import type { CheckpointBlobStore } from '../store/types.js'
import type { FileChange } from '../tools/checkpoint.js'
import { looksBinary } from '../tools/builtin/text-file.js'
import { fileChangeDiff, type FileChangeHunk } from '../views/file-change.js'
import type { RewindConflict } from '../harness/harness.js'

/** One tool call that changed a path. */
export interface FileChangeCall {
  readonly callId: string
  readonly tool: string
  /** Seq of its `checkpoint/files` event. */
  readonly seq: number
}

/**
 * How a turn left a path: `created` (no file before, one after), `deleted`, `modified`, or `unchanged` (changed
 * and changed back within the turn).
 */
export type PathChangeKind = 'created' | 'modified' | 'deleted' | 'unchanged'

/** A path's net change over one turn. */
export interface TurnPathChange {
  /** Workspace-relative, `/`-separated. */
  readonly path: string
  /** Real absolute path of the workspace root. */
  readonly root: string
  readonly change: PathChangeKind
  /** SHA-256 of the bytes before the turn's first change (null: no file). */
  readonly before: string | null
  /** SHA-256 of the bytes after the turn's last change (null: no file). */
  readonly after: string | null
  /** The calls that changed it, in log order. */
  readonly calls: readonly FileChangeCall[]
  /** The bytes on one side were over the checkpoint size limit: not kept, so neither diffed nor restorable. */
  readonly untracked?: true
}

/** The file changes of one turn. */
export interface TurnFileChanges {
  readonly turn: number
  /** Sorted by path (then root). */
  readonly files: readonly TurnPathChange[]
  /** A `bash` scan of the turn stopped at its file limit: changes beyond it were not seen. */
  readonly incomplete?: true
}

/** A rewind logged in this session (`checkpoint/restored`): files put back between turns. */
export interface FileRestore {
  readonly seq: number
  /** The last turn that had ended when it was logged (0: none). */
  readonly afterTurn: number
  /** The session whose checkpoints it undid (a fork's parent, or this session for a files-only rewind). */
  readonly session: string
  readonly toTurn: number
  readonly restored: readonly string[]
  readonly deleted: readonly string[]
  readonly conflicts: readonly RewindConflict[]
}

/** Every turn's file changes (turns that changed nothing are left out) and the rewinds logged in a session. */
export interface SessionFileChanges {
  readonly turns: readonly TurnFileChanges[]
  readonly restores: readonly FileRestore[]
}

interface OpenPath {
  path: string
  root: string
  before: string | null
  after: string | null
  calls: FileChangeCall[]
  untracked: boolean
}

/** Folds a session's log into its per-turn file changes. Pure: reads no blob. */
export function fileChangesOf(events: readonly SessionEvent[]): SessionFileChanges {
  const turns = new Map<number, { paths: Map<string, OpenPath>; incomplete: boolean }>()
  const restores: FileRestore[] = []
  let current: number | undefined
  let lastEnded = 0
  for (const event of events) {
    const data = event.data as Record<string, unknown> | null
    if (event.type === 'turn/start') current = data?.turn as number
    else if (event.type === 'turn/end') {
      lastEnded = data?.turn as number
      current = undefined
    } else if (event.type === 'checkpoint/files' && current !== undefined && typeof data?.root === 'string' && Array.isArray(data.files)) {
      let turn = turns.get(current)
      if (turn === undefined) turns.set(current, (turn = { paths: new Map(), incomplete: false }))
      if (data.incomplete === true) turn.incomplete = true
      const call = { callId: String(data.callId), tool: String(data.tool), seq: event.seq }
      for (const file of data.files as FileChange[]) {
        const key = `${data.root}\0${file.path}`
        const open = turn.paths.get(key)
        if (open === undefined) {
          turn.paths.set(key, { path: file.path, root: data.root, before: file.before, after: file.after, calls: [call], untracked: file.untracked === true })
        } else {
          open.after = file.after
          if (open.calls.at(-1)?.callId !== call.callId) open.calls.push(call)
          if (file.untracked === true) open.untracked = true
        }
      }
    } else if (event.type === 'checkpoint/restored' && data !== null) {
      restores.push({
        seq: event.seq,
        afterTurn: lastEnded,
        session: String(data.session),
        toTurn: Number(data.toTurn),
        restored: (data.restored as string[] | undefined) ?? [],
        deleted: (data.deleted as string[] | undefined) ?? [],
        conflicts: (data.conflicts as RewindConflict[] | undefined) ?? [],
      })
    }
  }
  const folded: TurnFileChanges[] = [...turns]
    .sort(([a], [b]) => a - b)
    .map(([turn, { paths, incomplete }]) => ({
      turn,
      files: [...paths.values()].sort(byPath).map(pathChange),
      ...(incomplete ? { incomplete: true as const } : {}),
    }))
  return { turns: folded, restores }
}

function byPath(a: OpenPath, b: OpenPath): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : a.root < b.root ? -1 : a.root > b.root ? 1 : 0
}

function pathChange(open: OpenPath): TurnPathChange {
  // An untracked side has no hash either (null): with both sides null, whether the file was created, deleted or
  // rewritten is not known, only that it changed.
  const unknown = open.untracked && open.before === null && open.after === null
  const change: PathChangeKind = unknown ? 'modified' : open.before === open.after && !open.untracked ? 'unchanged' : open.before === null ? 'created' : open.after === null ? 'deleted' : 'modified'
  return { path: open.path, root: open.root, change, before: open.before, after: open.after, calls: open.calls, ...(open.untracked ? { untracked: true as const } : {}) }
}

/** A path's change with its content: the line diff, or why there is none. */
export interface TurnPathDiff extends TurnPathChange {
  /** Sizes of the two sides in bytes (absent: no file, or its bytes are not in the store). */
  readonly beforeBytes?: number
  readonly afterBytes?: number
  /** One side holds a NUL byte in its first 8 KiB: not diffed. */
  readonly binary?: true
  /** A side is over `maxBytes`, or the diff was too large to compute: not diffed (the counts may still be given). */
  readonly tooLarge?: true
  /** Why there is no diff, for people (a missing blob, an untracked side, a size limit). */
  readonly note?: string
  /** Lines added and removed (when diffed). */
  readonly added?: number
  readonly removed?: number
  /** The unified diff's hunks: each line starts with `' '`, `'-'` or `'+'` (three lines of context). */
  readonly hunks?: readonly FileChangeHunk[]
}

/** Limits of {@link diffTurnFiles}. */
export interface TurnDiffOptions {
  /** Largest side diffed, in bytes (default 256 KiB). */
  readonly maxBytes?: number
  /** Bytes read over all files of the answer; files past it are listed without a diff (default 8 MiB). */
  readonly maxTotalBytes?: number
}

/** Default {@link TurnDiffOptions.maxBytes}. */
export const DEFAULT_DIFF_MAX_BYTES = 256 * 1024
const DEFAULT_TOTAL_BYTES = 8 * 1024 * 1024

type Side = { readonly bytes: Buffer } | { readonly absent: true } | { readonly missing: string }

/**
 * The diffs of one turn's changes, from the checkpoint blobs of `blobs` (undefined: a store without blobs, so
 * no content). Never throws for content: a side that cannot be shown says why in `note`.
 */
export async function diffTurnFiles(turn: TurnFileChanges, blobs: CheckpointBlobStore | undefined, options: TurnDiffOptions = {}): Promise<TurnPathDiff[]> {
  const maxBytes = options.maxBytes ?? DEFAULT_DIFF_MAX_BYTES
  let budget = options.maxTotalBytes ?? DEFAULT_TOTAL_BYTES
  const out: TurnPathDiff[] = []
  for (const file of turn.files) {
    if (file.change === 'unchanged') {
      out.push({ ...file, added: 0, removed: 0, hunks: [], note: 'changed and changed back within the turn' })
      continue
    }
    if (file.untracked === true) {
      out.push({ ...file, note: 'its bytes were over the checkpoint size limit: not kept, so not shown' })
      continue
    }
    if (budget <= 0) {
      out.push({ ...file, tooLarge: true, note: 'not diffed: this answer reached its size limit (ask for fewer bytes per file, or this turn alone)' })
      continue
    }
    const [before, after] = await Promise.all([sideOf(blobs, file.before), sideOf(blobs, file.after)])
    const sizes = { ...('bytes' in before ? { beforeBytes: before.bytes.length } : {}), ...('bytes' in after ? { afterBytes: after.bytes.length } : {}) }
    const missing = 'missing' in before ? before.missing : 'missing' in after ? after.missing : undefined
    if (missing !== undefined) {
      out.push({ ...file, ...sizes, note: missing })
      continue
    }
    const beforeBytes = 'bytes' in before ? before.bytes : undefined
    const afterBytes = 'bytes' in after ? after.bytes : undefined
    budget -= (beforeBytes?.length ?? 0) + (afterBytes?.length ?? 0)
    if ((beforeBytes !== undefined && looksBinary(beforeBytes)) || (afterBytes !== undefined && looksBinary(afterBytes))) {
      out.push({ ...file, ...sizes, binary: true, note: 'binary file: not diffed' })
      continue
    }
    if ((beforeBytes?.length ?? 0) > maxBytes || (afterBytes?.length ?? 0) > maxBytes) {
      out.push({ ...file, ...sizes, tooLarge: true, note: `larger than ${maxBytes.toLocaleString('en-US')} bytes: not diffed` })
      continue
    }
    const diff = fileChangeDiff(file.path, beforeBytes?.toString('utf8'), afterBytes?.toString('utf8') ?? '')
    out.push({
      ...file,
      ...sizes,
      added: diff.added,
      removed: diff.removed,
      hunks: diff.hunks,
      ...(diff.tooLarge === true ? { tooLarge: true as const, note: 'the change is too large to show as a diff' } : {}),
    })
  }
  return out
}

async function sideOf(blobs: CheckpointBlobStore | undefined, hash: string | null): Promise<Side> {
  if (hash === null) return { absent: true }
  if (blobs === undefined) return { missing: 'this store keeps no checkpoint blobs: the content is not known' }
  const bytes = await blobs.get(hash)
  return bytes === undefined ? { missing: `its checkpoint ${hash.slice(0, 12)}… is not in the store` } : { bytes }
}
