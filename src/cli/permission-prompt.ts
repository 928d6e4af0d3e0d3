import type { AttributedAnswer, PermissionAnswer, PermissionQuestion } from '../plugins/permission.js'

/** Reads one answer line; undefined when input has ended. */
export type ReadAnswer = (signal: AbortSignal) => Promise<string | undefined>

/**
 * The words of a shell command that name what it does, offered as an "always" prefix: the program, and its
 * subcommand when the second word looks like one (`git status`, `npm test`, `cargo build`), never an option, a
 * path or a file. Undefined when the command starts with something a prefix cannot stand for (an assignment,
 * a shell operator).
 */
export function commandPrefix(command: string): string | undefined {
  const words = command.trim().split(/\s+/)
  const [program, second] = words
  if (program === undefined || program === '' || !/^[A-Za-z0-9_][\w.+-]*$/.test(program)) return undefined
  return second !== undefined && /^[a-z][a-z0-9-]*$/.test(second) ? `${program} ${second}` : program
}

/** The prefix a question offers: for `bash`, the command's leading words; for other tools, none. */
function offeredPrefix(question: PermissionQuestion): string | undefined {
  return question.tool === 'bash' ? commandPrefix(question.subject) : undefined
}

/** The question shown for a permission `ask`. */
export function permissionQuestionText(question: PermissionQuestion): string {
  const network = question.network === true ? ' with network access' : ''
  const prefix = offeredPrefix(question)
  const choices =
    prefix !== undefined
      ? `[y]es / [n]o / [p] always for \`${prefix} …\` / [a]lways for any ${question.tool} command (this session)`
      : '[y]es / [n]o / [a]lways for this session'
  return `Allow ${question.tool}${question.subject !== '' ? ` ${question.subject}` : ''}${network}? ${choices}: `
}

/** Maps a typed answer to a decision; anything unclear is a `no` (a prompt never approves by accident). */
export function parsePermissionAnswer(line: string | undefined): PermissionAnswer | 'prefix' {
  const answer = (line ?? '').trim().toLowerCase()
  if (answer === 'y' || answer === 'yes') return 'yes'
  if (answer === 'a' || answer === 'always') return 'always'
  if (answer === 'p' || answer === 'prefix') return 'prefix'
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
): (question: PermissionQuestion) => Promise<PermissionAnswer | AttributedAnswer> {
  return async (question) => {
    hooks.before?.()
    try {
      out.write(permissionQuestionText(question))
      const line = await read(question.signal).catch(() => undefined)
      const prefix = offeredPrefix(question)
      const parsed = parsePermissionAnswer(line)
      // `p` means something only where a prefix was offered; elsewhere it is as unclear as any other letter.
      const answer = parsed === 'prefix' && prefix === undefined ? 'no' : parsed
      // A terminal echoes what was typed; piped input is echoed here so the transcript reads the same.
      out.write(line === undefined ? '\n' : hooks.echo === true ? `${line}\n` : '')
      out.write(`  → ${outcomeText(answer, question, prefix)}\n`)
      return answer === 'prefix' ? { answer: 'always', by: 'user', prefix: prefix as string } : answer
    } finally {
      hooks.after?.()
    }
  }
}

function outcomeText(answer: PermissionAnswer | 'prefix', question: PermissionQuestion, prefix: string | undefined): string {
  if (answer === 'no') return 'denied'
  if (answer === 'always') return `allowed (${question.tool} from now on)`
  if (answer === 'prefix') return `allowed (${question.tool} \`${prefix ?? ''} …\` from now on)`
  return 'allowed'
}
