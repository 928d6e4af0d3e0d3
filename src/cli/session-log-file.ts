import { readFileSync } from 'node:fs'
import { decodeRecord } from '../store/chunk-runs.js'
import { parseHeaderRecord } from '../store/session-file.js'
import type { SessionEvent } from '../session/events.js'
import type { SessionHeader } from '../session/session.js'

/** A session file read without the store's strictness: every readable event, and what was unreadable. */
export interface LenientLog {
  readonly path: string
  readonly header: SessionHeader | undefined
  readonly events: SessionEvent[]
  /** Lines that could not be read, each naming its line (and seq where known). */
  readonly problems: string[]
}

/**
 * Reads a JSONL session file line by line, keeping going past bad lines, so `verify` can list every problem
 * of a hand-edited or damaged file instead of stopping at the first (which is what the store must do).
 */
export function readLenientLog(path: string): LenientLog {
  const text = readFileSync(path, 'utf8')
  const lines = text.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  const problems: string[] = []
  let header: SessionHeader | undefined
  try {
    header = parseHeaderRecord(lines[0] ?? '', undefined, `${path}:1`)
  } catch (error) {
    problems.push((error as Error).message)
  }
  const events: SessionEvent[] = []
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string
    if (line.trim() === '') continue
    try {
      events.push(...decodeRecord(JSON.parse(line)))
    } catch (error) {
      problems.push(`${path}:${i + 1}: ${(error as Error).message} (the record after seq ${events.length > 0 ? String((events[events.length - 1] as SessionEvent).seq) : 'none'})`)
    }
  }
  return { path, header, events, problems }
}

/** Where the seqs of a log stop being 0, 1, 2, …: one problem per gap or repeat, naming the seqs. */
export function seqProblems(events: readonly SessionEvent[]): string[] {
  const problems: string[] = []
  let expected = 0
  for (const event of events) {
    if (event.seq > expected) {
      const missing = event.seq - expected === 1 ? `seq ${expected} is` : `seqs ${expected}..${event.seq - 1} are`
      problems.push(`${missing} missing: the event after seq ${expected - 1} has seq ${event.seq} (an event was removed)`)
    } else if (event.seq < expected) {
      problems.push(`seq ${event.seq} (${event.type}) appears again after seq ${expected - 1}`)
    }
    expected = Math.max(expected, event.seq + 1)
  }
  return problems
}
