import { createUserMessage } from '../llm/messages.js'
import type { UserMessage } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import type { Session } from '../session/session.js'

/** The plugin name on runtime-context snapshot messages. */
export const RUNTIME_CONTEXT_PLUGIN = 'ledgerloop/runtime-context'

/** Text of the marker that tells the model there is no runtime context any more. */
export const NO_RUNTIME_CONTEXT = 'Runtime context: none any more (earlier runtime context no longer applies).'

const USER_MESSAGE: ReadonlySet<string> = new Set(['user/message'])

type Retained = undefined | null | { readonly seq: number; readonly text: string | undefined }

/**
 * Membership in the surface's nodes for the constructor's search, which usually asks once or twice (the newest
 * snapshot is a node): the first lookups scan from the end, where a recent snapshot sits, and only a search that
 * asks more often builds a set. A set of every node up front cost about 10 ms of a resume at 62,600 messages.
 */
function surfaceMembership(nodes: readonly number[]): (seq: number) => boolean {
  let scans = 0
  let set: ReadonlySet<number> | undefined
  return (seq) => {
    if (set === undefined && ++scans <= 8) return nodes.lastIndexOf(seq) >= 0
    set ??= new Set(nodes)
    return set.has(seq)
  }
}

/**
 * Decides when a runtime-context snapshot message enters the log (seed §4, LOOP-RUNTIME-CONTEXT): only when the rendered
 * text differs from the last snapshot still in history, and once as a "none any more" marker when it becomes
 * empty. It never appends itself: state moves only when a snapshot actually lands, so a rejected step does
 * not advance it.
 */
export class RuntimeContextProjection {
  /** `undefined`: never existed; `null`: existed, none retained now; else the retained snapshot. */
  #retained: Retained

  /** Restores the state from the log: the newest owned snapshot that is still a surface node. */
  constructor(session: Session) {
    const isNode = surfaceMembership(session.surfaceNodes())
    // Only user messages can be snapshots: the search skips compact chunk runs without materialising them. In a
    // log resumed from a checkpoint, the unread prefix's plugin messages (kept by the checkpoint) stand for it.
    const prefix = session.log.lazyPrefix
    const floor = prefix?.length ?? 0
    const older = prefix?.pluginMessages(RUNTIME_CONTEXT_PLUGIN) ?? []
    let k = 0
    const next = (seq: number): number => (seq >= floor ? session.log.lastOfTypes(USER_MESSAGE, floor, seq) : -1)
    for (let seq = session.log.lastOfTypes(USER_MESSAGE, floor); ; seq = next(seq)) {
      if (seq < 0) seq = older[k++] ?? -1
      if (seq < 0) break
      const event = session.at(seq) as SessionEvent
      if (!isSnapshot(event)) continue
      this.#retained ??= null
      if (isNode(seq)) {
        this.#retained = { seq, text: textOf(event) }
        break
      }
    }
  }

  /** Follows the log: a landed snapshot becomes retained; a replace that shadows it resets to `null`. */
  observe(event: SessionEvent): void {
    if (isSnapshot(event)) {
      this.#retained = { seq: event.seq, text: textOf(event) }
      return
    }
    const r = this.#retained
    if (r !== undefined && r !== null && typeof event.surfaceOp === 'object' && event.sourceEventSeqs?.includes(r.seq) === true) this.#retained = null
  }

  /** The snapshot message to add to this step's input, or `undefined` when nothing changed. */
  project(current: string, sections: readonly { readonly name: string; readonly text: string }[]): UserMessage | undefined {
    if (this.#retained === undefined && current === '') return undefined
    const candidate = current === '' ? NO_RUNTIME_CONTEXT : current
    if (this.#retained !== undefined && this.#retained !== null && this.#retained.text === candidate) return undefined
    return createUserMessage(candidate, {
      kind: 'plugin',
      plugin: RUNTIME_CONTEXT_PLUGIN,
      form: 'snapshot',
      sections: sections.map((s) => ({ name: s.name, text: s.text })),
    })
  }
}

function isSnapshot(event: SessionEvent): boolean {
  if (event.type !== 'user/message') return false
  const source = (event.data as { source?: { kind?: string; plugin?: string } }).source
  return source?.kind === 'plugin' && source.plugin === RUNTIME_CONTEXT_PLUGIN
}

function textOf(event: SessionEvent): string | undefined {
  const content = (event.data as { content?: { type: string; text?: string }[] }).content ?? []
  return content.length === 1 && content[0]?.type === 'text' ? content[0].text : undefined
}
