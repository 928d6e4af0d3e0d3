import type { JsonValue } from '../json/lossless.js'

/** Visible assistant or user text. */
export interface TextBlock {
  readonly type: 'text'
  readonly text: string
}

/** Model thinking, kept apart from visible text (DeepSeek `reasoning_content`, Anthropic `thinking`). */
export interface ReasoningBlock {
  readonly type: 'reasoning'
  readonly text: string
  /** Provider signature that must travel back with the reasoning (Anthropic extended thinking). */
  readonly signature?: string
}

/** A durable reference to an image; never raw bytes in the log. */
export interface ImageAttachmentRef {
  /** Content address, e.g. `sha256:…`. */
  readonly attachmentId: string
  /** MIME type, e.g. `image/png`. */
  readonly mediaType: string
  /** Size in bytes. */
  readonly bytes: number
  /** Where adapters can fetch it (an `https:` or `data:` URL), when the caller has one. */
  readonly url?: string
  /** Display name. */
  readonly name?: string
}

/** An image in user content. */
export interface ImageBlock {
  readonly type: 'image'
  readonly attachment: ImageAttachmentRef
}

/** A tool call made by the model. `arguments` is the raw JSON text exactly as streamed (never parsed here). */
export interface ToolCallBlock {
  readonly type: 'tool-call'
  readonly id: string
  readonly name: string
  readonly arguments: string
}

/** The result of one tool call, inside a user-role tool-result message. */
export interface ToolResultBlock {
  readonly type: 'tool-result'
  readonly toolCallId: string
  readonly content: readonly ContentBlock[]
  readonly isError?: boolean
}

/** Every content block kind. Consumers ignore kinds they do not know. */
export type ContentBlock = TextBlock | ReasoningBlock | ImageBlock | ToolCallBlock | ToolResultBlock

/** The `type` of a content block. */
export type BlockType = ContentBlock['type']

/** Who produced a message. */
export type MessageSource =
  | { readonly kind: 'user' }
  | {
      readonly kind: 'plugin'
      readonly plugin: string
      readonly form?: 'instructions' | 'catalog' | 'snapshot' | 'notice' | 'relay' | 'recall'
      readonly sections?: readonly { readonly name: string; readonly text: string }[]
      readonly summary?: string
    }
  | ModelSource
  | { readonly kind: 'tool'; readonly callId: string }

/** Source of an assistant message: the route that produced it and adapter-private replay state. */
export interface ModelSource {
  readonly kind: 'model'
  readonly provider: string
  readonly model: string
  readonly replayState?: JsonValue
}

/** A model-visible message. Immutable: messages are deep-frozen at creation and keep their id everywhere. */
export interface Message {
  readonly id: string
  readonly role: 'user' | 'assistant'
  readonly content: readonly ContentBlock[]
  readonly source: MessageSource
}

/** A user-role message (prompts, steering, runtime context, tool results). */
export interface UserMessage extends Message {
  readonly role: 'user'
}

/** An assistant message; its source is always the model route. */
export interface AssistantMessage extends Message {
  readonly role: 'assistant'
  readonly source: ModelSource
}

/** A tool result: a user-role message with exactly one tool-result block and source `{kind:'tool', callId}`. */
export interface ToolResultMessage extends UserMessage {
  readonly source: { readonly kind: 'tool'; readonly callId: string }
  readonly content: readonly [ToolResultBlock]
}

/** Token counts in non-overlapping buckets: billed input = input + cacheRead + cacheWrite. */
export interface TokenUsage {
  /** Uncached input tokens only. */
  readonly inputTokens: number
  /** Output tokens, reasoning included. */
  readonly outputTokens: number
  /** Input tokens served from the provider's prompt cache. */
  readonly cacheReadTokens?: number
  /** Input tokens written to the provider's prompt cache. */
  readonly cacheWriteTokens?: number
  /** Part of `outputTokens` spent on reasoning (never add it twice). */
  readonly reasoningTokens?: number
}

/** A structured, serialisable provider or runtime failure. */
export interface LlmFailure {
  readonly message: string
  readonly code: string
  readonly status?: number
  readonly providerRetryAfterMs?: number
  readonly requestId?: string
}

/** Why a stream finished. `error`/`aborted` are in-band failures. */
export type FinishReason =
  | { readonly kind: 'stop' }
  | { readonly kind: 'tool-calls' }
  | { readonly kind: 'max-tokens' }
  | { readonly kind: 'error'; readonly failure: LlmFailure }
  | { readonly kind: 'aborted'; readonly failure: LlmFailure }

/** One streamed chunk. Grammar: deltas into an open block of their type, one usage at most, one finish last. */
export type StreamChunk =
  | { readonly type: 'block-start'; readonly index: number; readonly blockType: BlockType }
  | { readonly type: 'text-delta'; readonly index: number; readonly text: string }
  | { readonly type: 'reasoning-delta'; readonly index: number; readonly text: string }
  | {
      readonly type: 'tool-call-delta'
      readonly index: number
      readonly id: string
      readonly name?: string
      readonly argumentsDelta: string
    }
  | { readonly type: 'block-end'; readonly index: number; readonly block: ContentBlock }
  | { readonly type: 'usage'; readonly usage: TokenUsage }
  | { readonly type: 'finish'; readonly reason: FinishReason; readonly replayState?: JsonValue }

/** A tool as the model sees it. */
export interface ToolSchema {
  readonly name: string
  readonly description: string
  readonly parameters: JsonValue
}

/** The per-request route and sampling configuration that `request/header` logs. */
export interface LlmCallConfig {
  readonly provider: string
  readonly model: string
  readonly reasoningEffort?: string
  readonly temperature?: number
  readonly maxTokens?: number
  readonly stop?: readonly string[]
  /**
   * Structured output: the reply's final text must be one JSON value valid under `output.schema`. Set by a run
   * with `output` for the requests of its own turn only; each adapter asks for it in its provider's native form
   * (docs/adapters.md, "Structured output").
   */
  readonly output?: OutputSpec
}

/** What a structured-output request asks for (logged in the request header, so the request can be rebuilt). */
export interface OutputSpec {
  /** Name of the answer (OpenAI's `json_schema.name`, Anthropic's answer tool): `[a-zA-Z0-9_-]{1,64}`. */
  readonly name: string
  /** What the answer is, for the model. */
  readonly description?: string
  /** The JSON Schema the answer must be valid under. */
  readonly schema: JsonValue
  /** Whether the schema meets OpenAI's strict-mode rules (every object closed, every property required). */
  readonly strict: boolean
}

/**
 * How a model takes structured output on a Chat Completions route: `json-schema` (`response_format` with the
 * schema), `json-object` (`response_format: {type: 'json_object'}` plus the schema as an instruction) or
 * `instructions` (the schema as an instruction only).
 */
export type StructuredOutputMode = 'json-schema' | 'json-object' | 'instructions'

/** Which fields of a prepared config an adapter filled in (rather than the caller). */
export interface AdapterDefaults {
  readonly reasoningEffort?: true
  readonly maxTokens?: true
}

/** A request as adapters and `llm/stream` listeners receive it. Loop-built requests are deep-frozen. */
export interface GenerateOptions extends LlmCallConfig {
  readonly messages: readonly Message[]
  readonly system?: string
  readonly tools?: readonly ToolSchema[]
  readonly sessionId?: string
  readonly signal?: AbortSignal
  /**
   * Who built the request. `'loop'`: the agent loop, from the log — such a request must be rebuildable from the
   * session's events (the invariant plugin checks exactly these). Absent: any other caller (a plugin's own call
   * such as compaction's summary, a test). A listener that passes on a changed copy should leave `origin` out
   * unless the copy is still what the log yields.
   */
  readonly origin?: 'loop'
}

/**
 * A model's published prices per million tokens, dated. Base prices are the ones that apply at all hours
 * unless `offPeak` says otherwise (DeepSeek: peak prices, with half price outside the peak windows).
 */
export interface ModelPricing {
  readonly currency: 'USD' | 'CNY'
  /** Uncached (cache-miss) input. */
  readonly inputPerMTok: number
  /** Input read from the provider's prompt cache; absent = priced as uncached input. */
  readonly cachedInputPerMTok?: number
  readonly outputPerMTok: number
  /** When these prices were checked against the provider's price page (`YYYY-MM-DD`). */
  readonly asOf: string
  /** Cheaper hours: outside the peak windows every price is multiplied by `share`. */
  readonly offPeak?: {
    /** Share of the base price paid off-peak (0.5 = half price). */
    readonly share: number
    /** Peak windows as `HH:MM-HH:MM` in UTC (start inclusive, end exclusive). */
    readonly peakHoursUtc: readonly string[]
    /** UTC weekdays (0 = Sunday) with peak windows; absent = every day. */
    readonly peakWeekdaysUtc?: readonly number[]
  }
}

/** What an adapter knows about one model. Absent fields mean unknown. */
export interface ModelInfo {
  /** Context window in tokens. */
  readonly contextWindow?: number
  /** `maxTokens` used when the caller sets none. */
  readonly defaultMaxTokens?: number
  /** Largest `maxTokens` the model accepts. */
  readonly maxOutputTokens?: number
  /** Reasoning efforts the model accepts; absent = the model takes no effort setting. */
  readonly reasoningEfforts?: readonly string[]
  /** Effort used when the caller sets none. */
  readonly defaultReasoningEffort?: string
  /** Published prices (for cost figures derived from logged usage). */
  readonly pricing?: ModelPricing
  /** How the model takes structured output (Chat Completions routes; default: the adapter's own mode). */
  readonly structuredOutput?: StructuredOutputMode
}

/** How the retry plugin should treat failures of one adapter's requests. */
export interface RetryPolicy {
  /** Retries after the first attempt. */
  readonly maxRetries: number
  /** Failure codes worth retrying. */
  readonly retryableCodes: readonly string[]
  readonly initialDelayMs: number
  readonly maxDelayMs: number
  /** 0..1: share of each delay drawn at random. */
  readonly jitterRatio: number
}

/**
 * A model adapter: one provider route. Only `stream` is required. An adapter reports failures either by
 * throwing or with an in-band `finish {error|aborted}`; the registry turns throws into the latter.
 */
export interface LlmAdapter {
  /** The route name requests select it by (`deepseek`, `anthropic`, `scripted`, …). */
  readonly provider: string
  /** Exact-model facts, used to materialise defaults. Unknown models answer `undefined` (never an error). */
  resolveModel?(model: string): ModelInfo | undefined
  /** Retry policy handed to `agent/request-error` listeners for this route. */
  readonly retryPolicy?: RetryPolicy
  /** Streams one provider attempt. Must honour `request.signal`. */
  stream(request: GenerateOptions): AsyncIterable<StreamChunk>
}
