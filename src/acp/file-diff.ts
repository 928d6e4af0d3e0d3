// The diff an ACP client shows for a `write_file` or `edit_file` call, built before the call runs so that the
// permission question can show it too. The file's current content is read the way the built-in tools read:
// beneath the tool root, never through a link that leads out of it, so a diff cannot show a file the tools
// themselves could not touch.
import type { Diff } from '@agentclientprotocol/sdk'
import { HarnessError } from '../errors/harness-error.js'
import { openBeneath } from '../tools/builtin/open-beneath.js'
import type { Workspace } from '../tools/builtin/workspace-path.js'
import { absoluteIn } from './tool-call-view.js'

// A diff is for a person to read: past this size the client gets no preview (the call itself is unaffected).
const PREVIEW_MAX_BYTES = 1024 * 1024

/**
 * The diff `write_file {path, content}` or `edit_file {path, oldText, newText}` would make, with `path`
 * absolute against `root` (the session's cwd as the client named it); undefined for other tools, arguments of the wrong shape, a file too large to preview, or one the
 * tools could not open (the call will fail with that error itself).
 */
export async function plannedDiff(workspace: Workspace, root: string, tool: string, args: unknown): Promise<Diff | undefined> {
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return undefined
  const { path, content, oldText, newText } = args as Record<string, unknown>
  if (typeof path !== 'string' || path === '') return undefined
  const absolute = absoluteIn(root, path)
  if (tool === 'write_file' && typeof content === 'string') {
    const before = await currentText(workspace, path)
    if (before === 'unreadable') return undefined
    return { path: absolute, oldText: before ?? null, newText: content }
  }
  if (tool === 'edit_file' && typeof oldText === 'string' && typeof newText === 'string' && oldText !== '') {
    const before = await currentText(workspace, path)
    if (before === 'unreadable' || before === undefined) return undefined
    const at = before.indexOf(oldText)
    // The tool refuses an edit whose text is missing or not unique; the preview shows only the asked change then.
    if (at < 0 || before.indexOf(oldText, at + 1) >= 0) return { path: absolute, oldText, newText }
    return { path: absolute, oldText: before, newText: before.slice(0, at) + newText + before.slice(at + oldText.length) }
  }
  return undefined
}

/** The file's text, undefined when it does not exist, `'unreadable'` when it cannot be previewed. */
async function currentText(workspace: Workspace, path: string): Promise<string | undefined | 'unreadable'> {
  let opened: Awaited<ReturnType<typeof openBeneath>>
  try {
    opened = await openBeneath(workspace, path, 'read')
  } catch (error) {
    return error instanceof HarnessError && error.code === 'FILE_NOT_FOUND' ? undefined : 'unreadable'
  }
  try {
    const stat = await opened.handle.stat()
    if (!stat.isFile() || stat.size > PREVIEW_MAX_BYTES) return 'unreadable'
    return await opened.handle.readFile({ encoding: 'utf8' })
  } catch {
    return 'unreadable'
  } finally {
    await opened.handle.close()
  }
}
