import { BlockAssembler } from '../llm/block-assembler.js'
import type { StreamChunk } from '../llm/types.js'
import type { EventRecord, SessionEvent } from './events.js'
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
export function verifySessionLog(records: readonly EventRecord[], options: { allowOpenTurn?: boolean } = {}): VerifyResult {
  // Checked one by one below: read as the typed union they claim to be.
  const events = records as readonly SessionEvent[]
  const problems: string[] = []
  const grammar = new LogGrammar()
  const surface = new Surface()
  const faithfulness = new Faithfulness(true)
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
    problems.push(...faithfulness.check(e, events))
  }
  const end = grammar.end(options)
  if (end !== undefined) problems.push(end)
  return { ok: problems.length === 0, problems }
}

/**
 * The checks of {@link verifySessionLog} that go beyond the structure a store judges on load (grammar,
 * surface, citations): request headers in canonical form with a provider and a model, and every
 * `assistant/message` equal to what the chunks it cites assemble into. They need every chunk's content, so
 * loading does not run them; `verify` does, after the store's own judgement. A message whose citations are
 * wrong is left to that judgement (it names them). `events` must be a log without seq gaps.
 */
export function faithfulnessProblems(events: readonly SessionEvent[]): string[] {
  const faithfulness = new Faithfulness(false)
  const problems: string[] = []
  for (const e of events) problems.push(...faithfulness.check(e, events))
  return problems
}

/** Header and anchor checks, event by event. */
class Faithfulness {
  readonly #byStep = new Map<number, string>()
  readonly #citations: boolean

  /** @param citations - also name wrong citations (else a message citing wrongly is skipped) */
  constructor(citations: boolean) {
    this.#citations = citations
  }

  check(e: SessionEvent, events: readonly SessionEvent[]): string[] {
    // Stored logs may be damaged: never assume the data has the shape its type promises.
    const d = (typeof e.data === 'object' && e.data !== null ? e.data : {}) as Record<string, unknown>
    if (e.type === 'assistant/chunk' || e.type === 'step/start') this.#byStep.set(e.seq, `${String(d.turn)}/${String(d.step)}`)
    if (e.type === 'request/header') {
      const header = (d as { header?: Parameters<typeof canonicalHeader>[0] }).header
      if (header === undefined || typeof header.config?.provider !== 'string' || header.config.provider === '' || typeof header.config.model !== 'string' || header.config.model === '') {
        return [`seq ${e.seq} (request/header): needs a provider and a model`]
      }
      if (JSON.stringify(canonicalHeader(header)) !== JSON.stringify(header)) return [`seq ${e.seq} (request/header): header is not in canonical form`]
    }
    if (e.type === 'assistant/message') {
      try {
        const problems = checkAnchor(e, events, this.#byStep)
        return this.#citations || !problems.citations ? problems.list : []
      } catch (error) {
        return [`seq ${e.seq} (assistant/message): could not be checked: ${(error as Error).message}`]
      }
    }
    return []
  }
}

// `citations`: the problem is with what the message cites (then nothing else was checked).
function checkAnchor(anchor: SessionEvent, events: readonly SessionEvent[], byStep: Map<number, string>): { list: string[]; citations: boolean } {
  const cite = (problem: string): { list: string[]; citations: boolean } => ({ list: [problem], citations: true })
  const other = (list: string[]): { list: string[]; citations: boolean } => ({ list, citations: false })
  const d = anchor.data as { turn: number; step: number; message: { content: unknown[]; source?: { replayState?: unknown } }; usage?: unknown; interrupted?: true } | null
  if (typeof d !== 'object' || d === null || typeof d.message !== 'object' || d.message === null || !Array.isArray(d.message.content)) {
    return other([`seq ${anchor.seq} (assistant/message): has no message content`])
  }
  const cited = anchor.sourceEventSeqs ?? []
  const assembler = new BlockAssembler()
  const deltas = new DeltaTrail()
  const problems: string[] = []
  for (const seq of cited) {
    const chunk = events[seq]
    if (chunk?.type !== 'assistant/chunk') return cite(`seq ${anchor.seq} (assistant/message): cites seq ${seq}, which is not an assistant/chunk`)
    if (byStep.get(seq) !== `${d.turn}/${d.step}`) return cite(`seq ${anchor.seq} (assistant/message): cites chunk ${seq} of another step`)
    const streamed = (chunk.data as { chunk?: StreamChunk } | null)?.chunk
    if (typeof streamed !== 'object' || streamed === null) return other([`seq ${anchor.seq} (assistant/message): could not be checked: cited seq ${seq} holds no chunk`])
    const mismatch = deltas.push(streamed)
    if (mismatch !== undefined) problems.push(`seq ${seq} (assistant/chunk): ${mismatch}`)
    assembler.push(streamed)
  }
  let expected: unknown[]
  try {
    expected = d.interrupted === true ? assembler.interruptedBlocks() : assembler.blocks()
  } catch (error) {
    return other([`seq ${anchor.seq} (assistant/message): its chunks do not assemble: ${(error as Error).message}`])
  }
  if (JSON.stringify(expected) !== JSON.stringify(d.message.content)) {
    problems.push(`seq ${anchor.seq} (assistant/message): content differs from what its ${cited.length} cited chunks assemble into`)
  }
  if (JSON.stringify(assembler.usage) !== JSON.stringify(d.usage)) {
    problems.push(`seq ${anchor.seq} (assistant/message): usage differs from the usage chunk it cites`)
  }
  if (d.interrupted !== true && JSON.stringify(assembler.replayState()) !== JSON.stringify(d.message.source?.replayState)) {
    problems.push(`seq ${anchor.seq} (assistant/message): replay state differs from the finish chunk it cites`)
  }
  return other(problems)
}

/**
 * What each block's deltas built, checked against its `block-end`: the assembler trusts a block-end over the
 * deltas (adapters rebuild it from them), so an edited delta or an edited block-end would otherwise go unseen.
 */
class DeltaTrail {
  readonly #built = new Map<number, { text: string; id: string | undefined; name: string | undefined; args: string }>()

  /** Applies one chunk; returns how a block-end disagrees with its deltas, if it does. */
  push(chunk: StreamChunk): string | undefined {
    switch (chunk.type) {
      case 'text-delta':
      case 'reasoning-delta':
        this.#at(chunk.index).text += chunk.text
        return undefined
      case 'tool-call-delta': {
        const b = this.#at(chunk.index)
        if (chunk.id !== '') b.id = chunk.id
        if (chunk.name !== undefined && chunk.name !== '') b.name ??= chunk.name
        b.args += chunk.argumentsDelta
        return undefined
      }
      case 'block-end': {
        // A block streamed without deltas has only its block-end to go by.
        const b = this.#built.get(chunk.index)
        if (b === undefined) return undefined
        const block = chunk.block as { type: string; text?: unknown; id?: unknown; name?: unknown; arguments?: unknown }
        if ((block.type === 'text' || block.type === 'reasoning') && block.text !== b.text) return `block ${chunk.index} ends with text that differs from its deltas`
        if (block.type === 'tool-call') {
          if (block.arguments !== b.args) return `tool call block ${chunk.index} ends with arguments that differ from its deltas`
          if (b.id !== undefined && block.id !== b.id) return `tool call block ${chunk.index} ends with id ${JSON.stringify(block.id)}, its deltas say ${JSON.stringify(b.id)}`
          if (b.name !== undefined && block.name !== b.name) return `tool call block ${chunk.index} ends with name ${JSON.stringify(block.name)}, its deltas say ${JSON.stringify(b.name)}`
        }
        return undefined
      }
      default:
        return undefined
    }
  }

  #at(index: number): { text: string; id: string | undefined; name: string | undefined; args: string } {
    let b = this.#built.get(index)
    if (b === undefined) {
      b = { text: '', id: undefined, name: undefined, args: '' }
      this.#built.set(index, b)
    }
    return b
  }
}
