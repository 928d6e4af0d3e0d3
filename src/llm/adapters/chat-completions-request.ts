import type { JsonValue } from '../../json/lossless.js'
import { systemWithOutput } from '../output-instruction.js'
import type { ContentBlock, GenerateOptions, ImageBlock, Message, StructuredOutputMode } from '../types.js'

/** How one Chat Completions dialect differs from the plain OpenAI shape. */
export interface ChatCompletionsDialect {
  /** Output cap field: classic `max_tokens` or OpenAI's newer `max_completion_tokens`. */
  readonly maxTokensField: 'max_tokens' | 'max_completion_tokens'
  /**
   * Field that carries an assistant turn's reasoning back to the server, or `false` to drop it. DeepSeek needs
   * `reasoning_content` on every assistant turn that made tool calls (400 otherwise), so its dialect sends it on
   * every assistant message.
   */
  readonly reasoningHistoryField: 'reasoning_content' | 'reasoning' | false
  /** Whether to ask for a usage chunk (`stream_options.include_usage`); some older servers reject the field. */
  readonly streamUsage: boolean
  /** Adds provider-specific parameters (DeepSeek thinking mode, OpenAI `reasoning_effort`) to the body. */
  readonly reasoningParams: (request: GenerateOptions) => ReasoningParams
  /** How a model the table says nothing about takes structured output (default `json-schema`; `ModelInfo.structuredOutput` wins). */
  readonly outputMode?: StructuredOutputMode
}

/** Reasoning parameters a dialect adds, and whether sampling parameters still apply. */
export interface ReasoningParams {
  readonly fields: Readonly<Record<string, JsonValue>>
  /** False when the server ignores temperature in this mode (DeepSeek thinking): it is then left out. */
  readonly temperatureApplies: boolean
}

type WireContentPart = { type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } }

type WireMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string | WireContentPart[] }
  | {
      role: 'assistant'
      content: string
      reasoning_content?: string
      reasoning?: string
      tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[]
    }
  | { role: 'tool'; tool_call_id: string; content: string }

/**
 * Builds the JSON body of a streaming Chat Completions request. Unset options are omitted, never sent as
 * `null`; `stream` is always on. With `output`, `outputMode` says how it is asked for: `json-schema` sends
 * `response_format: {type: 'json_schema', json_schema: {name, description?, schema, strict}}`; `json-object` sends
 * `response_format: {type: 'json_object'}` and the schema as an instruction in the system prompt (DeepSeek's JSON
 * mode needs the word "json" and the expected shape in the prompt); `instructions` only the instruction.
 */
export function chatCompletionsBody(request: GenerateOptions, dialect: ChatCompletionsDialect, outputMode: StructuredOutputMode = dialect.outputMode ?? 'json-schema'): Record<string, JsonValue> {
  const reasoning = dialect.reasoningParams(request)
  const output = request.output
  const instructed = output !== undefined && outputMode !== 'json-schema'
  const system = instructed ? systemWithOutput(request) : request.system
  const body: Record<string, JsonValue> = {
    model: request.model,
    messages: chatCompletionsMessages(system === request.system ? request : { ...request, ...(system !== undefined ? { system } : {}) }, dialect) as unknown as JsonValue,
    stream: true,
  }
  if (output !== undefined && outputMode === 'json-schema') {
    const jsonSchema: Record<string, JsonValue> = { name: output.name, schema: output.schema, strict: output.strict }
    if (output.description !== undefined) jsonSchema.description = output.description
    body.response_format = { type: 'json_schema', json_schema: jsonSchema }
  } else if (output !== undefined && outputMode === 'json-object') {
    body.response_format = { type: 'json_object' }
  }
  if (dialect.streamUsage) body.stream_options = { include_usage: true }
  if (request.tools !== undefined && request.tools.length > 0) {
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }))
  }
  if (request.maxTokens !== undefined) body[dialect.maxTokensField] = request.maxTokens
  if (request.temperature !== undefined && reasoning.temperatureApplies) body.temperature = request.temperature
  if (request.stop !== undefined && request.stop.length > 0) body.stop = [...request.stop]
  Object.assign(body, reasoning.fields)
  return body
}

/**
 * Maps our history to Chat Completions messages: the system prompt first; each tool result as its own `tool`
 * message (placed before any text of the same user message, because tool messages must directly follow the
 * assistant turn that called them); assistant `content` is `''` rather than `null` even for a pure tool-call or
 * pure reasoning turn (DeepSeek answers 400 to `null`); tool-call arguments travel as the raw string.
 */
export function chatCompletionsMessages(request: GenerateOptions, dialect: ChatCompletionsDialect): WireMessage[] {
  const out: WireMessage[] = []
  if (request.system !== undefined && request.system !== '') out.push({ role: 'system', content: request.system })
  for (const message of request.messages) {
    if (message.role === 'assistant') out.push(assistantMessage(message, dialect))
    else out.push(...userMessages(message))
  }
  return out
}

function assistantMessage(message: Message, dialect: ChatCompletionsDialect): WireMessage {
  let text = ''
  let reasoning = ''
  const toolCalls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] = []
  for (const block of message.content) {
    if (block.type === 'text') text += block.text
    else if (block.type === 'reasoning') reasoning += block.text
    // An empty argument string is not JSON; servers that validate it reject the whole request.
    else if (block.type === 'tool-call') toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: block.arguments === '' ? '{}' : block.arguments } })
  }
  const wire: Extract<WireMessage, { role: 'assistant' }> = { role: 'assistant', content: text }
  // Sent on every assistant turn, even when empty: DeepSeek requires it back on tool-call turns in thinking
  // mode and ignores it elsewhere, so "always" is the one rule that is never wrong.
  if (dialect.reasoningHistoryField !== false) wire[dialect.reasoningHistoryField] = reasoning
  if (toolCalls.length > 0) wire.tool_calls = toolCalls
  return wire
}

function userMessages(message: Message): WireMessage[] {
  const tools: WireMessage[] = []
  const parts: WireContentPart[] = []
  for (const block of message.content) {
    if (block.type === 'tool-result') {
      tools.push({ role: 'tool', tool_call_id: block.toolCallId, content: toolResultText(block.content) })
      // `tool` messages carry text only, so a result's images that have a URL follow in the user message after.
      for (const inner of block.content) if (inner.type === 'image' && hasUrl(inner)) parts.push({ type: 'text', text: `[image ${shortId(inner)} from tool call ${block.toolCallId}]` }, imagePart(inner))
    } else if (block.type === 'text') {
      parts.push({ type: 'text', text: block.text })
    } else if (block.type === 'image') {
      parts.push(imagePart(block))
    }
    // Other block kinds (plugin-defined) have no Chat Completions form and are skipped.
  }
  if (parts.length === 0) return tools
  const onlyText = parts.every((p) => p.type === 'text')
  const content = onlyText ? parts.map((p) => (p.type === 'text' ? p.text : '')).join('') : parts
  return [...tools, { role: 'user', content }]
}

/** A tool result's text; images inside it become notes (sent after the tool messages, or not at all without a URL). */
function toolResultText(content: readonly ContentBlock[]): string {
  const text = content
    .map((block) => (block.type === 'text' ? block.text : block.type === 'image' ? (hasUrl(block) ? `[image ${shortId(block)} attached below]` : imagePlaceholder(block)) : ''))
    .join('')
  return text === '' ? '(no output)' : text
}

function imagePart(block: ImageBlock): WireContentPart {
  const url = block.attachment.url
  return url !== undefined && url !== '' ? { type: 'image_url', image_url: { url } } : { type: 'text', text: imagePlaceholder(block) }
}

const hasUrl = (block: ImageBlock): boolean => block.attachment.url !== undefined && block.attachment.url !== ''
const shortId = (block: ImageBlock): string => block.attachment.attachmentId.replace(/^sha256:/, '').slice(0, 8)

/** Text standing in for an image we cannot send (no URL). */
export function imagePlaceholder(block: ImageBlock): string {
  return `[image ${shortId(block)} not sent: no URL available]`
}
