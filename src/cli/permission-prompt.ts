import type { PermissionAnswer, PermissionQuestion } from '../plugins/permission.js'

/** Reads one answer line; undefined when input has ended. */
export type ReadAnswer = (signal: AbortSignal) => Promise<string | undefined>

/** The question shown for a permission `ask`. */
export function permissionQuestionText(question: PermissionQuestion): string {
  const network = question.network === true ? ' with network access' : ''
  return `Allow ${question.tool}${question.subject !== '' ? ` ${question.subject}` : ''}${network}? [y]es / [n]o / [a]lways for this session: `
}

/** Maps a typed answer to a decision; anything unclear is a `no` (a prompt never approves by accident). */
export function parsePermissionAnswer(line: string | undefined): PermissionAnswer {
  const answer = (line ?? '').trim().toLowerCase()
  if (answer === 'y' || answer === 'yes') return 'yes'
  if (answer === 'a' || answer === 'always') return 'always'
  return 'no'
}

/**
 * An `ask` callback for the permission plugin: writes the question, reads one line, reports the decision.
 * A cancelled turn (the question's signal) or ended input answers `no`. `echo` writes the answer back (input
 * that is not a terminal).
 */
export function promptingApprover(
  out: NodeJS.WritableStream,
  read: ReadAnswer,
  hooks: { before?: () => void; after?: () => void; echo?: boolean } = {},
): (question: PermissionQuestion) => Promise<PermissionAnswer> {
  return async (question) => {
    hooks.before?.()
    try {
      out.write(permissionQuestionText(question))
      const line = await read(question.signal).catch(() => undefined)
      const answer = parsePermissionAnswer(line)
      // A terminal echoes what was typed; piped input is echoed here so the transcript reads the same.
      out.write(line === undefined ? '\n' : hooks.echo === true ? `${line}\n` : '')
      out.write(`  → ${answer === 'no' ? 'denied' : answer === 'always' ? `allowed (${question.tool} from now on)` : 'allowed'}\n`)
      return answer
    } finally {
      hooks.after?.()
    }
  }
}
