// The one workload every framework runs, and the counters that prove it ran.
//
// A turn of N steps: steps 1..N-1 each stream K text chunks and then one call
// of the trivial `bump` tool; step N streams K text chunks and stops. Every
// driver's scripted model asks `beginStep()` what to emit, and every driver's
// tool calls `runTool()`, so the counts below are the same code for all.
// This file imports only node builtins: Node 22 runs it with type stripping.
import { getHeapStatistics } from 'node:v8'

/** Text chunks streamed per step. */
export const CHUNKS_PER_STEP = 20

/** The name every driver registers its trivial tool under. */
export const TOOL_NAME = 'bump'
export const TOOL_DESCRIPTION = 'Acknowledge a step number.'
/** The user prompt that starts the turn. */
export const PROMPT = 'Run the benchmark turn.'
/** The one-sentence system prompt every framework gets (ledgerloop included: `createHarness({ system })`). */
export const SYSTEM_PROMPT = 'You are a benchmark agent.'

/** The K chunk texts, shared by every step (no per-step string building). */
export const CHUNK_TEXTS: readonly string[] = Object.freeze(
  Array.from({ length: CHUNKS_PER_STEP }, (_, j) => `word${String(j).padStart(2, '0')} `),
)
/** The whole text a step streams, for frameworks whose final message wants it. */
export const STEP_TEXT = CHUNK_TEXTS.join('')

export interface ToolCallPlan {
  /** Call id, unique within the turn. */
  readonly id: string
  readonly name: string
  /** The arguments as the JSON text a provider would stream. */
  readonly argumentsJson: string
  readonly args: { readonly step: number }
}

export interface StepPlan {
  /** 0-based step index within the turn. */
  readonly index: number
  readonly chunks: readonly string[]
  /** Absent on the final step, which answers with text only. */
  readonly toolCall?: ToolCallPlan
}

export interface WorkloadCounts {
  readonly steps: number
  readonly modelCalls: number
  readonly toolCalls: number
  readonly chunks: number
  readonly finalContextLength: number
}

/** One run's script and its witnesses. Create a fresh one per run. */
export class Workload {
  readonly steps: number
  modelCalls = 0
  toolCalls = 0
  chunks = 0
  /** Message count of the final model request (-1 until the final step). */
  finalContextLength = -1
  /** Highest V8 used-heap size seen at a model call (bytes). */
  peakHeap = 0

  constructor(steps: number) {
    if (!Number.isSafeInteger(steps) || steps < 1) throw new Error(`steps must be >= 1, got ${steps}`)
    this.steps = steps
  }

  /**
   * A scripted model calls this once per model request.
   * @param contextLength - how many messages/items the framework sent in this request.
   */
  beginStep(contextLength: number): StepPlan {
    const index = this.modelCalls++
    const heap = getHeapStatistics().used_heap_size
    if (heap > this.peakHeap) this.peakHeap = heap
    this.chunks += CHUNKS_PER_STEP
    if (index >= this.steps - 1) {
      this.finalContextLength = contextLength
      return { index, chunks: CHUNK_TEXTS }
    }
    const argumentsJson = `{"step":${index + 1}}`
    return {
      index,
      chunks: CHUNK_TEXTS,
      toolCall: { id: `call_${index + 1}`, name: TOOL_NAME, argumentsJson, args: { step: index + 1 } },
    }
  }

  /** The trivial tool body every driver registers. */
  runTool(args: unknown): string {
    this.toolCalls++
    const step = (args as { step?: unknown } | null)?.step
    return `ok ${typeof step === 'number' ? step : '?'}`
  }

  counts(): WorkloadCounts {
    return {
      steps: this.steps,
      modelCalls: this.modelCalls,
      toolCalls: this.toolCalls,
      chunks: this.chunks,
      finalContextLength: this.finalContextLength,
    }
  }

  /**
   * Check the run did the work: N model calls, N-1 tool executions, N*K chunks,
   * and a final request that carried the whole history (user prompt plus an
   * assistant message and a tool result per tool step, at least 2N-1 items).
   * @returns a description of what is wrong, or undefined when the run is valid.
   */
  problem(): string | undefined {
    const n = this.steps
    const wrong: string[] = []
    if (this.modelCalls !== n) wrong.push(`model calls ${this.modelCalls}, expected ${n}`)
    if (this.toolCalls !== n - 1) wrong.push(`tool executions ${this.toolCalls}, expected ${n - 1}`)
    if (this.chunks !== n * CHUNKS_PER_STEP) wrong.push(`chunks ${this.chunks}, expected ${n * CHUNKS_PER_STEP}`)
    if (this.finalContextLength < 2 * n - 1) {
      wrong.push(`final request carried ${this.finalContextLength} messages, expected >= ${2 * n - 1}`)
    }
    return wrong.length ? wrong.join('; ') : undefined
  }
}
