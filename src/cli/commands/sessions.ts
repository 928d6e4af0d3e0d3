import { EXIT } from '../cli-error.js'
import { cliStore } from '../cli-harness.js'
import { resolveConfig } from '../config.js'
import { isSubagentSession } from '../../views/child-sessions.js'
import { summarizeLog, type LogSummary } from '../session-summary.js'
import { styleFor } from '../style.js'

/** One row of `ledgerloop sessions --json`. */
export interface SessionRow extends LogSummary {
  readonly id: string
  /** ISO time of the last write. */
  readonly updatedAt: string
  readonly sizeBytes?: number
  readonly parentSession?: string
  /** Set on a sub-agent's session: the parent's tool call that started it. */
  readonly parentCallId?: string
  /** A sub-agent's profile. */
  readonly agentProfile?: string
  /** Why the session could not be read, when it could not. */
  readonly problem?: string
}

/** Reads every stored session's summary, newest first. */
export async function listSessions(): Promise<SessionRow[]> {
  const store = cliStore(resolveConfig())
  try {
    const rows: SessionRow[] = []
    for (const s of await store.list()) {
      const base = {
        id: s.id,
        updatedAt: new Date(s.updatedAt).toISOString(),
        ...(s.sizeBytes !== undefined ? { sizeBytes: s.sizeBytes } : {}),
        ...(s.parentSession !== undefined ? { parentSession: s.parentSession } : {}),
        ...(s.parentCallId !== undefined ? { parentCallId: s.parentCallId } : {}),
        ...(s.agentProfile !== undefined ? { agentProfile: s.agentProfile } : {}),
      }
      try {
        rows.push({ ...base, ...summarizeLog((await store.read(s.id)).events) })
      } catch (error) {
        rows.push({ ...base, title: '', turns: 0, lastReason: null, problem: (error as Error).message })
      }
    }
    return rows
  } finally {
    await store.close()
  }
}

/** Formats rows as the `sessions` table. */
export function sessionsTable(rows: readonly SessionRow[], dim: (s: string) => string = (s) => s): string {
  if (rows.length === 0) return 'no sessions yet (ledgerloop run "…" starts one)\n'
  const lines = rows.map((r) => {
    const when = r.updatedAt.replace('T', ' ').slice(0, 19)
    const size = r.sizeBytes === undefined ? '' : r.sizeBytes < 10_240 ? `${r.sizeBytes} B` : `${Math.round(r.sizeBytes / 1024)} KB`
    const title = r.problem !== undefined ? `(unreadable: ${r.problem})` : r.title === '' ? '(no prompt)' : r.title
    const child = isSubagentSession(r) ? dim(`↳ sub-agent of ${String(r.parentSession).slice(0, 8)} (${r.agentProfile ?? '?'}) `) : ''
    return `${r.id}  ${dim(when)}  ${String(r.turns).padStart(3)} turn${r.turns === 1 ? ' ' : 's'}  ${(r.lastReason ?? '-').padEnd(11)} ${size.padStart(7)}  ${child}${title}`
  })
  return `${lines.join('\n')}\n`
}

/** `ledgerloop sessions [--json] [--roots]`: `--roots` hides sub-agents' sessions. */
export async function sessionsCommand(flags: { json?: boolean; roots?: boolean }): Promise<number> {
  const rows = (await listSessions()).filter((r) => flags.roots !== true || !isSubagentSession(r))
  if (flags.json === true) {
    const links = (r: SessionRow) => (isSubagentSession(r) ? { parentSession: r.parentSession, parentCallId: r.parentCallId, agentProfile: r.agentProfile } : {})
    process.stdout.write(`${JSON.stringify(rows.map((r) => ({ id: r.id, title: r.title, updatedAt: r.updatedAt, turns: r.turns, lastReason: r.lastReason, ...links(r) })), null, 2)}\n`)
  } else {
    process.stdout.write(sessionsTable(rows, styleFor(process.stdout).dim))
  }
  return EXIT.ok
}
