// What `ledgerloop verify` says of a JSONL session's resume checkpoint (docs/stores.md, "Resume checkpoints"):
// verify folds the whole log anyway, so it also checks that the checkpoint an open would trust folds to what the
// log's first events fold to. A checkpoint the open would ignore is only a note (the next open rewrites it).
import { existsSync, readFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { resumeFoldOf } from '../session/resume-fold.js'
import { foldText, lineDigest, parseCheckpoint } from './resume-checkpoint.js'
import { checkpointPathOf } from './resume-jsonl.js'
import { loadSessionFile } from './session-file.js'

/** The verdict on a session file's checkpoint: nothing to say, a note, or a problem. */
export interface CheckpointVerdict {
  /** The checkpoint would be ignored by the next open (stale, damaged, another version): it is rewritten then. */
  readonly note?: string
  /** The checkpoint matches the file where it is anchored, but not what the log before that point folds to. */
  readonly problem?: string
}

/**
 * Checks the resume checkpoint beside the JSONL log at `path` (none: an empty verdict) against `bytes`, the log's
 * contents as verify read them.
 */
export function verifyResumeCheckpoint(path: string, id: string, bytes: Buffer): CheckpointVerdict {
  const where = checkpointPathOf(dirname(path), id)
  if (!existsSync(where)) return {}
  const ignored = (why: string): CheckpointVerdict => ({ note: `the resume checkpoint ${where} ${why}: the next open ignores it, reads the whole log and writes a new one` })
  let text: string
  try {
    text = readFileSync(where, 'utf8')
  } catch (error) {
    return ignored(`cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`)
  }
  const checkpoint = parseCheckpoint(text, id)
  if (checkpoint === undefined) return ignored('is damaged, of another version or of another session')
  const headerEnd = bytes.indexOf(0x0a)
  if (headerEnd < 0 || lineDigest(bytes.subarray(0, headerEnd)) !== checkpoint.header) return ignored("does not match this log's header (another log under the same id)")
  const { at, lineBytes, sha256 } = checkpoint.anchor
  const start = at - lineBytes - 1
  if (at > bytes.length || start <= headerEnd || bytes[start - 1] !== 0x0a || bytes[at - 1] !== 0x0a || lineDigest(bytes.subarray(start, at - 1)) !== sha256) {
    return ignored(`does not match the line it was cut at (byte ${at}): the log was cut or rewritten since`)
  }
  let fold: string | undefined
  try {
    const prefix = loadSessionFile(bytes.subarray(0, at), path, id)
    const state = prefix.tailRepair === undefined ? resumeFoldOf(prefix.verified, prefix.header.seedLength ?? 0) : undefined
    fold = state === undefined ? undefined : foldText(state)
  } catch {
    fold = undefined // the log's own problems are listed by the judgement of the whole file
  }
  if (fold !== foldText(checkpoint.fold)) {
    return { problem: `the resume checkpoint ${where} matches the log at byte ${at} but not what the log's first ${checkpoint.fold.length} events fold to: an open would use it and then refuse the session when the older events are read; delete it` }
  }
  return {}
}
