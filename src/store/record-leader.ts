// The leading envelope of a stored record line, read without parsing the line: what the stores' fast forks
// (SessionStore.copyPrefix) locate a fork point by. JSON.stringify writes a logged event `type` first, then
// `seq` (the key order every event is built in), and a packed chunk run `type` (its tag), then `seq0`.

/** What a stored record line starts with. */
export interface RecordLeader {
  /** The event's type, or the packed run's tag. */
  readonly type: string
  /** The event's seq, or the run's first seq. */
  readonly seq: number
  /** Whether the line is a packed chunk run (its length is known only from the next record's first seq). */
  readonly run: boolean
}

// A type with an escape in it is not matched: the line is then not located (declined), never guessed at.
const LEADER = /^\{"type":"([^"\\]*)","(seq0?)":(0|[1-9][0-9]{0,14})[,}]/
const RUN_TAGS: ReadonlySet<string> = new Set(['text-chunks', 'reasoning-chunks', 'tool-call-chunks'])
/** How much of a line's start {@link readLeader} needs at most (a type longer than this is not matched). */
export const LEADER_CHARS = 256

/**
 * The leader of a stored record line (its first {@link LEADER_CHARS} characters suffice), or undefined when
 * the line does not start the way this build writes records (then locate nothing by it). A packed-run key on
 * a type that is not a run tag, or the reverse, is undefined too.
 */
export function readLeader(start: string): RecordLeader | undefined {
  const match = LEADER.exec(start)
  if (match === null) return undefined
  const type = match[1] as string
  const run = match[2] === 'seq0'
  if (run !== RUN_TAGS.has(type)) return undefined
  return { type, seq: Number(match[3]), run }
}
