// What a pending write_file or edit_file would do to a file, as a line diff a person can approve or refuse:
// a pure function of the file's current text and the call's arguments (reading the file is the caller's job).
import { structuredPatch } from 'diff'

/** One hunk of a line diff: each line starts with `' '` (context), `'-'` (removed) or `'+'` (added). */
export interface FileChangeHunk {
  readonly oldStart: number
  readonly oldLines: number
  readonly newStart: number
  readonly newLines: number
  readonly lines: readonly string[]
}

/** What a file write or edit would change. */
export interface FileChange {
  readonly path: string
  /** `new`: no such file yet; `existing`: compared with its current text; `unknown`: its text could not be read. */
  readonly file: 'new' | 'existing' | 'unknown'
  /** Why the current text could not be read, or why the change would fail (`oldText` not found, found twice). */
  readonly note?: string
  /** True when the tool would refuse the call as it stands (an edit whose `oldText` does not occur exactly once). */
  readonly wouldFail?: true
  readonly added: number
  readonly removed: number
  readonly hunks: readonly FileChangeHunk[]
  /** True when the diff was too large to compute in time and only the counts of the texts are given. */
  readonly tooLarge?: true
}

// Lines of context around each change, as `git diff` shows them.
const CONTEXT = 3
// A diff that needs more edits than this is not something a person reads in a banner; give up quickly instead.
const MAX_EDITS = 4000

/** The diff from `before` (undefined: no file) to `after`. */
export function fileChangeDiff(path: string, before: string | undefined, after: string, extra: { note?: string; file?: FileChange['file'] } = {}): FileChange {
  const file = extra.file ?? (before === undefined ? 'new' : 'existing')
  const patch = structuredPatch(path, path, before ?? '', after, '', '', { context: CONTEXT, maxEditLength: MAX_EDITS })
  const note = extra.note !== undefined ? { note: extra.note } : {}
  if (patch === undefined) return { path, file, ...note, added: lineCount(after), removed: lineCount(before ?? ''), hunks: [], tooLarge: true }
  const hunks = patch.hunks.map((h) => ({ oldStart: h.oldStart, oldLines: h.oldLines, newStart: h.newStart, newLines: h.newLines, lines: h.lines }))
  let added = 0
  let removed = 0
  for (const h of hunks) {
    for (const line of h.lines) {
      if (line.startsWith('+')) added++
      else if (line.startsWith('-')) removed++
    }
  }
  return { path, file, ...note, added, removed, hunks }
}

/**
 * The diff an `edit_file {path, oldText, newText}` call would make to a file whose text is `current`
 * (undefined: unreadable or missing, so only `oldText` → `newText` can be shown). Mirrors the tool's rule that
 * `oldText` must occur exactly once, so the person sees when the edit would be refused.
 */
export function editChangeDiff(path: string, current: string | undefined, oldText: string, newText: string, unreadable?: string): FileChange {
  if (current === undefined) return fileChangeDiff(path, oldText, newText, { file: 'unknown', note: unreadable ?? 'the current file could not be read: only the replaced text is shown' })
  const first = current.indexOf(oldText)
  const again = first < 0 ? -1 : current.indexOf(oldText, first + 1)
  if (first < 0 || again >= 0) {
    const note = first < 0 ? 'oldText does not occur in the file: the edit would fail' : 'oldText occurs more than once in the file: the edit would fail'
    return { ...fileChangeDiff(path, oldText, newText, { file: 'existing', note }), wouldFail: true }
  }
  return fileChangeDiff(path, current, current.slice(0, first) + newText + current.slice(first + oldText.length))
}

function lineCount(text: string): number {
  return text === '' ? 0 : text.split('\n').length
}
