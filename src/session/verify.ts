import { BlockAssembler } from '../llm/block-assembler.js'
import type { StreamChunk } from '../llm/types.js'
import type { SessionEvent } from './events.js'
import { LogGrammar } from './log-grammar.js'
import { canonicalHeader } from './request-header.js'
import { Surface } from './surface.js'

/** Result of {@link verifySessionLog}. */
export interface VerifyResult {
  /** True when no problem was found. */
  readonly ok: boolean
  /** Each problem, naming the seq it concerns. */
  readonly problems: string[]
}

/**
 * Verifies a stored log: seq contiguity, the log grammar (turns/steps/tool calls balanced and in order), the
 * surface and provenance rules, canonical request headers, and that every `assistant/message` equals what its
 * cited chunks assemble into (so the history the model saw is the stream it sent). Never throws.
 * @param options.allowOpenTurn - accept a log that ends inside a turn (a live session)
 */
export function verifySessionLog(events: readonly SessionEvent[], options: { allowOpenTurn?: boolean } = {}): VerifyResult {
  const problems: string[] = []
  const grammar = new LogGrammar()
  const surface = new Surface()
  const byStep = new Map<number, string>()
  for (let i = 0; i < events.length; i++) {
    const e = events[i] as SessionEvent
    if (e.seq !== i) {
      problems.push(`seq ${String(e.seq)} at index ${i}: seq must equal the index`)
      break
    }
    const g = grammar.check(e)
    if (g !== undefined) problems.push(g)
    try {
      surface.validateNext(e, events)
      surface.apply(e)
    } catch (error) {
      problems.push((error as Error).message)
      surface.apply({ ...e, surfaceOp: undefined } as SessionEvent)
    }
    // Stored logs may be damaged: never assume the data has the shape its type promises.
    const d = (typeof e.data === 'object' && e.data !== null ? e.data : {}) as Record<string, unknown>
    if (e.type === 'assistant/chunk' || e.type === 'step/start') byStep.set(e.seq, `${String(d.turn)}/${String(d.step)}`)
    if (e.type === 'request/header') {
      const header = (d as { header?: Parameters<typeof canonicalHeader>[0] }).header
      if (header === undefined || typeof header.config?.provider !== 'string' || header.config.provider === '' || typeof header.config.model !== 'string' || header.config.model === '') {
        problems.push(`seq ${e.seq} (request/header): needs a provider and a model`)
      } else if (JSON.stringify(canonicalHeader(header)) !== JSON.stringify(header)) {
        problems.push(`seq ${e.seq} (request/header): header is not in canonical form`)
      }
    }
    if (e.type === 'assistant/message') {
      try {
        problems.push(...checkAnchor(e, events, byStep))
      } catch (error) {
        problems.push(`seq ${e.seq} (assistant/message): could not be checked: ${(error as Error).message}`)
      }
    }
  }
  const end = grammar.end(options)
  if (end !== undefined) problems.push(end)
  return { ok: problems.length === 0, problems }
}

function checkAnchor(anchor: SessionEvent, events: readonly SessionEvent[], byStep: Map<number, string>): string[] {
  const d = anchor.data as { turn: number; step: number; message: { content: unknown[] }; interrupted?: true } | null
  if (typeof d !== 'object' || d === null || typeof d.message !== 'object' || d.message === null || !Array.isArray(d.message.content)) {
    return [`seq ${anchor.seq} (assistant/message): has no message content`]
  }
  const cited = anchor.sourceEventSeqs ?? []
  const assembler = new BlockAssembler()
  for (const seq of cited) {
    const chunk = events[seq]
    if (chunk?.type !== 'assistant/chunk') return [`seq ${anchor.seq} (assistant/message): cites seq ${seq}, which is not an assistant/chunk`]
    if (byStep.get(seq) !== `${d.turn}/${d.step}`) return [`seq ${anchor.seq} (assistant/message): cites chunk ${seq} of another step`]
    assembler.push((chunk.data as { chunk: StreamChunk }).chunk)
  }
  let expected: unknown[]
  try {
    expected = d.interrupted === true ? assembler.interruptedBlocks() : assembler.blocks()
  } catch (error) {
    return [`seq ${anchor.seq} (assistant/message): its chunks do not assemble: ${(error as Error).message}`]
  }
  if (JSON.stringify(expected) !== JSON.stringify(d.message.content)) {
    return [`seq ${anchor.seq} (assistant/message): content differs from what its ${cited.length} cited chunks assemble into`]
  }
  return []
}
