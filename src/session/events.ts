import type { JsonValue } from '../json/lossless.js'
import type { AssistantMessage, LlmCallConfig, AdapterDefaults, LlmFailure, StreamChunk, ToolResultMessage, ToolSchema, TokenUsage, UserMessage } from '../llm/types.js'

/** How a surface event changes the model-visible history. */
export type SurfaceOp = 'append' | { readonly op: 'replace'; readonly start: number; readonly end: number }

/** One durable log entry. `seq` is its index in the log, and its only identity. Frozen once logged. */
export interface SessionEvent {
  readonly type: string
  readonly seq: number
  /** `Date.now()` at append. */
  readonly time: number
  readonly data: JsonValue
  /** Present exactly on the three surface types. */
  readonly surfaceOp?: SurfaceOp
  /** Provenance: the seqs this surface event was derived from. */
  readonly sourceEventSeqs?: readonly number[]
  /** A reader that does not know this type may skip it. */
  readonly ignorable?: true
}

/** Why a cancel happened; the first cause of an activity wins. */
export type CancelCause =
  | { readonly kind: 'user' }
  | { readonly kind: 'parent' }
  | { readonly kind: 'hook'; readonly reason: string }
  | { readonly kind: 'disposed' }

/** Why a turn ended (`interrupted` is written only by crash repair). */
export type TurnEndReason =
  | { readonly kind: 'completed' }
  | { readonly kind: 'max-tokens' }
  | { readonly kind: 'blocked' }
  | { readonly kind: 'aborted'; readonly reason: CancelCause }
  | { readonly kind: 'error'; readonly error: LlmFailure }
  | { readonly kind: 'interrupted' }

/** The canonical request header: everything besides messages that a request is built from. */
export interface RequestHeader {
  readonly config: LlmCallConfig
  /** Present only when at least one marker is `true`. */
  readonly adapterDefaults?: AdapterDefaults
  /** Omitted when empty. */
  readonly system?: string
  /** Omitted when empty. */
  readonly tools?: readonly ToolSchema[]
}

/** `data` of each core event type. */
export interface CoreEventData {
  /** `continues`: the turn a crash interrupted that this continuation turn carries on. */
  'turn/start': { readonly turn: number; readonly continues?: number }
  'turn/end': { readonly turn: number; readonly reason: TurnEndReason }
  'step/start': { readonly turn: number; readonly step: number }
  'step/end': { readonly turn: number; readonly step: number }
  'user/message': UserMessage
  'assistant/chunk': { readonly turn: number; readonly step: number; readonly chunk: StreamChunk }
  'assistant/message': {
    readonly turn: number
    readonly step: number
    readonly message: AssistantMessage
    readonly usage?: TokenUsage
    readonly interrupted?: true
  }
  /** `of`: on a re-run after a crash (replay policy `safe` or `keyed`), the seq of the original `tool/call`. */
  'tool/call': {
    readonly turn: number
    readonly step: number
    readonly callId: string
    readonly name: string
    readonly arguments: string
    readonly of?: number
  }
  'tool/result': {
    readonly turn: number
    readonly step: number
    readonly message: ToolResultMessage
    readonly error?: { readonly name: string; readonly code: string }
    readonly meta?: JsonValue
  }
  'request/header': { readonly header: RequestHeader; readonly reason: 'initial' | 'resume' | 'change' }
  'request/context': { readonly provider: string; readonly model: string; readonly contextWindow?: number }
  'agent/inbox/spliced': {
    readonly target: 'next-turn' | 'next-step'
    readonly start: number
    readonly removedCount?: number
    readonly inserted: readonly UserMessage[]
    readonly outcome?: 'canceled'
    /** Set by crash repair: the seq of the splice whose claimed input never reached its `user/message`. */
    readonly restores?: number
  }
  'session/end-seed': Record<string, never>
}

/** A core event type name. */
export type CoreEventType = keyof CoreEventData

/** The three types that feed the model-visible history. */
export const SURFACE_TYPES: ReadonlySet<string> = new Set(['user/message', 'assistant/message', 'tool/result'])

/** Core types plus the log-only types of ledgerloop's own plugins: a loader accepts these without `ignorable`. */
export const KNOWN_EVENT_TYPES: ReadonlySet<string> = new Set([
  'turn/start',
  'turn/end',
  'step/start',
  'step/end',
  'user/message',
  'assistant/chunk',
  'assistant/message',
  'tool/call',
  'tool/result',
  'request/header',
  'request/context',
  'agent/inbox/spliced',
  'session/end-seed',
  'session/title',
  'todo/write',
  'llm/retry',
  'permission/decision',
  'budget/exceeded',
  'compaction/start',
  'compaction/request',
  'compaction/summary',
  'compaction/prune',
  'compaction/end',
  'checkpoint/files',
  'checkpoint/restored',
])

/** Reads an event's data as the shape of its core type (no runtime check: the log validated it). */
export function dataOf<T extends CoreEventType>(event: SessionEvent, _type: T): CoreEventData[T] {
  return event.data as unknown as CoreEventData[T]
}
