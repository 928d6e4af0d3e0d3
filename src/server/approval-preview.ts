// What a pending approval would do, shown before a person decides: the command of a `bash` call, the diff of a
// `write_file` / `edit_file` against the file as it is now, else the arguments. Computed here, not in the page:
// the page cannot read files, and the server reads them with the tools' own confinement (`openBeneath` under the
// session's working folder), so a preview can never show what the tool itself could not touch.
import type { JsonValue } from '../json/lossless.js'
import { Workspace } from '../tools/builtin/workspace-path.js'
import { openBeneath } from '../tools/builtin/open-beneath.js'
import { looksBinary } from '../tools/builtin/text-file.js'
import { editChangeDiff, fileChangeDiff, type FileChange } from '../views/file-change.js'
import type { PendingApproval } from './session-ports.js'

/** What a pending call would do. */
export type ApprovalPreview =
  | { readonly callId: string; readonly tool: string; readonly kind: 'command'; readonly command: string; readonly network?: true }
  | { readonly callId: string; readonly tool: string; readonly kind: 'file'; readonly change: FileChange }
  | { readonly callId: string; readonly tool: string; readonly kind: 'arguments'; readonly args: JsonValue }

// A file larger than this is not diffed in a banner (the tools' own default read limit is of the same order).
const MAX_PREVIEW_BYTES = 1024 * 1024

type CurrentText = { readonly text: string } | { readonly missing: true } | { readonly unreadable: string }

/**
 * The preview of one pending approval. `root` is the session's working folder (its header's `cwd`), where the
 * built-in file tools of a session this server runs are confined; without one, file changes are shown against
 * an unknown file.
 */
export async function previewApproval(approval: PendingApproval, root: string | undefined): Promise<ApprovalPreview> {
  const { callId, tool } = approval
  const args = approval.args
  const record = typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, JsonValue>) : undefined
  if (tool === 'bash' && typeof record?.command === 'string') return { callId, tool, kind: 'command', command: record.command, ...(record.network === true ? { network: true as const } : {}) }
  if (tool === 'write_file' && typeof record?.path === 'string' && typeof record.content === 'string') {
    const current = await readCurrent(root, record.path)
    if ('text' in current) return { callId, tool, kind: 'file', change: fileChangeDiff(record.path, current.text, record.content) }
    if ('missing' in current) return { callId, tool, kind: 'file', change: fileChangeDiff(record.path, undefined, record.content) }
    return { callId, tool, kind: 'file', change: fileChangeDiff(record.path, undefined, record.content, { file: 'unknown', note: current.unreadable }) }
  }
  if (tool === 'edit_file' && typeof record?.path === 'string' && typeof record.oldText === 'string' && typeof record.newText === 'string') {
    const current = await readCurrent(root, record.path)
    const unreadable = 'missing' in current ? 'the file does not exist: the edit would fail' : 'unreadable' in current ? current.unreadable : undefined
    return { callId, tool, kind: 'file', change: { ...editChangeDiff(record.path, 'text' in current ? current.text : undefined, record.oldText, record.newText, unreadable), ...('missing' in current ? { wouldFail: true as const } : {}) } }
  }
  return { callId, tool, kind: 'arguments', args }
}

async function readCurrent(root: string | undefined, path: string): Promise<CurrentText> {
  if (root === undefined) return { unreadable: 'the session has no working folder on this server: the current file is not known' }
  let workspace: Workspace
  try {
    workspace = new Workspace(root)
  } catch {
    return { unreadable: `the session's working folder ${root} is not on this server: the current file is not known` }
  }
  try {
    const { handle } = await openBeneath(workspace, path, 'read')
    try {
      const info = await handle.stat()
      if (!info.isFile()) return { unreadable: `${path} is not a regular file` }
      if (info.size > MAX_PREVIEW_BYTES) return { unreadable: `${path} is larger than 1 MiB: not compared` }
      const data = await handle.readFile()
      if (looksBinary(data)) return { unreadable: `${path} looks like a binary file: not compared` }
      return { text: data.toString('utf8') }
    } finally {
      await handle.close()
    }
  } catch (error) {
    const code = (error as { code?: string }).code
    if (code === 'FILE_NOT_FOUND') return { missing: true }
    return { unreadable: `${path} could not be read (${code ?? 'error'}): ${(error as Error).message}` }
  }
}
