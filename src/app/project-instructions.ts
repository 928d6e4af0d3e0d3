import { existsSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { UsageError } from './usage-error.js'

/** The file in the workspace root whose text joins the system prompt (the convention Codex CLI and others read). */
export const PROJECT_FILE = 'AGENTS.md'

/** The project's own instructions for the model, and where each part came from. */
export interface ProjectInstructions {
  /** Text appended to the persona ('' when there is none). */
  readonly text: string
  /** One line per source, for the transcript (`--system`, `AGENTS.md (12 lines)`). */
  readonly sources: readonly string[]
}

/**
 * Gathers `--system TEXT|@file` and, unless switched off, `AGENTS.md` in the tool root. Both are read once, when
 * the session starts; the request header logs the resulting system prompt, so what the model saw stays in the log.
 * @throws UsageError when `--system @file` names a file that cannot be read
 */
export function projectInstructions(system: string | undefined, root: string, readProjectFile: boolean, cwd: string = process.cwd()): ProjectInstructions {
  const parts: string[] = []
  const sources: string[] = []
  if (system !== undefined && system !== '') {
    if (system.startsWith('@')) {
      const path = resolve(cwd, system.slice(1))
      try {
        parts.push(readFileSync(path, 'utf8').trim())
      } catch (error) {
        throw new UsageError(`--system ${system}: cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`)
      }
      sources.push(`--system ${path}`)
    } else {
      parts.push(system.trim())
      sources.push('--system')
    }
  }
  const file = join(root, PROJECT_FILE)
  if (readProjectFile && existsSync(file)) {
    let text = ''
    try {
      text = readFileSync(file, 'utf8').trim()
    } catch (error) {
      throw new UsageError(`cannot read ${file}: ${(error as Error).message} (--no-project-file skips it)`)
    }
    if (text !== '') {
      parts.push(`Project instructions from ${PROJECT_FILE}:\n\n${text}`)
      sources.push(`${PROJECT_FILE} (${text.split('\n').length} lines; --no-project-file skips it)`)
    }
  }
  return { text: parts.join('\n\n'), sources }
}
