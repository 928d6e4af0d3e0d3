// `harness.rewind`: puts the workspace back to where it was before turn N+1 and continues the conversation
// from a fork at the end of turn N. What to restore comes from the log alone: every `checkpoint/files` (and
// earlier `checkpoint/restored`) event after the boundary names the paths it changed, with the hashes of their
// bytes before and after. A path's target is the "before" of its first change after the boundary; the agent's
// own last word on it is the "after" of its last change. A path that holds neither (changed outside the
// agent) is a conflict, left alone unless `force`. Comparing with the target first makes a repeated rewind a
// no-op: everything already holds its target.
import { HarnessError } from '../errors/harness-error.js'
import type { JsonValue } from '../json/lossless.js'
import type { EventRecord, SessionEvent } from '../session/events.js'
import type { Session } from '../session/session.js'
import type { FileChange } from '../tools/checkpoint.js'
import { currentContent, restoreFile } from '../tools/builtin/restore-file.js'
import { Workspace } from '../tools/builtin/workspace-path.js'
import type { SessionStore } from '../store/types.js'

/** Options of `harness.rewind`. */
export interface RewindOptions {
  /** The last turn to keep: files go back to their state before turn `toTurn + 1` (0: before the first turn; files only). */
  readonly toTurn: number
  /** Restore the workspace files (default true). */
  readonly files?: boolean
  /** Continue the conversation from a fork at the end of turn `toTurn` (default true). */
  readonly conversation?: boolean
  /** Restore conflicting paths (changed outside the agent) too, instead of leaving them (default false). */
  readonly force?: boolean
}

/** A path a rewind left as it was. */
export interface RewindConflict {
  /** Workspace-relative path. */
  readonly path: string
  /** Why it was left. */
  readonly reason: string
}

/** What `harness.rewind` did. */
export interface RewindResult {
  /** The session to continue: the fork, or the rewound session itself for a files-only rewind. */
  readonly sessionId: string
  /** Paths written back with their earlier bytes, sorted. */
  readonly restored: string[]
  /** Paths removed because they did not exist at the target point, sorted. */
  readonly deleted: string[]
  /** Paths left alone, sorted by path. */
  readonly conflicts: RewindConflict[]
}

/** Data of a `checkpoint/restored` event. */
export interface CheckpointRestoredData {
  /** The session whose checkpoints were restored (the fork's parent, or this session). */
  readonly session: string
  readonly toTurn: number
  /** Seqs (in `session`) of the `checkpoint/files` and `checkpoint/restored` events the restore undid. */
  readonly checkpoints: readonly number[]
  /** Each path the rewind changed: `before` what it held, `after` what it holds now (the target). */
  readonly files: readonly (FileChange & { readonly root: string })[]
  readonly restored: readonly string[]
  readonly deleted: readonly string[]
  readonly conflicts: readonly RewindConflict[]
}

/** What a rewind needs of its harness. */
export interface RewindContext {
  readonly store: SessionStore
  /** The harness's live agent of a session, if it runs one. */
  liveSession(id: string): { readonly session: Session; readonly status: 'idle' | 'running'; flush(): Promise<void> } | undefined
  /** The harness's fork (`forkSession`). */
  fork(id: string, at: number): Promise<string>
}

interface PathPlan {
  readonly root: string
  readonly path: string
  target: string | null
  untracked: boolean
  lastAfter: string | null
}

/**
 * Rewinds session `sessionId` (see {@link RewindOptions}).
 * @throws HarnessError `INVALID_ARGS` for bad options, `INVALID_BOUNDARY` when turn `toTurn` did not end in
 * this session, `OPEN_TURN` when this harness's agent of the session is running, `SESSION_NOT_FOUND`
 */
export async function rewindSession(context: RewindContext, sessionId: string, options: RewindOptions): Promise<RewindResult> {
  const { toTurn } = options ?? {}
  const files = options.files !== false
  const conversation = options.conversation !== false
  if (!Number.isSafeInteger(toTurn) || toTurn < 0) throw new HarnessError(`toTurn must be a non-negative integer, got ${String(toTurn)}`, 'INVALID_ARGS')
  if (!files && !conversation) throw new HarnessError('a rewind needs files, conversation or both', 'INVALID_ARGS')
  const live = context.liveSession(sessionId)
  if (live?.status === 'running') throw new HarnessError(`session '${sessionId}' is running a turn: cancel it or wait before rewinding`, 'OPEN_TURN')
  const events = live !== undefined ? live.session.events : (await context.store.read(sessionId)).events
  const at = boundaryOf(events, toTurn, sessionId, conversation)

  const result = { restored: [] as string[], deleted: [] as string[], conflicts: [] as RewindConflict[] }
  const changed: (FileChange & { root: string })[] = []
  const cited: number[] = []
  if (files) {
    const plans = planOf(events, at, sessionId, cited)
    await restorePlans(context.store, plans, options.force === true, result, changed)
  }
  const target = conversation ? await context.fork(sessionId, at) : sessionId
  if (files) {
    const data: CheckpointRestoredData = { session: sessionId, toTurn, checkpoints: cited, files: changed, ...result }
    await logRestored(context, target, data)
  }
  return { sessionId: target, ...result }
}

// The seq of turn `toTurn`'s end (the fork point); -1 for turn 0, before any turn.
function boundaryOf(events: readonly SessionEvent[], toTurn: number, sessionId: string, conversation: boolean): number {
  if (toTurn === 0) {
    if (conversation) throw new HarnessError('rewinding the conversation to turn 0 leaves nothing to continue: start a new session, or rewind the files only', 'INVALID_BOUNDARY')
    return -1
  }
  for (const event of events) {
    if (event.type === 'turn/end' && (event.data as { turn?: unknown }).turn === toTurn) return event.seq
  }
  throw new HarnessError(`session '${sessionId}' has no ended turn ${toTurn}`, 'INVALID_BOUNDARY')
}

// Per path changed after `at`: its target (the first change's "before") and the agent's last "after". The
// restore that started a fork (logged in the fork, citing its parent) took the files from the parent's later
// state to the fork point: its "before" is the parent's history, never a target here, but its "after" is what
// the files held when the fork began.
function planOf(events: readonly SessionEvent[], at: number, sessionId: string, cited: number[]): PathPlan[] {
  const plans = new Map<string, PathPlan>()
  for (const event of events) {
    if (event.seq <= at) continue
    const changes = changesOf(event)
    if (changes === undefined) continue
    const startsFork = event.type === 'checkpoint/restored' && (event.data as { session?: unknown }).session !== sessionId
    cited.push(event.seq)
    for (const change of changes) {
      const key = `${change.root}\0${change.path}`
      const plan = plans.get(key)
      if (plan !== undefined) plan.lastAfter = change.after
      else if (!startsFork) plans.set(key, { root: change.root, path: change.path, target: change.before, untracked: change.untracked === true, lastAfter: change.after })
    }
  }
  return [...plans.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : a.root < b.root ? -1 : 1))
}

// The changes an event logged, each with its workspace root.
function changesOf(event: SessionEvent): (FileChange & { root: string })[] | undefined {
  const data = event.data as { root?: unknown; files?: unknown } | null
  if (event.type === 'checkpoint/files' && typeof data?.root === 'string' && Array.isArray(data.files)) {
    const root = data.root
    return (data.files as FileChange[]).map((file) => ({ ...file, root }))
  }
  if (event.type === 'checkpoint/restored' && Array.isArray(data?.files)) return data.files as (FileChange & { root: string })[]
  return undefined
}

async function restorePlans(
  store: SessionStore,
  plans: readonly PathPlan[],
  force: boolean,
  result: { restored: string[]; deleted: string[]; conflicts: RewindConflict[] },
  changed: (FileChange & { root: string })[],
): Promise<void> {
  const workspaces = new Map<string, Workspace | HarnessError>()
  for (const plan of plans) {
    const workspace = workspaceOf(workspaces, plan.root)
    if (workspace instanceof HarnessError) {
      result.conflicts.push({ path: plan.path, reason: `its workspace ${plan.root} is not there: ${workspace.message}` })
      continue
    }
    const now = await currentContent(workspace, plan.path)
    if (plan.untracked) {
      result.conflicts.push({ path: plan.path, reason: 'its earlier bytes were not checkpointed (the file was over the size limit)' })
      continue
    }
    if (now === plan.target) continue
    if (now === 'other') {
      result.conflicts.push({ path: plan.path, reason: 'it is no longer a regular file (a folder or a special file stands there)' })
      continue
    }
    if (now !== plan.lastAfter && !force) {
      result.conflicts.push({ path: plan.path, reason: 'changed outside the agent since its last change (use force to restore it anyway)' })
      continue
    }
    let bytes: Buffer | null = null
    if (plan.target !== null) {
      bytes = (await store.checkpointBlobs?.get(plan.target)) ?? null
      if (bytes === null) {
        result.conflicts.push({ path: plan.path, reason: `its checkpoint ${plan.target.slice(0, 12)}… is missing from the store` })
        continue
      }
    }
    await restoreFile(workspace, plan.path, bytes)
    ;(bytes === null ? result.deleted : result.restored).push(plan.path)
    changed.push({ root: plan.root, path: plan.path, before: now, after: plan.target })
  }
}

function workspaceOf(cache: Map<string, Workspace | HarnessError>, root: string): Workspace | HarnessError {
  let found = cache.get(root)
  if (found === undefined) {
    try {
      found = new Workspace(root)
    } catch (error) {
      found = error instanceof HarnessError ? error : new HarnessError(String(error), 'INVALID_CONFIG')
    }
    cache.set(root, found)
  }
  return found
}

// Into the returned session: through the live agent's log when this harness runs it, else through the store.
async function logRestored(context: RewindContext, sessionId: string, data: CheckpointRestoredData): Promise<void> {
  const live = context.liveSession(sessionId)
  if (live !== undefined) {
    live.session.append('checkpoint/restored', data)
    await live.flush()
    return
  }
  const stored = await context.store.open(sessionId)
  try {
    const event: EventRecord = { type: 'checkpoint/restored', seq: stored.events.length, time: Date.now(), data: JSON.parse(JSON.stringify(data)) as JsonValue }
    stored.writer.append(event as SessionEvent)
    await stored.writer.flush()
  } finally {
    await stored.writer.close()
  }
}
