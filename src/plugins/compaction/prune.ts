import type { ContentBlock, Message, ToolResultBlock } from '../../llm/types.js'
import type { SessionEvent } from '../../session/events.js'
import type { Session } from '../../session/session.js'
import { estimateMessageTokens } from './plan.js'

/** Data of the `compaction/prune` event, logged right before the `tool/result` rewrites it announces. */
export interface CompactionPruneData {
  readonly turn: number
  /** Seqs of the tool results whose bodies are replaced by a note. */
  readonly prunedSeqs: readonly number[]
  /** Characters of tool output taken out of the history. */
  readonly prunedChars: number
  /** Estimated tokens saved. */
  readonly savedTokens: number
}

/** Marker text of a pruned tool result (a prefix of the note; the note also says how much was cut). */
export const PRUNED_NOTE_PREFIX = '[tool output pruned by compaction:'

/**
 * The cheap first stage: in the older part of the history (surface nodes before `tailIndex`), every tool result
 * whose text is longer than `overChars` gets its body replaced by a one-line note. Each rewrite is a
 * content-only `tool/result` replace of exactly that node, citing the `compaction/prune` event and the original,
 * so the call/result pairing and every other field stay as they were. Needs an open turn (the log grammar allows
 * result rewrites only inside one). Returns the estimated tokens saved (0 when nothing was over the size).
 */
export function pruneOldToolResults(session: Session, turn: number, tailIndex: number, overChars: number): number {
  const nodes = session.surfaceNodes().slice(0, tailIndex)
  const targets: { seq: number; event: SessionEvent; chars: number }[] = []
  for (const seq of nodes) {
    const event = session.at(seq) as SessionEvent
    if (event.type !== 'tool/result') continue
    const chars = textLength(resultBlockOf(event).content)
    if (chars > overChars) targets.push({ seq, event, chars })
  }
  if (targets.length === 0) return 0
  let savedTokens = 0
  const rewritten = targets.map((t) => {
    const data = t.event.data as unknown as { message: Message }
    const block = resultBlockOf(t.event)
    const note: ContentBlock = { type: 'text', text: `${PRUNED_NOTE_PREFIX} ${t.chars} characters; run the tool again if you need them]` }
    const message = { ...data.message, content: [{ ...block, content: [note] }] }
    savedTokens += estimateMessageTokens(data.message) - estimateMessageTokens(message as Message)
    return { seq: t.seq, data: { ...(t.event.data as object), message } }
  })
  const prunedChars = targets.reduce((sum, t) => sum + t.chars, 0)
  const announce: CompactionPruneData = { turn, prunedSeqs: targets.map((t) => t.seq), prunedChars, savedTokens }
  const pruneSeq = session.append('compaction/prune', announce).seq
  for (const r of rewritten) {
    session.append('tool/result', r.data, { surfaceOp: { op: 'replace', start: r.seq, end: r.seq }, sourceEventSeqs: [pruneSeq, r.seq] })
  }
  return savedTokens
}

function resultBlockOf(event: SessionEvent): ToolResultBlock {
  return (event.data as unknown as { message: { content: readonly [ToolResultBlock] } }).message.content[0]
}

function textLength(blocks: readonly ContentBlock[]): number {
  let n = 0
  for (const b of blocks) {
    if (b.type === 'text') n += b.text.length
    else if (b.type === 'tool-result') n += textLength(b.content)
  }
  return n
}
