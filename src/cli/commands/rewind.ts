import type { Command } from 'commander'
import { rewindStoredSession } from '../../app/rewind.js'
import { UsageError } from '../../app/usage-error.js'
import type { Harness, RewindResult } from '../../harness/harness.js'
import type { Agent, AgentOptions } from '../../loop/agent.js'
import type { SessionEvent } from '../../session/events.js'
import { EXIT } from '../cli-error.js'
import { openForReading } from '../read-only-store.js'
import { addStoreOption, nonNegativeInteger } from './agent-options.js'

/** Flags of `ledgerloop rewind`. */
export interface RewindFlags {
  readonly toTurn: number
  readonly filesOnly?: boolean
  readonly conversationOnly?: boolean
  readonly force?: boolean
  readonly json?: boolean
  readonly store?: string
}

/**
 * `ledgerloop rewind ID --to-turn N`: restores the files, forks the conversation, prints what it did (the
 * session to continue first). Exit 0 when nothing was left, 1 when some paths were conflicts (left as they are).
 */
export async function rewindCommand(ref: string, flags: RewindFlags): Promise<number> {
  if (flags.filesOnly === true && flags.conversationOnly === true) throw new UsageError('--files-only and --conversation-only exclude each other')
  const { spec, store, id } = await openForReading(flags.store, ref)
  const result = await rewindStoredSession(spec, store, id, {
    toTurn: flags.toTurn,
    files: flags.conversationOnly !== true,
    conversation: flags.filesOnly !== true,
    force: flags.force === true,
  })
  if (flags.json === true) process.stdout.write(`${JSON.stringify(result)}\n`)
  else process.stdout.write(describeRewind(id, result))
  return result.conflicts.length > 0 ? EXIT.failed : EXIT.ok
}

/** The human report of a rewind: the session to continue, then each path and what happened to it. */
export function describeRewind(from: string, result: RewindResult): string {
  const lines = [result.sessionId === from ? `session ${from} (files only)` : `continue in session ${result.sessionId} (forked from ${from})`]
  for (const path of result.restored) lines.push(`  restored  ${path}`)
  for (const path of result.deleted) lines.push(`  deleted   ${path}`)
  for (const { path, reason } of result.conflicts) lines.push(`  conflict  ${path}: ${reason}`)
  if (result.restored.length + result.deleted.length + result.conflicts.length === 0) lines.push('  no file needed restoring')
  if (result.conflicts.length > 0) lines.push('conflicting paths were left as they are; run again with --force to restore them too')
  return `${lines.join('\n')}\n`
}

/** Registers `rewind`. */
export function registerRewind(program: Command, exit: { code: number }): void {
  addStoreOption(program.command('rewind').description('restore the workspace files to an earlier turn and continue from a fork there'))
    .argument('<id>', 'session id (a unique prefix is enough)')
    .requiredOption('--to-turn <n>', 'the last turn to keep: files go back to their state before turn n+1', nonNegativeInteger)
    .option('--files-only', 'restore the files, keep the conversation (no fork)')
    .option('--conversation-only', 'fork the conversation, leave the files')
    .option('--force', 'also restore paths changed outside the agent')
    .option('--json', 'the result as JSON: {sessionId, restored, deleted, conflicts}')
    .action(async (id: string, flags: RewindFlags) => {
      exit.code = await rewindCommand(id, flags)
    })
}

/** The last `/undo` of a chat, remembered so `/undo --force` right after one that left conflicts can redo it. */
export interface ChatUndoRecord {
  /** The session that was rewound. */
  readonly from: string
  readonly toTurn: number
  /** The session the chat went on in (undefined: the next message starts a new one). */
  readonly landedIn: string | undefined
  /** Whether it left paths as conflicts. */
  readonly conflicts: boolean
}

/** What `/undo` in chat did: the agent to go on with (undefined: the next message starts a new session) and what to say. */
export interface ChatUndo {
  readonly agent: Agent | undefined
  readonly notice: string
  /** The undo that ran, for a later `/undo --force` (undefined: nothing was rewound). */
  readonly record?: ChatUndoRecord
}

/** Options of {@link undoInChat}. */
export interface ChatUndoOptions {
  /** `/undo --force`: restore paths changed outside the agent too. */
  readonly force?: boolean
  /** The chat's last undo: when it left conflicts and the chat is still where it landed, `force` redoes it. */
  readonly previous?: ChatUndoRecord
}

/** The words after `/undo`: none or `--force`; anything else is a usage message. */
export function parseUndoArgument(arg: string): { readonly force: boolean } | { readonly usage: string } {
  const words = arg.split(/\s+/).filter((word) => word !== '')
  if (words.length === 0) return { force: false }
  if (words.length === 1 && words[0] === '--force') return { force: true }
  return { usage: `usage: /undo [--force] (got ${JSON.stringify(arg)})` }
}

/**
 * `/undo` in chat: rewinds the live, idle `agent`'s last ended turn — its file changes and the conversation —
 * and continues in the fork (resumed with `resume`). Undoing the only turn restores the files and leaves the
 * next message to start a new session, as a conversation forked before its first turn would be empty. With
 * `force`, paths changed outside the agent are restored too; and right after an undo that left such conflicts
 * (nothing sent since), `/undo --force` redoes that same undo with force instead of undoing one more turn.
 */
export async function undoInChat(harness: Harness, agent: Agent | undefined, resume: Partial<AgentOptions>, options: ChatUndoOptions = {}): Promise<ChatUndo> {
  const force = options.force === true
  const previous = options.previous
  const redo = force && previous !== undefined && previous.conflicts && previous.landedIn === agent?.id && (agent === undefined ? true : lastEndedTurn(agent.session.events) === previous.toTurn)
  const from = redo ? previous.from : agent?.id
  const last = redo ? previous.toTurn + 1 : agent === undefined ? undefined : lastEndedTurn(agent.session.events)
  if (from === undefined || last === undefined) return { agent, notice: 'nothing to undo yet' }
  const toTurn = last - 1
  let result: RewindResult
  try {
    result = await harness.rewind(from, toTurn === 0 ? { toTurn: 0, conversation: false, force } : { toTurn, force })
  } catch (error) {
    // Nothing was disposed: the chat goes on in the same session.
    return { agent, notice: `could not undo: ${error instanceof Error ? error.message : String(error)}` }
  }
  await agent?.dispose()
  const what = `${redo ? `redid the undo of turn ${last} with --force` : `undid turn ${last}`}: ${describeUndo(from, result)}`
  if (toTurn === 0) {
    return { agent: undefined, notice: `${what}\nthe next message starts a new session`, record: { from, toTurn, landedIn: undefined, conflicts: result.conflicts.length > 0 } }
  }
  const fork = await harness.resumeAgent(result.sessionId, resume)
  return { agent: fork, notice: what, record: { from, toTurn, landedIn: fork.id, conflicts: result.conflicts.length > 0 } }
}

// describeRewind's report, with chat's own way to force (the CLI's hint names --force on `ledgerloop rewind`).
function describeUndo(from: string, result: RewindResult): string {
  const text = describeRewind(from, result).trimEnd()
  return result.conflicts.length > 0 ? text.replace(/run again with --force to restore them too$/, 'type /undo --force to redo this undo restoring them too') : text
}
function lastEndedTurn(events: readonly SessionEvent[]): number | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i] as SessionEvent
    if (event.type === 'turn/end') return (event.data as { turn: number }).turn
  }
  return undefined
}
