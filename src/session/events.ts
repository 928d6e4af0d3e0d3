import type { JsonValue } from '../json/lossless.js'
import type { AssistantMessage, LlmCallConfig, AdapterDefaults, LlmFailure, StreamChunk, ToolResultMessage, ToolSchema, TokenUsage, UserMessage } from '../llm/types.js'

/** How a surface event changes the model-visible history. */
export type SurfaceOp = 'append' | { readonly op: 'replace'; readonly start: number; readonly end: number }

/**
 * What every logged event carries, whatever its type. `seq` is its index in the log, and its only identity.
 * Frozen once logged.
 */
export interface EventEnvelope<T extends string, D> {
  readonly type: T
  readonly seq: number
  /** `Date.now()` at append. */
  readonly time: number
  readonly data: D
  /** Present exactly on the three surface types. */
  readonly surfaceOp?: SurfaceOp
  /** Provenance: the seqs this surface event was derived from. */
  readonly sourceEventSeqs?: readonly number[]
  /** A reader that does not know this type may skip it. */
  readonly ignorable?: true
}

/**
 * A data shape as the log holds it: the same fields, written so that it is also a {@link JsonValue} (arrays
 * mutable in the type, interfaces as plain object types). This is what keeps `const d: JsonValue = event.data`
 * compiling for every member of {@link SessionEvent}; the values themselves are frozen.
 */
export type LoggedData<T> = T extends JsonValue
  ? T
  : T extends readonly (infer E)[]
    ? LoggedData<E>[]
    : T extends object
      ? { readonly [K in keyof T]: LoggedData<T[K]> }
      : T

/**
 * The data shape of every event type ledgerloop knows: the core types ({@link CoreEventData}) and the log-only
 * types of its own plugins, each declared by its plugin. A plugin of yours declares its own types the same way,
 * so that `event.type === 'my/type'` narrows `event.data` too:
 *
 * @example
 * ```ts
 * declare module 'ledgerloop' {
 *   interface SessionEventDataMap {
 *     'deploy/started': { readonly target: string }
 *   }
 * }
 * ```
 */
export interface SessionEventDataMap extends CoreEventData {
  /** A session's title (log-only). */
  'session/title': { readonly title: string }
  /** The same work was interrupted `interruptions.length` times in a row: no continuation until a forced resume. */
  'session/quarantined': { readonly reason: string; readonly turn: number; readonly interruptions: readonly number[] }
  /** A forced resume lifted the quarantine (`by: 'force'`); interruptions count afresh. */
  'session/quarantine-lifted': { readonly reason: string; readonly by: 'force' }
}

/** An event of a type in {@link SessionEventDataMap}, its `data` typed by that map. */
export type KnownSessionEvent = { [K in keyof SessionEventDataMap & string]: EventEnvelope<K, LoggedData<SessionEventDataMap[K]>> }[keyof SessionEventDataMap & string]

/**
 * An event of any other type (a plugin's that is not declared in {@link SessionEventDataMap}, or an `ignorable`
 * one written by a newer version). Its `data` is typed `never` on purpose: a `type: string` member can never
 * be told apart from `'turn/end'` by `===`, so a readable `data` here would widen every narrowed core type back
 * to `JsonValue`. `never` adds nothing to the narrowed union; read such data as `const d: JsonValue = event.data`.
 */
export interface OtherSessionEvent extends EventEnvelope<string, never> {}

/**
 * One durable log entry: a union discriminated by `type`. `event.type === 'turn/end'` narrows `event.data` to
 * `{turn, reason}`; every member's `data` is assignable to {@link JsonValue}.
 *
 * @example
 * ```ts
 * harness.hooks.on('session/event', ({ event }) => {
 *   if (event.type === 'turn/end') console.log(event.data.turn, event.data.reason.kind)
 *   if (event.type === 'tool/call') console.log(event.data.name, event.data.arguments)
 * })
 * ```
 */
export type SessionEvent = KnownSessionEvent | OtherSessionEvent

/**
 * An event as a caller or a store hands one in, before it is checked: any type, any JSON data. Functions that
 * validate a log take these (`new Session({ seed })`, `verifySessionLog`), so a hand-built or freshly parsed log
 * needs no cast; every {@link SessionEvent} is one.
 */
export type EventRecord = EventEnvelope<string, JsonValue>

/** The member of {@link SessionEvent} for one known type, e.g. `SessionEventOf<'turn/end'>`. */
export type SessionEventOf<T extends keyof SessionEventDataMap & string> = Extract<KnownSessionEvent, { readonly type: T }>

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
    /** With `interrupted`: the note the fold appends to the cut-off answer in later requests (absent in older logs). */
    readonly note?: string
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
    /** The submission key the input was sent with (`followup(input, { key })`): a second send with it is ignored. */
    readonly key?: string
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
  'session/quarantined',
  'session/quarantine-lifted',
  'checkpoint/files',
  'checkpoint/restored',
])

/** Reads an event's data as the shape of its core type (no runtime check: the log validated it). */
export function dataOf<T extends CoreEventType>(event: SessionEvent, _type: T): CoreEventData[T] {
  return event.data as unknown as CoreEventData[T]
}
