// The ACP session commands: `/undo` and `/rewind N`, advertised to the client with an
// `available_commands_update` and run instead of a model turn when a prompt's text is one of them. They are
// chat's `/undo` over ACP: the restore is the harness's `rewind`, and the session goes on in the fork (see
// AcpSession#rewind for how the client's session id keeps working).
import type { AvailableCommand, ContentBlock as AcpContentBlock } from '@agentclientprotocol/sdk'
import type { RewindResult } from '../harness/harness.js'
import type { SessionEvent } from '../session/events.js'

/** The commands every session offers (names without the slash, as ACP wants them). */
export const SESSION_COMMANDS: readonly AvailableCommand[] = [
  {
    name: 'undo',
    description: 'Undo the last turn: put back the files it changed and continue the conversation from before it',
    input: { hint: 'optional: --force to restore files changed outside the agent too' },
  },
  {
    name: 'rewind',
    description: 'Rewind to turn N: files back to their state after turn N, the conversation continued from there',
    input: { hint: 'N (the last turn to keep; 0: before the first), then optionally --force' },
  },
]

/** A prompt that is a session command: what to rewind to, or why it cannot be run. */
export type SessionCommand =
  | { readonly kind: 'undo'; readonly force: boolean }
  | { readonly kind: 'rewind'; readonly toTurn: number; readonly force: boolean }
  | { readonly kind: 'unusable'; readonly message: string }

const COMMAND_LINE = /^\/(undo|rewind)(?:\s+(.*))?$/s

/**
 * The session command a prompt is, if it is one: its text blocks, joined and trimmed, must start with
 * `/undo` or `/rewind`. Anything else (another slash word included) is a prompt for the model.
 */
export function parseSessionCommand(blocks: readonly AcpContentBlock[]): SessionCommand | undefined {
  if (blocks.length === 0 || blocks.some((block) => block.type !== 'text')) return undefined
  const text = blocks.map((block) => (block.type === 'text' ? block.text : '')).join('').trim()
  const match = COMMAND_LINE.exec(text)
  if (match === null) return undefined
  const name = match[1] as 'undo' | 'rewind'
  const words = (match[2] ?? '').split(/\s+/).filter((word) => word !== '')
  const force = words.includes('--force')
  const rest = words.filter((word) => word !== '--force')
  if (name === 'undo') {
    return rest.length === 0 ? { kind: 'undo', force } : { kind: 'unusable', message: `/undo takes no argument but --force (got ${JSON.stringify(rest.join(' '))})` }
  }
  const [turn, ...extra] = rest
  if (turn === undefined || !/^\d+$/.test(turn) || extra.length > 0) {
    return { kind: 'unusable', message: `usage: /rewind N [--force], N the last turn to keep (a whole number, 0 for before the first turn)${turn === undefined ? '' : `; got ${JSON.stringify(rest.join(' '))}`}` }
  }
  return { kind: 'rewind', toTurn: Number(turn), force }
}

/** The number of the last turn that ended in `events` (0: none did). */
export function lastEndedTurn(events: readonly SessionEvent[]): number {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type === 'turn/end') return (event.data as { turn: number }).turn
  }
  return 0
}

/**
 * The agent message answering a rewind: which turn the session is back at, then each path restored, deleted
 * or left as a conflict, and where the conversation goes on (`continuedIn`, the session after `from`).
 */
export function describeSessionRewind(from: string, toTurn: number, result: RewindResult, continuedIn: string): string {
  const lines = [toTurn === 0 ? 'Rewound to before the first turn.' : `Rewound to the end of turn ${toTurn}.`]
  if (result.restored.length > 0) lines.push(`Restored: ${result.restored.join(', ')}`)
  if (result.deleted.length > 0) lines.push(`Deleted: ${result.deleted.join(', ')}`)
  for (const { path, reason } of result.conflicts) lines.push(`Conflict, left as it is: ${path} (${reason})`)
  if (result.restored.length + result.deleted.length + result.conflicts.length === 0) lines.push('No file needed restoring.')
  if (result.conflicts.length > 0) lines.push(`To restore the conflicting paths too, run /rewind ${toTurn} --force next: it redoes this rewind with force.`)
  lines.push(toTurn === 0 ? `The conversation starts afresh (ledgerloop session ${continuedIn}).` : `The conversation continues from there (ledgerloop session ${continuedIn}, forked from ${from}).`)
  return lines.join('\n')
}
