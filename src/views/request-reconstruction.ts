import type { ContentBlock, Message } from '../llm/types.js'
import type { SessionEvent } from '../session/events.js'
import { foldSession } from '../session/fold.js'
import { canonicalHeader } from '../session/request-header.js'
import { Session } from '../session/session.js'

/** One model request as the log shows it: the run of chunks it streamed. */
export interface LoggedRequest {
  readonly turn: number
  readonly step: number
  /** Seq of the first chunk (the request was built from the events before it). */
  readonly firstSeq: number
  readonly lastSeq: number
  /** The finish chunk's kind, when the run has one (`stop`, `tool-calls`, `max-tokens`, `error`, `aborted`). */
  readonly finish: string | undefined
}

/**
 * The requests of a log: each run of consecutive `assistant/chunk` events of one step, split after a `finish`
 * chunk. (A request that streamed nothing before it failed or was cancelled leaves no chunk and no trace.)
 */
export function loggedRequests(events: readonly SessionEvent[]): LoggedRequest[] {
  const requests: LoggedRequest[] = []
  let open: { turn: number; step: number; firstSeq: number; lastSeq: number; finish: string | undefined } | undefined
  const close = (): void => {
    if (open !== undefined) requests.push(open)
    open = undefined
  }
  for (const e of events) {
    if (e.type !== 'assistant/chunk') {
      close()
      continue
    }
    const d = e.data as { turn: number; step: number; chunk: { type: string; reason?: { kind: string } } }
    if (open === undefined || open.turn !== d.turn || open.step !== d.step) {
      close()
      open = { turn: d.turn, step: d.step, firstSeq: e.seq, lastSeq: e.seq, finish: undefined }
    }
    open.lastSeq = e.seq
    if (d.chunk.type === 'finish') {
      open.finish = d.chunk.reason?.kind
      close()
    }
  }
  close()
  return requests
}

/**
 * Rebuilds every logged request from the log prefix before it and checks that what it would have been is
 * consistent: a step is open, a canonical header and a matching `request/context` precede it, the incremental
 * fold of a fresh Session equals the full fold, the history ends with the user's side, every tool call in it has
 * exactly one result, and the reply is attributed to the header's provider and model. Needs contiguous seqs.
 */
export function reconstructionProblems(events: readonly SessionEvent[]): string[] {
  const problems: string[] = []
  for (const request of loggedRequests(events)) {
    const at = `seq ${request.firstSeq} (request of turn ${request.turn} step ${request.step})`
    const prefix = events.slice(0, request.firstSeq)
    const { messages, header } = foldSession(prefix)
    if (header === undefined) {
      problems.push(`${at}: no request/header before it`)
      continue
    }
    if (JSON.stringify(canonicalHeader(header)) !== JSON.stringify(header)) problems.push(`${at}: the header it was built from is not canonical`)
    const context = lastOfType(prefix, 'request/context')?.data as { provider?: string; model?: string } | undefined
    if (context === undefined) problems.push(`${at}: no request/context before it`)
    else if (context.provider !== header.config.provider || context.model !== header.config.model) {
      problems.push(`${at}: request/context names ${String(context.provider)}/${String(context.model)} but the header ${header.config.provider}/${header.config.model}`)
    }
    let fresh: Message[]
    try {
      fresh = new Session({ seed: prefix }).deriveMessages()
    } catch (error) {
      problems.push(`${at}: the log before it does not load: ${(error as Error).message}`)
      continue
    }
    if (JSON.stringify(fresh) !== JSON.stringify(messages)) problems.push(`${at}: the incremental fold and a full fold of the log disagree`)
    problems.push(...historyProblems(messages).map((p) => `${at}: ${p}`))
    const reply = events.find((e) => e.type === 'assistant/message' && (e.sourceEventSeqs ?? []).includes(request.firstSeq))
    const source = (reply?.data as { message?: { source?: { provider?: string; model?: string } } } | undefined)?.message?.source
    if (reply !== undefined && (source?.provider !== header.config.provider || source.model !== header.config.model)) {
      problems.push(`seq ${reply.seq} (assistant/message): attributed to ${String(source?.provider)}/${String(source?.model)}, but its request was for ${header.config.provider}/${header.config.model}`)
    }
  }
  return problems
}

// What every provider requires of a request's history.
function historyProblems(messages: readonly Message[]): string[] {
  const problems: string[] = []
  if (messages.length === 0) return ['the request would have had no messages']
  const last = messages[messages.length - 1] as Message
  if (last.role !== 'user') problems.push('the history ends with an assistant message (nothing for the model to answer)')
  const pending = new Set<string>()
  const unanswered = (): string => [...pending].map((id) => `'${id}'`).join(', ')
  for (const m of messages) {
    if (m.role === 'assistant' && pending.size > 0) {
      problems.push(`tool call(s) ${unanswered()} got no result before the next assistant message`)
      pending.clear()
    }
    for (const block of m.content as readonly ContentBlock[]) {
      if (block.type === 'tool-call') pending.add(block.id)
      if (block.type === 'tool-result' && !pending.delete(block.toolCallId)) problems.push(`a result for tool call '${block.toolCallId}' that is not pending`)
    }
  }
  if (pending.size > 0) problems.push(`tool call(s) ${unanswered()} have no result`)
  return problems
}

function lastOfType(events: readonly SessionEvent[], type: string): SessionEvent | undefined {
  for (let i = events.length - 1; i >= 0; i--) if ((events[i] as SessionEvent).type === type) return events[i]
  return undefined
}
